package server

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/sirupsen/logrus/hooks/test"
)

func TestListen(t *testing.T) {
	mygid := os.Getgid()
	lookup := func(name string) (int, error) {
		if name == "cgpu" {
			return mygid, nil
		}
		return -1, fmt.Errorf("group %q: %w", name, fs.ErrNotExist)
	}
	tests := []struct {
		name     string
		group    string
		mode     os.FileMode
		warnings int
	}{
		{"group", "cgpu", 0o660, 0},
		{"missing group stays root-only", "nosuchgroup", 0o600, 1},
		{"no group", "", 0o600, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "run", "cgpu", "cgpud.sock")
			log, hook := test.NewNullLogger()
			ln, err := Listen(path, SocketOptions{Group: tt.group, Lookup: lookup, Log: log})
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			fi, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			if fi.Mode().Perm() != tt.mode || fi.Mode().Type() != fs.ModeSocket {
				t.Errorf("mode %v, want socket %v", fi.Mode(), tt.mode)
			}
			if gid := fi.Sys().(*syscall.Stat_t).Gid; tt.mode == 0o660 && int(gid) != mygid {
				t.Errorf("group %d, want %d", gid, mygid)
			}
			if len(hook.AllEntries()) != tt.warnings {
				t.Errorf("%d log entries, want %d: %v", len(hook.AllEntries()), tt.warnings, hook.AllEntries())
			}
		})
	}
}

func TestListenStaleAndLive(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "s.sock")
	noGroup := SocketOptions{Lookup: func(string) (int, error) { return -1, fs.ErrNotExist }}

	// A socket whose listener is gone but whose file stays: stale.
	stale, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	stale.(*net.UnixListener).SetUnlinkOnClose(false)
	stale.Close()
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("the stale socket should be there: %v", err)
	}
	ln, err := Listen(path, noGroup)
	if err != nil {
		t.Fatalf("a stale socket must be replaced: %v", err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()

	// A second daemon on the same path: refused, the first keeps its socket.
	if ln2, err := Listen(path, noGroup); err == nil {
		ln2.Close()
		t.Fatal("a live daemon's socket was taken over")
	} else if !strings.Contains(err.Error(), "another daemon") {
		t.Errorf("error %v", err)
	}
	c, err := net.Dial("unix", path)
	if err != nil {
		t.Fatalf("the first daemon lost its socket: %v", err)
	}
	c.Close()
}

func TestListenRefuses(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	long := filepath.Join(dir, strings.Repeat("d", 120), "s.sock")
	for name, path := range map[string]string{"regular file": file, "long path": long} {
		t.Run(name, func(t *testing.T) {
			ln, err := Listen(path, SocketOptions{})
			if err == nil {
				ln.Close()
				t.Fatal("Listen succeeded")
			}
		})
	}
	if b, err := os.ReadFile(file); err != nil || string(b) != "x" {
		t.Errorf("the regular file was touched: %q %v", b, err)
	}
}

func TestLookupGroupMissing(t *testing.T) {
	_, err := LookupGroup("cgpu-no-such-group-xyz")
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("error %v, want fs.ErrNotExist", err)
	}
}
