package kernel

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"golang.org/x/sys/unix"
)

const gib = uint64(1) << 30

func mustCreate(t *testing.T, c Client, name string, gpu uint32, limit uint64, weight uint32) uint64 {
	t.Helper()
	id, err := c.Create(context.Background(), CreateRequest{Name: name, GPU: gpu, MemLimit: limit, Weight: weight})
	if err != nil {
		t.Fatalf("create %s: %v", name, err)
	}
	return id
}

// wantErr checks that err matches both the sentinel and the errno.
func wantErr(t *testing.T, what string, err, sentinel error, errno unix.Errno) {
	t.Helper()
	if sentinel == nil {
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		return
	}
	if !errors.Is(err, sentinel) || !errors.Is(err, errno) {
		t.Fatalf("%s: got %v, want %v and %v", what, err, sentinel, errno)
	}
}

func TestFakeCreate(t *testing.T) {
	cases := []struct {
		name    string
		setup   func(f *Fake)
		req     CreateRequest
		want    error
		wantErr unix.Errno
	}{
		{"ok", nil, CreateRequest{Name: "a", GPU: 0, MemLimit: gib}, nil, 0},
		{"empty name", nil, CreateRequest{Name: "", MemLimit: gib}, ErrInvalid, unix.EINVAL},
		{"name 64 bytes", nil, CreateRequest{Name: string(make64('x')), MemLimit: gib}, ErrInvalid, unix.EINVAL},
		{"name with slash", nil, CreateRequest{Name: "a/b", MemLimit: gib}, ErrInvalid, unix.EINVAL},
		{"dotdot", nil, CreateRequest{Name: "..", MemLimit: gib}, ErrInvalid, unix.EINVAL},
		{"zero limit", nil, CreateRequest{Name: "a"}, ErrInvalid, unix.EINVAL},
		{"limit above 2^48", nil, CreateRequest{Name: "a", MemLimit: MemLimitMax + 1}, ErrInvalid, unix.EINVAL},
		{"minor 248", nil, CreateRequest{Name: "a", GPU: 248, MemLimit: gib}, ErrInvalid, unix.EINVAL},
		{"weight 21", nil, CreateRequest{Name: "a", MemLimit: gib, Weight: 21}, ErrInvalid, unix.EINVAL},
		{"name taken on another GPU", func(f *Fake) { mustCreate(t, f, "a", 1, gib, 0) },
			CreateRequest{Name: "a", GPU: 0, MemLimit: gib}, ErrExists, unix.EEXIST},
		{"21st instance", func(f *Fake) {
			for i := range 20 {
				mustCreate(t, f, fmt.Sprintf("i%d", i), 0, gib, 0)
			}
		}, CreateRequest{Name: "x", GPU: 0, MemLimit: gib}, ErrNoSpace, unix.ENOSPC},
		{"21st on another GPU is fine", func(f *Fake) {
			for i := range 20 {
				mustCreate(t, f, fmt.Sprintf("i%d", i), 0, gib, 0)
			}
		}, CreateRequest{Name: "x", GPU: 1, MemLimit: gib}, nil, 0},
		{"weights above max_inst", func(f *Fake) { mustCreate(t, f, "w", 0, gib, 15) },
			CreateRequest{Name: "x", GPU: 0, MemLimit: gib, Weight: 6}, ErrNoSpace, unix.ENOSPC},
		{"weights up to max_inst", func(f *Fake) { mustCreate(t, f, "w", 0, gib, 15) },
			CreateRequest{Name: "x", GPU: 0, MemLimit: gib, Weight: 5}, nil, 0},
		{"per-GPU max_inst", func(f *Fake) { f.SetGPUMaxInst(0, 1); mustCreate(t, f, "w", 0, gib, 0) },
			CreateRequest{Name: "x", GPU: 0, MemLimit: gib}, ErrNoSpace, unix.ENOSPC},
		{"injected failure", func(f *Fake) { f.FailNext("create", ErrNoModule) },
			CreateRequest{Name: "x", MemLimit: gib}, ErrNoModule, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := NewFake()
			if c.setup != nil {
				c.setup(f)
			}
			id, err := f.Create(context.Background(), c.req)
			if c.want == ErrNoModule {
				if !errors.Is(err, ErrNoModule) {
					t.Fatalf("got %v", err)
				}
				return
			}
			wantErr(t, "create", err, c.want, c.wantErr)
			if err == nil {
				st, err := f.Stats(context.Background(), id)
				if err != nil {
					t.Fatal(err)
				}
				w := c.req.Weight
				if w == 0 {
					w = 1
				}
				if st.Name != c.req.Name || st.GPU != c.req.GPU || st.MemLimit != c.req.MemLimit || st.Weight != w || st.ID != id {
					t.Errorf("stats %+v do not match request %+v", st, c.req)
				}
			}
		})
	}
}

