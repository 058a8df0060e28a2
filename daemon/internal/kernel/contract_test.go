package kernel

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"golang.org/x/sys/unix"
)

// The contract: one table of cases that every Client must pass, run against
// Fake here (TestContractFake) and against the real cgpu.ko in the VM
// (TestContractDevice, contract_vm_test.go). The module is the reference:
// a case is written from kmod/include/uapi/cgpu.h and what cgpu.ko does, and
// the Fake follows it.

// contractEnv is what one case gets: a Client with no instances, and the
// means to play the world around the module.
type contractEnv struct {
	k Client
	// cgroup makes a live cgroup v2 and returns its id; it goes when the
	// case ends.
	cgroup func() uint64
	// removeCgroup removes a cgroup made by cgroup now.
	removeCgroup func(cg uint64)
	// noCgroup is an id that names no cgroup.
	noCgroup uint64
	// hold makes a process in cgroup cg, which is attached to instance id
	// on GPU 0, hold at least size bytes, and returns once the instance's
	// stats show them. release ends the process and returns once the
	// instance holds nothing (or is gone); it also runs when the case ends.
	hold func(id, cg, size uint64) (release func())
	// setGPUMaxInst is a write of /proc/cgpu_km/<gpu>/max_inst; its error
	// matches the errno (errors.Is).
	setGPUMaxInst func(gpu, n uint32) error
	// unusedGPU is a GPU minor no instance was ever made on.
	unusedGPU func() uint32
}

type contractCase struct {
	name string
	run  func(t *testing.T, e *contractEnv)
}

// runContract runs every case, each on a fresh environment.
func runContract(t *testing.T, newEnv func(t *testing.T) *contractEnv) {
	for _, c := range contractCases() {
		t.Run(c.name, func(t *testing.T) {
			c.run(t, newEnv(t))
		})
	}
}

var bg = context.Background()

// isErr checks that err matches both sentinel and errno, as every refusal
// of the module does.
func isErr(t *testing.T, what string, err, sentinel error, errno unix.Errno) {
	t.Helper()
	if !errors.Is(err, sentinel) || !errors.Is(err, errno) {
		t.Errorf("%s: got %v, want %v (%s)", what, err, sentinel, unix.ErrnoName(errno))
	}
}

