package instance

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	v1 "github.com/cgpu-dev/cgpu/daemon/api/v1"
	"github.com/cgpu-dev/cgpu/daemon/internal/state"
)

func TestCreateValidation(t *testing.T) {
	w := newWorld(t, 2, 16*gib)
	m := w.manager()
	ctx := context.Background()
	w.cgroup("c1")
	if err := w.kern.SetUsage(0, 0, 0); err == nil {
		t.Fatal("fake has an instance before any create")
	}
	base := v1.CreateRequest{ContainerID: "0123456789abcdef", Cgroup: "/kubepods/c1", Memory: gib}
	tests := []struct {
		name string
		edit func(*v1.CreateRequest)
		kind error
		msg  string
	}{
		{"bad name", func(r *v1.CreateRequest) { r.Name = "a/b" }, ErrInvalid, "character"},
		{"name too long", func(r *v1.CreateRequest) { r.Name = strings.Repeat("a", 49) }, ErrInvalid, "1 to 48 characters"},
		{"dot name", func(r *v1.CreateRequest) { r.Name = ".." }, ErrInvalid, "reserved"},
		{"no container nor name", func(r *v1.CreateRequest) { r.ContainerID = "" }, ErrInvalid, "container id or a name"},
		{"container id with space", func(r *v1.CreateRequest) { r.ContainerID = "a b" }, ErrInvalid, "space"},
		{"no cgroup", func(r *v1.CreateRequest) { r.Cgroup = "" }, ErrInvalid, "cgroup is required"},
		{"zero memory", func(r *v1.CreateRequest) { r.Memory = 0 }, ErrInvalid, "memory: 0 bytes"},
		{"memory above every card", func(r *v1.CreateRequest) { r.Memory = 17 * gib }, ErrInvalid, "no GPU has 17 GiB in all (the largest has 16 GiB)"},
		{"memory above the named card", func(r *v1.CreateRequest) { r.Memory = 17 * gib; r.GPUs = []string{"1"} }, ErrInvalid, "GPU 1 has 16 GiB in all, less than the 17 GiB asked"},
		{"absurd memory", func(r *v1.CreateRequest) { r.Memory = 1 << 62 }, ErrInvalid, "above the most a slice takes"},
		{"weight above max", func(r *v1.CreateRequest) { r.Weight = 21 }, ErrInvalid, "weight 21 is outside 1..20"},
		{"bad placement", func(r *v1.CreateRequest) { r.Placement = "random" }, ErrInvalid, "placement"},
		{"no such GPU index", func(r *v1.CreateRequest) { r.GPUs = []string{"7"} }, ErrInvalid, "no GPU 7"},
		{"no such GPU uuid", func(r *v1.CreateRequest) { r.GPUs = []string{"GPU-nope"} }, ErrInvalid, "no GPU \"GPU-nope\""},
		{"GPU twice", func(r *v1.CreateRequest) { r.GPUs = []string{"0", w.inv.GPUs[0].UUID} }, ErrInvalid, "named twice"},
		{"missing cgroup", func(r *v1.CreateRequest) { r.Cgroup = "/kubepods/none" }, ErrInvalid, "no such cgroup"},
		{"escaping cgroup", func(r *v1.CreateRequest) { r.Cgroup = "/kubepods/../../etc" }, ErrInvalid, "climbs out"},
		{"root cgroup", func(r *v1.CreateRequest) { r.Cgroup = "/" }, ErrInvalid, "root cgroup"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req := base
			tc.edit(&req)
			_, err := m.CreateInstance(ctx, req)
			if !isKind(err, tc.kind) {
				t.Fatalf("err = %v, want %v", err, tc.kind)
			}
			if !strings.HasPrefix(err.Error(), v1.ErrorPrefixCreate) || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("message %q: want the create prefix and %q", err, tc.msg)
			}
		})
	}
	if n := len(w.kernelInstances()); n != 0 {
		t.Fatalf("refused creates left %d kernel instances", n)
	}
	if n := len(w.records()); n != 0 {
		t.Fatalf("refused creates left %d records", n)
	}
	w.checkClean(m)
}

