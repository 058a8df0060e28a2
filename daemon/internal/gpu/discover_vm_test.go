package gpu

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"

	logtest "github.com/sirupsen/logrus/hooks/test"
)

// TestVMDiscover runs in the VM (tests/vm/suites/kclient) on nvmock.ko,
// which the suite loads with known GPUs and describes in
// CGPU_VM_DISCOVERY_WANT (an Inventory in JSON): discovery through New, the
// daemon's entry, must find exactly that through procfs.
func TestVMDiscover(t *testing.T) {
	if os.Getenv("CGPU_VM") != "1" {
		t.Skip("needs nvmock.ko: runs in the VM (tests/vm/run --suite kclient)")
	}
	var want Inventory
	if err := json.Unmarshal([]byte(os.Getenv("CGPU_VM_DISCOVERY_WANT")), &want); err != nil {
		t.Fatalf("CGPU_VM_DISCOVERY_WANT: %v", err)
	}
	log, hook := logtest.NewNullLogger()
	inv, err := New(WithLogger(log)).Discover(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	got, _ := json.MarshalIndent(inv, "", "  ")
	t.Logf("discovered:\n%s", got)
	if inv.Source != want.Source || inv.DriverVersion != want.DriverVersion || len(inv.GPUs) != len(want.GPUs) {
		t.Fatalf("want %+v", want)
	}
	for i := range want.GPUs {
		if inv.GPUs[i] != want.GPUs[i] {
			t.Errorf("GPU %d: got %+v, want %+v", i, inv.GPUs[i], want.GPUs[i])
		}
	}
	e := hook.LastEntry()
	if e == nil || e.Data["source"] != "procfs" || !strings.Contains(e.Data["nvml"].(string), "NVML unavailable") {
		t.Errorf("log entry %+v: want source=procfs and why NVML was not used", e)
	}
}