func noErr(t *testing.T, what string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func create(t *testing.T, k Client, name string, gpu uint32, limit uint64, weight uint32) uint64 {
	t.Helper()
	id, err := k.Create(bg, CreateRequest{Name: name, GPU: gpu, MemLimit: limit, Weight: weight})
	if err != nil {
		t.Fatalf("create %q on GPU %d (limit %d, weight %d): %v", name, gpu, limit, weight, err)
	}
	if id == 0 {
		t.Fatalf("create %q: id 0", name)
	}
	return id
}

func stats(t *testing.T, k Client, id uint64) Stats {
	t.Helper()
	st, err := k.Stats(bg, id)
	if err != nil {
		t.Fatalf("stats of %d: %v", id, err)
	}
	return st
}

func list(t *testing.T, k Client) []uint64 {
	t.Helper()
	ids, err := k.List(bg)
	if err != nil {
		t.Fatalf("list: %v", err)
	}
	return ids
}

func wantList(t *testing.T, k Client, want ...uint64) {
	t.Helper()
	if got := list(t, k); !slices.Equal(got, want) {
		t.Errorf("list %v, want %v", got, want)
	}
}

// fill makes n instances of weight 1 on gpu, named prefix0, prefix1, ...
func fill(t *testing.T, k Client, prefix string, gpu uint32, n int) []uint64 {
	t.Helper()
	var ids []uint64
	for i := range n {
		ids = append(ids, create(t, k, fmt.Sprintf("%s%d", prefix, i), gpu, mib, 0))
	}
	return ids
}

const mib = uint64(1) << 20

// createEchoes: a created instance's stats are its request (weight 0
// read as 1) and zero counters.
func createEchoes(req CreateRequest) func(t *testing.T, e *contractEnv) {
	return func(t *testing.T, e *contractEnv) {
		id, err := e.k.Create(bg, req)
		noErr(t, "create", err)
		w := req.Weight
		if w == 0 {
			w = 1
		}
		want := Stats{ID: id, Name: req.Name, GPU: req.GPU, Weight: w, MemLimit: req.MemLimit}
		if st := stats(t, e.k, id); st != want {
			t.Errorf("stats\n got %+v\nwant %+v", st, want)
		}
		wantList(t, e.k, id)
	}
}

// createRefused: req is EINVAL and makes nothing; when its name is a
// good one, also once that name is taken (the module checks the arguments
// first).
func createRefused(req CreateRequest, goodName bool) func(t *testing.T, e *contractEnv) {
	return func(t *testing.T, e *contractEnv) {
		_, err := e.k.Create(bg, req)
		isErr(t, "create", err, ErrInvalid, unix.EINVAL)
		wantList(t, e.k)
		if !goodName {
			return
		}
		taken := create(t, e.k, req.Name, 5, mib, 0)
		_, err = e.k.Create(bg, req)
		isErr(t, "create with a taken name", err, ErrInvalid, unix.EINVAL)
		wantList(t, e.k, taken)
	}
}

func contractCases() []contractCase {
	cases := []contractCase{{"version", func(t *testing.T, e *contractEnv) {
		v, err := e.k.Version(bg)
		noErr(t, "version", err)
		if want := (Version{ABIMajor: ABIMajor, ABIMinor: ABIMinor, MaxInst: MaxInstPerGPU, NameLen: NameLen}); v != want {
			t.Errorf("version %+v, want %+v", v, want)
		}
		noErr(t, "compatible ABI", CompatibleABI(v))
	}}}

	for _, c := range []struct {
		name string
		req  CreateRequest
	}{
		{"plain", CreateRequest{Name: "a", GPU: 0, MemLimit: 256 * mib, Weight: 2}},
		{"weight 0 is 1", CreateRequest{Name: "w0", GPU: 1, MemLimit: mib}},
		{"weight 20", CreateRequest{Name: "w20", GPU: 2, MemLimit: mib, Weight: MaxInstPerGPU}},
		{"name of 63 bytes", CreateRequest{Name: strings.Repeat("n", NameLen-1), GPU: 3, MemLimit: mib}},
		{"every name character", CreateRequest{Name: "AZaz09_.-", GPU: 4, MemLimit: mib}},
		{"name with dots", CreateRequest{Name: "...", GPU: 4, MemLimit: mib}},
		{"limit 1 byte", CreateRequest{Name: "l1", GPU: 5, MemLimit: 1}},
		{"limit 2^48", CreateRequest{Name: "lmax", GPU: 6, MemLimit: MemLimitMax}},
		{"GPU 247", CreateRequest{Name: "g247", GPU: MaxGPUMinor, MemLimit: mib}},
	} {
		cases = append(cases, contractCase{"create/" + c.name, createEchoes(c.req)})
	}

	for _, c := range []struct {
		name string
		req  CreateRequest
	}{ // a good name is "c"
		{"empty name", CreateRequest{Name: "", MemLimit: mib}},
		{"name of 64 bytes", CreateRequest{Name: strings.Repeat("n", NameLen), MemLimit: mib}},
		{"name with a slash", CreateRequest{Name: "a/b", MemLimit: mib}},
		{"name with a space", CreateRequest{Name: "a b", MemLimit: mib}},
		{"name with a NUL", CreateRequest{Name: "a\x00b", MemLimit: mib}},
		{"name not ASCII", CreateRequest{Name: "gpu\u00e9", MemLimit: mib}},
		{"name .", CreateRequest{Name: ".", MemLimit: mib}},
		{"name ..", CreateRequest{Name: "..", MemLimit: mib}},
		{"limit 0", CreateRequest{Name: "c", MemLimit: 0}},
		{"limit above 2^48", CreateRequest{Name: "c", MemLimit: MemLimitMax + 1}},
		{"GPU 248", CreateRequest{Name: "c", GPU: MaxGPUMinor + 1, MemLimit: mib}},
		{"GPU 2^32-1", CreateRequest{Name: "c", GPU: ^uint32(0), MemLimit: mib}},
		{"weight 21", CreateRequest{Name: "c", MemLimit: mib, Weight: MaxInstPerGPU + 1}},
	} {
		cases = append(cases, contractCase{"create/EINVAL/" + c.name, createRefused(c.req, c.req.Name == "c")})
	}

	cases = append(cases, []contractCase{
		{"create/EEXIST name taken on another GPU", func(t *testing.T, e *contractEnv) {
			a := create(t, e.k, "a", 1, mib, 0)
			_, err := e.k.Create(bg, CreateRequest{Name: "a", GPU: 0, MemLimit: mib})
			isErr(t, "create a taken name", err, ErrExists, unix.EEXIST)
			wantList(t, e.k, a)
			if st := stats(t, e.k, a); st.GPU != 1 {
				t.Errorf("the refused create changed the first: %+v", st)
			}
		}},
		{"create/EEXIST before ENOSPC on a full GPU", func(t *testing.T, e *contractEnv) {
			ids := fill(t, e.k, "f", 0, MaxInstPerGPU)
			_, err := e.k.Create(bg, CreateRequest{Name: "f0", GPU: 0, MemLimit: mib})
			isErr(t, "create a taken name on a full GPU", err, ErrExists, unix.EEXIST)
			wantList(t, e.k, ids...)
		}},
		{"create/name free again after destroy", func(t *testing.T, e *contractEnv) {
			a := create(t, e.k, "a", 0, mib, 0)
			noErr(t, "destroy", e.k.Destroy(bg, a, false))
			b := create(t, e.k, "a", 1, 2*mib, 0)
			if st := stats(t, e.k, b); st.GPU != 1 || st.MemLimit != 2*mib {
				t.Errorf("stats of the second %q: %+v", "a", st)
			}
		}},
		{"create/ENOSPC 21st instance on a GPU", func(t *testing.T, e *contractEnv) {
			ids := fill(t, e.k, "i", 0, MaxInstPerGPU)
			_, err := e.k.Create(bg, CreateRequest{Name: "x", GPU: 0, MemLimit: mib})
			isErr(t, "21st on GPU 0", err, ErrNoSpace, unix.ENOSPC)
			wantList(t, e.k, ids...)
			other := create(t, e.k, "x", 1, mib, 0) // the cap is per GPU
			noErr(t, "destroy one", e.k.Destroy(bg, ids[3], false))
			again := create(t, e.k, "y", 0, mib, 0)
			want := append(slices.Delete(slices.Clone(ids), 3, 4), other, again)
			wantList(t, e.k, want...)
		}},
		{"create/ENOSPC weights above max_inst", func(t *testing.T, e *contractEnv) {
			create(t, e.k, "w15", 0, mib, 15)
			_, err := e.k.Create(bg, CreateRequest{Name: "w6", GPU: 0, MemLimit: mib, Weight: 6})
			isErr(t, "weight 6 on 15", err, ErrNoSpace, unix.ENOSPC)
			create(t, e.k, "w5", 0, mib, 5)
			_, err = e.k.Create(bg, CreateRequest{Name: "w1", GPU: 0, MemLimit: mib})
			isErr(t, "weight 1 on a GPU whose weights are 20", err, ErrNoSpace, unix.ENOSPC)
			create(t, e.k, "w20", 1, mib, 20)
		}},
		{"create/ENOSPC freed weight is the destroyed one", func(t *testing.T, e *contractEnv) {
			ids := fill(t, e.k, "i", 0, MaxInstPerGPU)
			noErr(t, "destroy one", e.k.Destroy(bg, ids[0], false))
			_, err := e.k.Create(bg, CreateRequest{Name: "heavy", GPU: 0, MemLimit: mib, Weight: 2})
			isErr(t, "weight 2 where 1 is free", err, ErrNoSpace, unix.ENOSPC)
			create(t, e.k, "light", 0, mib, 1)
		}},
		{"create/concurrent creates keep the cap", func(t *testing.T, e *contractEnv) {
			var wg sync.WaitGroup
			var mu sync.Mutex
			ok, full := 0, 0
			for i := range 2 * MaxInstPerGPU {
				wg.Add(1)
				go func() {
					defer wg.Done()
					_, err := e.k.Create(bg, CreateRequest{Name: fmt.Sprintf("c%d", i), GPU: 0, MemLimit: mib})
					mu.Lock()
					defer mu.Unlock()
					switch {
					case err == nil:
						ok++
					case errors.Is(err, ErrNoSpace) && errors.Is(err, unix.ENOSPC):
						full++
					default:
						t.Errorf("create c%d: %v", i, err)
					}
				}()
			}
			wg.Wait()
			if ok != MaxInstPerGPU || full != MaxInstPerGPU {
				t.Errorf("%d created, %d refused; want %d and %d", ok, full, MaxInstPerGPU, MaxInstPerGPU)
			}
			if n := len(list(t, e.k)); n != MaxInstPerGPU {
				t.Errorf("%d instances listed, want %d", n, MaxInstPerGPU)
			}
		}},
		{"ids/ascending, listed in order, never reused", func(t *testing.T, e *contractEnv) {
			var ids []uint64
			for i := range 6 {
				ids = append(ids, create(t, e.k, fmt.Sprintf("n%d", i), uint32(i%3), mib, 0))
			}
			if !slices.IsSorted(ids) || len(slices.Compact(slices.Clone(ids))) != len(ids) {
				t.Fatalf("ids %v not ascending", ids)
			}
			wantList(t, e.k, ids...)
			noErr(t, "destroy the newest", e.k.Destroy(bg, ids[5], false))
			again := create(t, e.k, "n5", 2, mib, 0)
			if again <= ids[5] {
				t.Errorf("id %d after destroying %d: reused or going down", again, ids[5])
			}
			wantList(t, e.k, append(ids[:5:5], again)...)
		}},
		{"list/empty", func(t *testing.T, e *contractEnv) {
			ids := list(t, e.k)
			if ids == nil || len(ids) != 0 {
				t.Errorf("list %#v, want an empty, non-nil slice", ids)
			}
		}},
		{"stats/ENOENT", func(t *testing.T, e *contractEnv) {
			a := create(t, e.k, "a", 0, mib, 0)
			for _, id := range []uint64{0, a + 1000, ^uint64(0)} {
				_, err := e.k.Stats(bg, id)
				isErr(t, fmt.Sprintf("stats of %d", id), err, ErrNotFound, unix.ENOENT)
			}
		}},
		{"destroy/ENOENT", func(t *testing.T, e *contractEnv) {
			a := create(t, e.k, "a", 0, mib, 0)
			for _, force := range []bool{false, true} {
				for _, id := range []uint64{0, a + 1000, ^uint64(0)} {
					isErr(t, fmt.Sprintf("destroy %d (force %v)", id, force), e.k.Destroy(bg, id, force), ErrNotFound, unix.ENOENT)
				}
			}
			noErr(t, "destroy", e.k.Destroy(bg, a, false))
			isErr(t, "destroy twice", e.k.Destroy(bg, a, false), ErrNotFound, unix.ENOENT)
			isErr(t, "forced destroy twice", e.k.Destroy(bg, a, true), ErrNotFound, unix.ENOENT)
			_, err := e.k.Stats(bg, a)
			isErr(t, "stats of a destroyed instance", err, ErrNotFound, unix.ENOENT)
			wantList(t, e.k)
		}},
		{"destroy/idle with cgroups attached unbinds them", func(t *testing.T, e *contractEnv) {
			a := create(t, e.k, "a", 0, mib, 0)
			b := create(t, e.k, "b", 0, mib, 0)
			cg1, cg2 := e.cgroup(), e.cgroup()
			noErr(t, "attach 1", e.k.Attach(bg, a, cg1))
			noErr(t, "attach 2", e.k.Attach(bg, a, cg2))
			noErr(t, "destroy without force", e.k.Destroy(bg, a, false))
			isErr(t, "detach from the destroyed", e.k.Detach(bg, a, cg1), ErrNotFound, unix.ENOENT)
			noErr(t, "the cgroup is free for another instance on the GPU", e.k.Attach(bg, b, cg1))
			noErr(t, "so is the other", e.k.Attach(bg, b, cg2))
			if st := stats(t, e.k, b); st.Cgroups != 2 {
				t.Errorf("cgroups of b: %d, want 2", st.Cgroups)
			}
		}},
		{"attach/binds, one instance per GPU per cgroup", func(t *testing.T, e *contractEnv) {
			a := create(t, e.k, "a", 0, mib, 0)
			b := create(t, e.k, "b", 0, mib, 0)
			c := create(t, e.k, "c", 1, mib, 0)
			cg, cg2 := e.cgroup(), e.cgroup()
			noErr(t, "attach", e.k.Attach(bg, a, cg))
			if st := stats(t, e.k, a); st.Cgroups != 1 {
				t.Errorf("cgroups %d after attach, want 1", st.Cgroups)
			}
			isErr(t, "attach again", e.k.Attach(bg, a, cg), ErrExists, unix.EEXIST)
			isErr(t, "attach to another instance on the GPU", e.k.Attach(bg, b, cg), ErrExists, unix.EEXIST)
			noErr(t, "attach to an instance on another GPU", e.k.Attach(bg, c, cg))
			noErr(t, "attach another cgroup", e.k.Attach(bg, a, cg2))
			want := map[uint64]uint32{a: 2, b: 0, c: 1}
			for id, n := range want {
				if st := stats(t, e.k, id); st.Cgroups != n {
					t.Errorf("instance %d: %d cgroups, want %d", id, st.Cgroups, n)
				}
			}
		}},
		{"attach/ENOENT", func(t *testing.T, e *contractEnv) {
			a := create(t, e.k, "a", 0, mib, 0)
			cg := e.cgroup()
			gone := e.cgroup()
			e.removeCgroup(gone)
			isErr(t, "attach a cgroup id that is no cgroup", e.k.Attach(bg, a, e.noCgroup), ErrNotFound, unix.ENOENT)
			isErr(t, "attach cgroup id 0", e.k.Attach(bg, a, 0), ErrNotFound, unix.ENOENT)
			isErr(t, "attach a removed cgroup", e.k.Attach(bg, a, gone), ErrNotFound, unix.ENOENT)
			isErr(t, "attach to no instance", e.k.Attach(bg, a+1000, cg), ErrNotFound, unix.ENOENT)
			isErr(t, "attach to instance 0", e.k.Attach(bg, 0, cg), ErrNotFound, unix.ENOENT)
			isErr(t, "attach no cgroup to no instance", e.k.Attach(bg, a+1000, e.noCgroup), ErrNotFound, unix.ENOENT)
			if st := stats(t, e.k, a); st.Cgroups != 0 {
				t.Errorf("cgroups %d after refused attaches", st.Cgroups)
			}
		}},
		{"attach/a removed cgroup stays bound until detached", func(t *testing.T, e *contractEnv) {
			a := create(t, e.k, "a", 0, mib, 0)
			cg := e.cgroup()
			noErr(t, "attach", e.k.Attach(bg, a, cg))
			e.removeCgroup(cg)
			if st := stats(t, e.k, a); st.Cgroups != 1 {
				t.Errorf("cgroups %d after the cgroup went, want 1", st.Cgroups)
			}
			noErr(t, "detach the removed cgroup", e.k.Detach(bg, a, cg))
			if st := stats(t, e.k, a); st.Cgroups != 0 {
				t.Errorf("cgroups %d after detach", st.Cgroups)
			}
		}},
		{"detach/unbinds; ENOENT", func(t *testing.T, e *contractEnv) {
			a := create(t, e.k, "a", 0, mib, 0)
			b := create(t, e.k, "b", 1, mib, 0)
			cg, other := e.cgroup(), e.cgroup()
			noErr(t, "attach a", e.k.Attach(bg, a, cg))
			noErr(t, "attach b", e.k.Attach(bg, b, other))
			isErr(t, "detach a cgroup not attached", e.k.Detach(bg, a, other), ErrNotFound, unix.ENOENT)
			isErr(t, "detach from no instance", e.k.Detach(bg, a+1000, cg), ErrNotFound, unix.ENOENT)
			isErr(t, "detach from instance 0", e.k.Detach(bg, 0, cg), ErrNotFound, unix.ENOENT)
			isErr(t, "detach a cgroup id that is no cgroup", e.k.Detach(bg, a, e.noCgroup), ErrNotFound, unix.ENOENT)
			noErr(t, "detach", e.k.Detach(bg, a, cg))
			if st := stats(t, e.k, a); st.Cgroups != 0 {
				t.Errorf("cgroups %d after detach", st.Cgroups)
			}
			isErr(t, "detach twice", e.k.Detach(bg, a, cg), ErrNotFound, unix.ENOENT)
			if st := stats(t, e.k, b); st.Cgroups != 1 {
				t.Errorf("detaching from a touched b: %d cgroups", st.Cgroups)
			}
			noErr(t, "attach again", e.k.Attach(bg, a, cg))
		}},
		{"set/limit", func(t *testing.T, e *contractEnv) {
			a := create(t, e.k, "a", 0, 4*mib, 0)
			for _, l := range []uint64{8 * mib, 1, MemLimitMax, 4 * mib} {
				noErr(t, fmt.Sprintf("limit %d", l), e.k.SetLimit(bg, a, l))
				if st := stats(t, e.k, a); st.MemLimit != l {
					t.Errorf("limit %d after setting %d", st.MemLimit, l)
				}
			}
			isErr(t, "limit 0", e.k.SetLimit(bg, a, 0), ErrInvalid, unix.EINVAL)
			isErr(t, "limit above 2^48", e.k.SetLimit(bg, a, MemLimitMax+1), ErrInvalid, unix.EINVAL)
			isErr(t, "limit of no instance", e.k.SetLimit(bg, a+1000, mib), ErrNotFound, unix.ENOENT)
			isErr(t, "limit of instance 0", e.k.SetLimit(bg, 0, mib), ErrNotFound, unix.ENOENT)
			isErr(t, "limit 0 of no instance", e.k.SetLimit(bg, a+1000, 0), ErrInvalid, unix.EINVAL)
			if st := stats(t, e.k, a); st.MemLimit != 4*mib || st.Weight != 1 {
				t.Errorf("refused sets changed %+v", st)
			}
		}},
		{"set/weight", func(t *testing.T, e *contractEnv) {
			a := create(t, e.k, "a", 0, mib, 2)
			b := create(t, e.k, "b", 0, mib, 10)
			noErr(t, "weight 3", e.k.SetWeight(bg, a, 3))
			noErr(t, "weight 10 (sum 20)", e.k.SetWeight(bg, a, 10))
			isErr(t, "weight 11 (sum 21)", e.k.SetWeight(bg, a, 11), ErrNoSpace, unix.ENOSPC)
			noErr(t, "the same weight on a full GPU", e.k.SetWeight(bg, a, 10))
			isErr(t, "weight 0", e.k.SetWeight(bg, a, 0), ErrInvalid, unix.EINVAL)
			isErr(t, "weight 21", e.k.SetWeight(bg, a, MaxInstPerGPU+1), ErrInvalid, unix.EINVAL)
			isErr(t, "weight of no instance", e.k.SetWeight(bg, a+1000, 1), ErrNotFound, unix.ENOENT)
			isErr(t, "weight 0 of no instance", e.k.SetWeight(bg, a+1000, 0), ErrInvalid, unix.EINVAL)
			if st := stats(t, e.k, a); st.Weight != 10 || st.MemLimit != mib {
				t.Errorf("a after sets: %+v", st)
			}
			noErr(t, "b down to 1", e.k.SetWeight(bg, b, 1))
			noErr(t, "a up to 19 (sum 20)", e.k.SetWeight(bg, a, 19))
			_, err := e.k.Create(bg, CreateRequest{Name: "c", GPU: 0, MemLimit: mib})
			isErr(t, "create on a GPU whose weights are 20", err, ErrNoSpace, unix.ENOSPC)
			noErr(t, "weight 20 on another GPU", e.k.SetWeight(bg, create(t, e.k, "d", 1, mib, 0), MaxInstPerGPU))
		}},
		{"busy/held memory: stats, EBUSY for a lower limit and destroy", func(t *testing.T, e *contractEnv) {
			const size = 16 * mib
			a := create(t, e.k, "busy", 0, 64*mib, 0)
			cg := e.cgroup()
			noErr(t, "attach", e.k.Attach(bg, a, cg))
			release := e.hold(a, cg, size)
			st := stats(t, e.k, a)
			if st.MemUsed < size || st.MemPeak < st.MemUsed || st.Procs != 1 || st.Allocs == 0 || st.LiveAllocs == 0 {
				t.Errorf("stats while holding %d: %+v", size, st)
			}
			isErr(t, "destroy", e.k.Destroy(bg, a, false), ErrBusy, unix.EBUSY)
			isErr(t, "limit one byte below used", e.k.SetLimit(bg, a, st.MemUsed-1), ErrBusy, unix.EBUSY)
			isErr(t, "limit 1", e.k.SetLimit(bg, a, 1), ErrBusy, unix.EBUSY)
			if st2 := stats(t, e.k, a); st2.MemLimit != 64*mib || st2.Cgroups != 1 {
				t.Errorf("refused calls changed %+v", st2)
			}
			noErr(t, "limit at used", e.k.SetLimit(bg, a, st.MemUsed))
			noErr(t, "limit back up", e.k.SetLimit(bg, a, 64*mib))
			release()
			idle := stats(t, e.k, a)
			if idle.MemUsed != 0 || idle.Procs != 0 || idle.LiveAllocs != 0 || idle.MemPeak < size || idle.Allocs < st.Allocs {
				t.Errorf("stats once released: %+v (holding: %+v)", idle, st)
			}
			noErr(t, "limit 1 once idle", e.k.SetLimit(bg, a, 1))
			noErr(t, "destroy once idle", e.k.Destroy(bg, a, false))
		}},
		{"busy/forced destroy frees name, slot and cgroup", func(t *testing.T, e *contractEnv) {
			a := create(t, e.k, "busy", 0, 64*mib, MaxInstPerGPU)
			cg := e.cgroup()
			noErr(t, "attach", e.k.Attach(bg, a, cg))
			release := e.hold(a, cg, 8*mib)
			isErr(t, "destroy", e.k.Destroy(bg, a, false), ErrBusy, unix.EBUSY)
			noErr(t, "forced destroy", e.k.Destroy(bg, a, true))
			_, err := e.k.Stats(bg, a)
			isErr(t, "stats after a forced destroy", err, ErrNotFound, unix.ENOENT)
			wantList(t, e.k)
			b := create(t, e.k, "busy", 0, 64*mib, MaxInstPerGPU)
			noErr(t, "the cgroup attaches to the new instance", e.k.Attach(bg, b, cg))
			release()
		}},
		{"max_inst/per GPU", func(t *testing.T, e *contractEnv) {
			ids := fill(t, e.k, "m", 0, 3)
			for _, n := range []uint32{0, MaxInstPerGPU + 1} {
				if err := e.setGPUMaxInst(0, n); !errors.Is(err, unix.EINVAL) {
					t.Errorf("max_inst %d: %v, want EINVAL", n, err)
				}
			}
			if err := e.setGPUMaxInst(0, 2); !errors.Is(err, unix.EBUSY) {
				t.Errorf("max_inst 2 with 3 instances: %v, want EBUSY", err)
			}
			noErr(t, "weight 5", e.k.SetWeight(bg, ids[0], 5))
			if err := e.setGPUMaxInst(0, 6); !errors.Is(err, unix.EBUSY) {
				t.Errorf("max_inst 6 with weights 7: %v, want EBUSY", err)
			}
			noErr(t, "max_inst 7", e.setGPUMaxInst(0, 7))
			_, err := e.k.Create(bg, CreateRequest{Name: "m3", GPU: 0, MemLimit: mib})
			isErr(t, "create past max_inst 7", err, ErrNoSpace, unix.ENOSPC)
			isErr(t, "weight past max_inst 7", e.k.SetWeight(bg, ids[1], 2), ErrNoSpace, unix.ENOSPC)
			create(t, e.k, "m3", 1, mib, 0) // other GPUs keep theirs
			if v, err := e.k.Version(bg); err != nil || v.MaxInst != MaxInstPerGPU {
				t.Errorf("version after a per-GPU max_inst: %+v, %v", v, err)
			}
			noErr(t, "max_inst 8", e.setGPUMaxInst(0, 8))
			create(t, e.k, "m4", 0, mib, 0)
			noErr(t, "max_inst 20", e.setGPUMaxInst(0, MaxInstPerGPU))
		}},
		{"max_inst/ENOENT for a GPU never used", func(t *testing.T, e *contractEnv) {
			gpu := e.unusedGPU()
			if err := e.setGPUMaxInst(gpu, 5); !errors.Is(err, unix.ENOENT) {
				t.Errorf("max_inst of unused GPU %d: %v, want ENOENT", gpu, err)
			}
		}},
		{"client/a cancelled context does nothing", func(t *testing.T, e *contractEnv) {
			a := create(t, e.k, "a", 0, mib, 0)
			cg := e.cgroup()
			ctx, cancel := context.WithCancel(bg)
			cancel()
			for _, op := range clientOps(a, cg) {
				if err := op.do(ctx, e.k); !errors.Is(err, context.Canceled) {
					t.Errorf("%s with a cancelled context: %v", op.name, err)
				}
			}
			want := Stats{ID: a, Name: "a", Weight: 1, MemLimit: mib}
			if st := stats(t, e.k, a); st != want {
				t.Errorf("stats after cancelled calls %+v, want %+v", st, want)
			}
			wantList(t, e.k, a)
		}},
		{"client/every call fails after Close", func(t *testing.T, e *contractEnv) {
			a := create(t, e.k, "a", 0, mib, 0)
			cg := e.cgroup()
			noErr(t, "close", e.k.Close())
			for _, op := range clientOps(a, cg) {
				if err := op.do(bg, e.k); err == nil {
					t.Errorf("%s after close succeeded", op.name)
				}
			}
		}},
	}...)
	return cases
}

// clientOps is one call of each Client method on instance id and cgroup cg.
func clientOps(id, cg uint64) []struct {
	name string
	do   func(ctx context.Context, k Client) error
} {
	return []struct {
		name string
		do   func(ctx context.Context, k Client) error
	}{
		{"version", func(ctx context.Context, k Client) error { _, err := k.Version(ctx); return err }},
		{"create", func(ctx context.Context, k Client) error {
			_, err := k.Create(ctx, CreateRequest{Name: "other", GPU: 1, MemLimit: mib})
			return err
		}},
		{"destroy", func(ctx context.Context, k Client) error { return k.Destroy(ctx, id, true) }},
		{"attach", func(ctx context.Context, k Client) error { return k.Attach(ctx, id, cg) }},
		{"detach", func(ctx context.Context, k Client) error { return k.Detach(ctx, id, cg) }},
		{"set limit", func(ctx context.Context, k Client) error { return k.SetLimit(ctx, id, 2*mib) }},
		{"set weight", func(ctx context.Context, k Client) error { return k.SetWeight(ctx, id, 2) }},
		{"stats", func(ctx context.Context, k Client) error { _, err := k.Stats(ctx, id); return err }},
		{"list", func(ctx context.Context, k Client) error { _, err := k.List(ctx); return err }},
	}
}

// TestContractFake holds the Fake to the contract.
func TestContractFake(t *testing.T) {
	runContract(t, newFakeEnv)
}

func newFakeEnv(t *testing.T) *contractEnv {
	var mu sync.Mutex
	live := map[uint64]bool{}
	next := uint64(1000)
	f := NewFake(WithCgroupExists(func(id uint64) bool {
		mu.Lock()
		defer mu.Unlock()
		return live[id]
	}))
	return &contractEnv{
		k: f,
		cgroup: func() uint64 {
			mu.Lock()
			defer mu.Unlock()
			next++
			live[next] = true
			return next
		},
		removeCgroup: func(cg uint64) {
			mu.Lock()
			defer mu.Unlock()
			delete(live, cg)
		},
		noCgroup: 1,
		hold: func(id, cg, size uint64) func() {
			noErr(t, "hold", f.SetUsage(id, size, 1))
			var once sync.Once
			release := func() {
				once.Do(func() {
					if err := f.SetUsage(id, 0, 0); err != nil && !errors.Is(err, ErrNotFound) {
						t.Errorf("release: %v", err)
					}
				})
			}
			t.Cleanup(release)
			return release
		},
		setGPUMaxInst: f.SetGPUMaxInst,
		unusedGPU:     func() uint32 { return MaxGPUMinor },
	}
}