func make64(b byte) []byte {
	s := make([]byte, 64)
	for i := range s {
		s[i] = b
	}
	return s
}

func TestFakeLifecycle(t *testing.T) {
	ctx := context.Background()
	type step struct {
		what    string
		do      func(f *Fake, a, b uint64) error
		want    error
		wantErr unix.Errno
	}
	steps := []step{
		{"attach missing cgroup", func(f *Fake, a, b uint64) error { return f.Attach(ctx, a, 0) }, ErrNotFound, unix.ENOENT},
		{"attach missing instance", func(f *Fake, a, b uint64) error { return f.Attach(ctx, 999, 100) }, ErrNotFound, unix.ENOENT},
		{"attach", func(f *Fake, a, b uint64) error { return f.Attach(ctx, a, 100) }, nil, 0},
		{"attach same cgroup again", func(f *Fake, a, b uint64) error { return f.Attach(ctx, a, 100) }, ErrExists, unix.EEXIST},
		{"second instance same GPU same cgroup", func(f *Fake, a, b uint64) error { return f.Attach(ctx, b, 100) }, ErrExists, unix.EEXIST},
		{"second instance other cgroup", func(f *Fake, a, b uint64) error { return f.Attach(ctx, b, 101) }, nil, 0},
		{"detach not attached", func(f *Fake, a, b uint64) error { return f.Detach(ctx, a, 101) }, ErrNotFound, unix.ENOENT},
		{"use memory", func(f *Fake, a, b uint64) error { return f.SetUsage(a, 3*gib, 2) }, nil, 0},
		{"limit below used", func(f *Fake, a, b uint64) error { return f.SetLimit(ctx, a, 2*gib) }, ErrBusy, unix.EBUSY},
		{"limit at used", func(f *Fake, a, b uint64) error { return f.SetLimit(ctx, a, 3*gib) }, nil, 0},
		{"limit zero", func(f *Fake, a, b uint64) error { return f.SetLimit(ctx, a, 0) }, ErrInvalid, unix.EINVAL},
		{"weight too big for the GPU", func(f *Fake, a, b uint64) error { return f.SetWeight(ctx, a, 20) }, ErrNoSpace, unix.ENOSPC},
		{"weight fits", func(f *Fake, a, b uint64) error { return f.SetWeight(ctx, a, 19) }, nil, 0},
		{"weight zero", func(f *Fake, a, b uint64) error { return f.SetWeight(ctx, a, 0) }, ErrInvalid, unix.EINVAL},
		{"destroy busy", func(f *Fake, a, b uint64) error { return f.Destroy(ctx, a, false) }, ErrBusy, unix.EBUSY},
		{"destroy forced", func(f *Fake, a, b uint64) error { return f.Destroy(ctx, a, true) }, nil, 0},
		{"destroy again", func(f *Fake, a, b uint64) error { return f.Destroy(ctx, a, true) }, ErrNotFound, unix.ENOENT},
		{"stats gone", func(f *Fake, a, b uint64) error { _, err := f.Stats(ctx, a); return err }, ErrNotFound, unix.ENOENT},
		{"cgroup free again for b", func(f *Fake, a, b uint64) error { return f.Attach(ctx, b, 100) }, nil, 0},
		{"detach", func(f *Fake, a, b uint64) error { return f.Detach(ctx, b, 101) }, nil, 0},
		{"destroy idle", func(f *Fake, a, b uint64) error { return f.Destroy(ctx, b, false) }, nil, 0},
	}
	f := NewFake()
	a := mustCreate(t, f, "a", 0, 4*gib, 0)
	b := mustCreate(t, f, "b", 0, 4*gib, 0)
	for _, s := range steps {
		wantErr(t, s.what, s.do(f, a, b), s.want, s.wantErr)
	}
	ids, err := f.List(ctx)
	if err != nil || len(ids) != 0 {
		t.Fatalf("list after destroying all: %v %v", ids, err)
	}
}