func TestCreateAndDestroy(t *testing.T) {
	w := newWorld(t, 2, 16*gib)
	m := w.manager()
	ctx := context.Background()
	rel := w.cgroup("c1")
	in, err := m.CreateInstance(ctx, v1.CreateRequest{ContainerID: "0123456789abcdef0123", Cgroup: w.root + rel, Memory: 2 * gib, Weight: 3, GPUs: []string{"1", w.inv.GPUs[0].UUID}})
	if err != nil {
		t.Fatal(err)
	}
	if in.Name != "0123456789ab" || in.State != v1.StateReady || in.Cgroup != rel || in.Memory != 2*gib || in.Weight != 3 || len(in.GPUs) != 2 {
		t.Fatalf("created %+v", in)
	}
	if in.GPUs[0].Index != 1 || in.GPUs[1].Index != 0 || in.GPUs[0].KernelID == 0 {
		t.Fatalf("GPUs %+v", in.GPUs)
	}
	kin := w.kernelInstances()
	if _, ok := kin["0123456789ab.1"]; !ok || len(kin) != 2 {
		t.Fatalf("kernel instances %v", kin)
	}
	recs := w.checkClean(m)
	if len(recs) != 1 || recs[0].CgroupID != in.CgroupID || recs[0].ContainerID != "0123456789abcdef0123" {
		t.Fatalf("records %+v", recs)
	}
	if p := w.filter.paths[in.CgroupID]; p != w.root+rel {
		t.Fatalf("filter applied to %q, want %q", p, w.root+rel)
	}
	// A second instance on the same cgroup, or with the same name, is refused.
	if _, err := m.CreateInstance(ctx, v1.CreateRequest{Name: "other", Cgroup: rel, Memory: gib}); !isKind(err, ErrConflict) {
		t.Fatalf("second create on the cgroup: %v", err)
	}
	w.cgroup("c2")
	if _, err := m.CreateInstance(ctx, v1.CreateRequest{Name: in.Name, Cgroup: "/kubepods/c2", Memory: gib}); !isKind(err, ErrConflict) {
		t.Fatalf("create with a taken name: %v", err)
	}
	// The same container id prefix gets a distinct default name.
	in2, err := m.CreateInstance(ctx, v1.CreateRequest{ContainerID: "0123456789abffff", Cgroup: "/kubepods/c2", Memory: gib})
	if err != nil || in2.Name != "0123456789ab-2" {
		t.Fatalf("second default name: %+v, %v", in2, err)
	}
	if err := m.DestroyInstance(ctx, in.Name, false); err != nil {
		t.Fatal(err)
	}
	if err := m.DestroyInstance(ctx, in.Name, false); !isKind(err, ErrNotFound) {
		t.Fatalf("second destroy: %v", err)
	}
	if err := m.DestroyInstance(ctx, in2.Name, false); err != nil {
		t.Fatal(err)
	}
	if recs := w.checkClean(m); len(recs) != 0 {
		t.Fatalf("records left: %+v", recs)
	}
}

func TestCapMessage(t *testing.T) {
	w := newWorld(t, 1, 80*gib)
	m := w.manager()
	ctx := context.Background()
	for i := range 20 {
		w.cgroup(fmt.Sprint("c", i))
		if _, err := m.CreateInstance(ctx, v1.CreateRequest{ContainerID: fmt.Sprint("c", i), Cgroup: fmt.Sprint("/kubepods/c", i), Memory: gib}); err != nil {
			t.Fatalf("create %d: %v", i, err)
		}
	}
	w.cgroup("c20")
	calls := w.kern.Calls()
	_, err := m.CreateInstance(ctx, v1.CreateRequest{ContainerID: "c20", Cgroup: "/kubepods/c20", Memory: gib})
	const want = "Error occurs when creating cGPU instance: GPU 0 has 20 instances, the most a GPU takes"
	if !isKind(err, ErrNoSpace) || err.Error() != want {
		t.Fatalf("21st create: %v\nwant %s", err, want)
	}
	if w.kern.Calls() != calls {
		t.Fatal("the 21st create reached the kernel")
	}
	w.checkClean(m)
}

func TestMemoryAndWeightAccounting(t *testing.T) {
	w := newWorld(t, 1, 10*gib)
	m := w.manager()
	ctx := context.Background()
	for _, c := range []string{"a", "b", "c", "d"} {
		w.cgroup(c)
	}
	if _, err := m.CreateInstance(ctx, v1.CreateRequest{Name: "a", Cgroup: "/kubepods/a", Memory: 6 * gib, Weight: 15}); err != nil {
		t.Fatal(err)
	}
	_, err := m.CreateInstance(ctx, v1.CreateRequest{Name: "b", Cgroup: "/kubepods/b", Memory: 5 * gib})
	if !isKind(err, ErrNoSpace) || !strings.Contains(err.Error(), "GPU 0 has 4 GiB unallocated, less than the 5 GiB asked") {
		t.Fatalf("over-allocation: %v", err)
	}
	_, err = m.CreateInstance(ctx, v1.CreateRequest{Name: "b", Cgroup: "/kubepods/b", Memory: gib, Weight: 6})
	if !isKind(err, ErrNoSpace) || !strings.Contains(err.Error(), "weights would sum to 21, above 20") {
		t.Fatalf("over-weight: %v", err)
	}
	if _, err := m.CreateInstance(ctx, v1.CreateRequest{Name: "b", Cgroup: "/kubepods/b", Memory: 4 * gib, Weight: 5}); err != nil {
		t.Fatalf("exact fit: %v", err)
	}
	gpus, err := m.GPUs(ctx)
	if err != nil || len(gpus) != 1 || gpus[0].MemoryAllocated != 10*gib || gpus[0].Instances != 2 || gpus[0].MaxInstances != 20 {
		t.Fatalf("GPUs = %+v, %v", gpus, err)
	}
	if err := m.DestroyInstance(ctx, "a", false); err != nil {
		t.Fatal(err)
	}
	if _, err := m.CreateInstance(ctx, v1.CreateRequest{Name: "c", Cgroup: "/kubepods/c", Memory: 6 * gib, Weight: 15}); err != nil {
		t.Fatalf("create into the freed room: %v", err)
	}
	w.checkClean(m)
}

