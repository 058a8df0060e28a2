package kernel

import (
	"context"
	"errors"
	"testing"

	"golang.org/x/sys/unix"
)

// The Fake's rules are held to the module's by the contract
// (contract_test.go); the tests here are of what only the Fake has: its
// options and test hooks.

const gib = uint64(1) << 30

func mustCreate(t *testing.T, c Client, name string, gpu uint32, limit uint64, weight uint32) uint64 {
	t.Helper()
	id, err := c.Create(context.Background(), CreateRequest{Name: name, GPU: gpu, MemLimit: limit, Weight: weight})
	if err != nil {
		t.Fatalf("create %s: %v", name, err)
	}
	return id
}

func TestFakeFailNext(t *testing.T) {
	ctx := context.Background()
	f := NewFake()
	f.FailNext("create", ErrNoModule)
	f.FailNext("create", unix.EPERM)
	if _, err := f.Create(ctx, CreateRequest{Name: "a", MemLimit: gib}); !errors.Is(err, ErrNoModule) {
		t.Fatalf("first create: %v, want the injected ErrNoModule", err)
	}
	if _, err := f.Create(ctx, CreateRequest{Name: "a", MemLimit: gib}); !errors.Is(err, unix.EPERM) {
		t.Fatalf("second create: %v, want the injected EPERM", err)
	}
	if ids, err := f.List(ctx); err != nil || len(ids) != 0 {
		t.Fatalf("failed creates made %v (%v)", ids, err)
	}
	mustCreate(t, f, "a", 0, gib, 0)
	if n := f.Calls(); n != 4 {
		t.Errorf("%d calls counted, want 4", n)
	}
}

func TestFakeWithMaxInst(t *testing.T) {
	ctx := context.Background()
	f := NewFake(WithMaxInst(3))
	if v, err := f.Version(ctx); err != nil || v.MaxInst != 3 {
		t.Fatalf("version %+v, %v; want max_inst 3", v, err)
	}
	for _, name := range []string{"a", "b", "c"} {
		mustCreate(t, f, name, 0, gib, 0)
	}
	if _, err := f.Create(ctx, CreateRequest{Name: "d", MemLimit: gib}); !errors.Is(err, ErrNoSpace) {
		t.Errorf("4th create with max_inst 3: %v, want ErrNoSpace", err)
	}
	if _, err := f.Create(ctx, CreateRequest{Name: "w", GPU: 1, MemLimit: gib, Weight: 4}); !errors.Is(err, ErrNoSpace) {
		t.Errorf("weight 4 with max_inst 3: %v, want ErrNoSpace", err)
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
	if err := f.SetUsage(id+1, gib, 1); !errors.Is(err, ErrNotFound) {
		t.Errorf("usage of no instance: %v", err)
	}
	if err := f.SetRefused(id+1, 1, 1); !errors.Is(err, ErrNotFound) {
		t.Errorf("refused of no instance: %v", err)
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
	if err := f.SetGPUMaxInst(0, 1); err != nil {
		t.Fatal(err)
	}
	f.Reset()
	if ids, _ := f.List(ctx); len(ids) != 0 {
		t.Fatalf("list after reset: %v", ids)
	}
	if err := f.SetGPUMaxInst(0, 1); !errors.Is(err, unix.ENOENT) {
		t.Errorf("GPU 0 kept its max_inst over a reset: %v", err)
	}
	id2 := mustCreate(t, f, "a", 0, gib, 0)
	if id2 == id {
		t.Errorf("id %d reused after reset", id)
	}
	if err := f.Attach(ctx, id2, 5); err != nil {
		t.Errorf("cgroup still bound after reset: %v", err)
	}
	mustCreate(t, f, "b", 0, gib, 0) // max_inst back to 20
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