func TestFakeStatsFollowUsage(t *testing.T) {
	ctx := context.Background()
	f := NewFake()
	id := mustCreate(t, f, "a", 3, 8*gib, 2)
	if err := f.Attach(ctx, id, 7); err != nil {
		t.Fatal(err)
	}
	for _, u := range []uint64{gib, 5 * gib, 2 * gib} {
		if err := f.SetUsage(id, u, 1); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.SetRefused(id, 4, 1); err != nil {
		t.Fatal(err)
	}
	st, err := f.Stats(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	want := Stats{ID: id, Name: "a", GPU: 3, Weight: 2, MemLimit: 8 * gib, MemUsed: 2 * gib, MemPeak: 5 * gib,
		Allocs: 2, LiveAllocs: 1, RefusedAllocs: 4, RefusedManaged: 1, Procs: 1, Cgroups: 1}
	if st != want {
		t.Errorf("stats\n got %+v\nwant %+v", st, want)
	}
}

func TestFakeListAscendingAndIDsNotReused(t *testing.T) {
	ctx := context.Background()
	f := NewFake()
	var ids []uint64
	for i := range 5 {
		ids = append(ids, mustCreate(t, f, fmt.Sprintf("n%d", i), uint32(i%2), gib, 0))
	}
	if err := f.Destroy(ctx, ids[4], false); err != nil {
		t.Fatal(err)
	}
	again := mustCreate(t, f, "again", 0, gib, 0)
	if again <= ids[4] {
		t.Errorf("id %d reused (last was %d)", again, ids[4])
	}
	got, err := f.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := append(ids[:4:4], again)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("list %v, want %v", got, want)
	}
}

func TestFakeConcurrentCreatesRespectCap(t *testing.T) {
	f := NewFake(WithMaxInst(10))
	var wg sync.WaitGroup
	var mu sync.Mutex
	ok, full := 0, 0
	for i := range 40 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := f.Create(context.Background(), CreateRequest{Name: fmt.Sprintf("c%d", i), GPU: 0, MemLimit: gib})
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				ok++
			case errors.Is(err, ErrNoSpace):
				full++
			default:
				t.Errorf("create: %v", err)
			}
		}()
	}
	wg.Wait()
	if ok != 10 || full != 30 {
		t.Errorf("%d created, %d refused; want 10 and 30", ok, full)
	}
}

func TestFakeClosed(t *testing.T) {
	f := NewFake()
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := f.List(context.Background()); err == nil {
		t.Error("list after close succeeded")
	}
}

func TestErrorMessage(t *testing.T) {
	err := errnoError("create", `"a" on GPU 0`, unix.ENOSPC)
	if got, want := err.Error(), `cgpu create "a" on GPU 0: GPU instance cap reached (ENOSPC)`; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	err = errnoError("stats", "instance 3", unix.EPERM)
	if !errors.Is(err, unix.EPERM) || errors.Is(err, ErrInvalid) {
		t.Errorf("EPERM error %v matches wrong things", err)
	}
}

func TestFakeReset(t *testing.T) {
	ctx := context.Background()
	f := NewFake()
	id := mustCreate(t, f, "a", 0, gib, 0)
	if err := f.Attach(ctx, id, 5); err != nil {
		t.Fatal(err)
	}
	f.Reset()
	if ids, _ := f.List(ctx); len(ids) != 0 {
		t.Fatalf("list after reset: %v", ids)
	}
	id2 := mustCreate(t, f, "a", 0, gib, 0)
	if id2 == id {
		t.Errorf("id %d reused after reset", id)
	}
	if err := f.Attach(ctx, id2, 5); err != nil {
		t.Errorf("cgroup still bound after reset: %v", err)
	}
}

func TestCompatibleABI(t *testing.T) {
	cases := []struct {
		v  Version
		ok bool
	}{
		{Version{ABIMajor: 1, ABIMinor: 0, NameLen: 64}, true},
		{Version{ABIMajor: 1, ABIMinor: 3, NameLen: 64}, true},
		{Version{ABIMajor: 2, NameLen: 64}, false},
		{Version{ABIMajor: 1, NameLen: 32}, false},
	}
	for _, c := range cases {
		err := CompatibleABI(c.v)
		if (err == nil) != c.ok || (err != nil && !errors.Is(err, ErrABI)) {
			t.Errorf("CompatibleABI(%+v) = %v", c.v, err)
		}
	}
}