func TestPlacement(t *testing.T) {
	for _, tc := range []struct {
		policy  string
		def     string // the Manager's default
		wantGPU []int
	}{
		{"", v1.PlacementBinpack, []int{0, 0, 0, 1}}, // 3x3 GiB fill GPU 0 (10 GiB), the 4th spills
		{v1.PlacementBinpack, v1.PlacementSpread, []int{0, 0, 0, 1}},
		{v1.PlacementSpread, v1.PlacementBinpack, []int{0, 1, 2, 0}},
		{"", v1.PlacementSpread, []int{0, 1, 2, 0}},
	} {
		t.Run(tc.policy+"/"+tc.def, func(t *testing.T) {
			w := newWorld(t, 3, 10*gib)
			m := w.manager(WithPlacement(tc.def))
			for i, want := range tc.wantGPU {
				rel := w.cgroup(fmt.Sprint("c", i))
				in, err := m.CreateInstance(context.Background(), v1.CreateRequest{ContainerID: fmt.Sprint("c", i), Cgroup: rel, Memory: 3 * gib, Placement: tc.policy})
				if err != nil {
					t.Fatal(err)
				}
				if in.GPUs[0].Index != want {
					t.Fatalf("create %d went to GPU %d, want %d", i, in.GPUs[0].Index, want)
				}
			}
			w.checkClean(m)
		})
	}
	w := newWorld(t, 2, 4*gib)
	m := w.manager()
	for i := range 2 {
		w.cgroup(fmt.Sprint("c", i))
		if _, err := m.CreateInstance(context.Background(), v1.CreateRequest{ContainerID: fmt.Sprint("c", i), Cgroup: fmt.Sprint("/kubepods/c", i), Memory: 3 * gib}); err != nil {
			t.Fatal(err)
		}
	}
	w.cgroup("c2")
	_, err := m.CreateInstance(context.Background(), v1.CreateRequest{ContainerID: "c2", Cgroup: "/kubepods/c2", Memory: 3 * gib})
	if !isKind(err, ErrNoSpace) || !strings.HasPrefix(err.Error(), v1.ErrorPrefixCreate+"no GPU has room for 3 GiB") {
		t.Fatalf("create with no room anywhere: %v", err)
	}
	if _, err := New(w.opts(WithPlacement("fifo"))...); err == nil {
		t.Fatal("New accepted placement fifo")
	}
}

// TestConcurrentCreatesExactCap: 64 creates race for one GPU; exactly the
// cap succeed and the rest are refused for space, with the kernel, the
// store and the accounting agreeing.
func TestConcurrentCreatesExactCap(t *testing.T) {
	w := newWorld(t, 1, 80*gib)
	m := w.manager()
	const n = 64
	for i := range n {
		w.cgroup(fmt.Sprint("c", i))
	}
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = m.CreateInstance(context.Background(), v1.CreateRequest{ContainerID: fmt.Sprintf("ctr%03d", i), Cgroup: fmt.Sprint("/kubepods/c", i), Memory: gib})
		}()
	}
	wg.Wait()
	ok := 0
	for i, err := range errs {
		switch {
		case err == nil:
			ok++
		case !isKind(err, ErrNoSpace):
			t.Errorf("create %d: %v", i, err)
		}
	}
	if ok != 20 {
		t.Fatalf("%d creates succeeded, want exactly 20", ok)
	}
	if recs := w.checkClean(m); len(recs) != 20 {
		t.Fatalf("%d records", len(recs))
	}
	if len(w.kernelInstances()) != 20 {
		t.Fatal("kernel instance count")
	}
}

// TestConcurrentCreatesShareCommits: creates on different cgroups do not
// wait for each other's fsync.
func TestConcurrentCreatesShareCommits(t *testing.T) {
	w := newWorld(t, 4, 80*gib)
	m := w.manager()
	const n = 64
	for i := range n {
		w.cgroup(fmt.Sprint("c", i))
	}
	c0, w0 := w.store.Counts()
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := m.CreateInstance(context.Background(), v1.CreateRequest{ContainerID: fmt.Sprintf("ctr%03d", i), Cgroup: fmt.Sprint("/kubepods/c", i), Memory: gib, Placement: v1.PlacementSpread}); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	w.store.Sync(context.Background())
	c1, w1 := w.store.Counts()
	t.Logf("%d writes in %d commits", w1-w0, c1-c0)
	if w1-w0 < 2*n || c1-c0 >= w1-w0 {
		t.Fatalf("%d writes in %d commits: no grouping", w1-w0, c1-c0)
	}
	if recs := w.checkClean(m); len(recs) != n {
		t.Fatalf("%d records", len(recs))
	}
	for _, r := range w.records() {
		if r.State != state.StateReady {
			t.Fatalf("record %+v", r)
		}
	}
}
