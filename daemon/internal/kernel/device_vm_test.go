package kernel

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"testing"

	"golang.org/x/sys/unix"
)

// The tests below drive the real cgpu.ko. They run in the VM only
// (tests/vm/suites/kclient sets CGPU_VM=1 and runs them as root there).
// Every call and its errors are in the contract (contract_test.go, run on
// the device by TestContractDevice); what is here is Device's own.

func vmDevice(t *testing.T) *Device {
	t.Helper()
	if os.Getenv("CGPU_VM") != "1" {
		t.Skip("needs the real cgpu.ko as root: runs in the VM (tests/vm/run --suite kclient)")
	}
	d, err := New()
	if err != nil {
		t.Fatalf("open /dev/cgpu: %v", err)
	}
	t.Cleanup(func() {
		// Leave no instance behind for the next test.
		ids, _ := d.List(context.Background())
		for _, id := range ids {
			_ = d.Destroy(context.Background(), id, true)
		}
		d.Close()
	})
	return d
}

func vmWant(t *testing.T, what string, err, sentinel error, errno unix.Errno) {
	t.Helper()
	if !errors.Is(err, sentinel) || !errors.Is(err, errno) {
		t.Errorf("%s: %v, want %v (%s)", what, err, sentinel, unix.ErrnoName(errno))
	} else {
		t.Logf("%s: %v", what, err)
	}
}

// The 21st instance on a GPU is refused; List grows past its first buffer
// (160 ids) and returns every id in order.
func TestVMCapAndLongList(t *testing.T) {
	d := vmDevice(t)
	ctx := context.Background()
	var want []uint64
	for gpu := range uint32(10) {
		for i := range 20 {
			id, err := d.Create(ctx, CreateRequest{Name: fmt.Sprintf("kc-%d-%d", gpu, i), GPU: gpu, MemLimit: 1 << 20})
			if err != nil {
				t.Fatalf("create %d on GPU %d: %v", i, gpu, err)
			}
			want = append(want, id)
		}
		_, err := d.Create(ctx, CreateRequest{Name: fmt.Sprintf("kc-%d-21st", gpu), GPU: gpu, MemLimit: 1 << 20})
		if gpu == 0 {
			vmWant(t, "21st instance on GPU 0", err, ErrNoSpace, unix.ENOSPC)
		} else if !errors.Is(err, ErrNoSpace) {
			t.Errorf("21st on GPU %d: %v", gpu, err)
		}
	}
	got, err := d.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) {
		t.Errorf("list of %d ids, want the %d created in order", len(got), len(want))
	}
	t.Logf("list returned %d ids (first buffer %d)", len(got), listInitialCapacity)
	// Weights: one slot freed on GPU 0 takes weight 1, not 2.
	if err := d.Destroy(ctx, want[0], false); err != nil {
		t.Fatal(err)
	}
	_, err = d.Create(ctx, CreateRequest{Name: "kc-heavy", GPU: 0, MemLimit: 1 << 20, Weight: 2})
	vmWant(t, "weight 2 where 1 is free", err, ErrNoSpace, unix.ENOSPC)
}
