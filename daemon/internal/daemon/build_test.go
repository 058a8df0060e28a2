package daemon

import (
	"context"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "github.com/cgpu-dev/cgpu/daemon/api/v1"
	"github.com/cgpu-dev/cgpu/daemon/internal/config"
	"github.com/sirupsen/logrus"
)

// Build on a host without cgpu.ko or GPUs (fixture roots): the parts come
// up, reconciliation reports what is missing, the daemon would serve
// degraded and refuse creates with 503's sentinel.
func TestBuildWithoutModule(t *testing.T) {
	dir := t.TempDir()
	c := config.Default()
	c.StateDir = filepath.Join(dir, "state")
	c.DevDir = filepath.Join(dir, "dev")
	c.ProcRoot = filepath.Join(dir, "proc")
	c.CgroupRoot = dir
	c.DeviceFilter = false
	log := logrus.New()
	log.SetOutput(io.Discard)
	ctx := context.Background()
	parts, err := Build(ctx, c, log)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := parts.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	}()
	if !strings.Contains(parts.Status, "not loaded") {
		t.Errorf("status %q", parts.Status)
	}
	if err := parts.Manager.Reconcile(ctx); err == nil {
		t.Error("reconcile without a module succeeded")
	}
	h := parts.Manager.Health(ctx)
	if h.Status == "ok" {
		t.Errorf("health %+v", h)
	}
	_, err = parts.Manager.CreateInstance(ctx, v1.CreateRequest{ContainerID: "c", Cgroup: "/x", Memory: 1})
	if err == nil || !strings.HasPrefix(err.Error(), v1.ErrorPrefixCreate) {
		t.Errorf("create without a module: %v", err)
	}
	if len(parts.Collectors) != 1 {
		t.Errorf("%d collectors", len(parts.Collectors))
	}
}

// A second daemon on the same state directory fails at Build (bbolt's
// lock) instead of sharing the store.
func TestBuildStateLocked(t *testing.T) {
	dir := t.TempDir()
	c := config.Default()
	c.StateDir = filepath.Join(dir, "state")
	c.DevDir = filepath.Join(dir, "dev")
	c.ProcRoot = filepath.Join(dir, "proc")
	c.CgroupRoot = dir
	c.DeviceFilter = false
	log := logrus.New()
	log.SetOutput(io.Discard)
	p1, err := Build(context.Background(), c, log)
	if err != nil {
		t.Fatal(err)
	}
	defer p1.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if p2, err := Build(ctx, c, log); err == nil {
		p2.Close()
		t.Fatal("two daemons opened one state directory")
	}
}
