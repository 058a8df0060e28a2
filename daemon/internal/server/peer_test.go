package server

import (
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// peerChildEnv makes this test binary a client instead: it connects to the
// socket the variable names, writes the request in peerChildEnv_REQUEST
// (if any), copies the answer to stdout and exits. The tests below start it
// with other credentials, so that the peer is another process whose
// groups are known and differ from the test's.
const peerChildEnv = "CGPU_SERVER_TEST_PEER_CHILD"

func init() {
	sock := os.Getenv(peerChildEnv)
	if sock == "" {
		return
	}
	c, err := net.Dial("unix", sock)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	if req := os.Getenv(peerChildEnv + "_REQUEST"); req != "" {
		if _, err := io.WriteString(c, req); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		_, _ = io.Copy(os.Stdout, c)
	}
	c.Close()
	os.Exit(0)
}

// sortedGroups is os.Getgroups as SO_PEERGROUPS gives it: uint32, sorted.
func sortedGroups(t *testing.T) []uint32 {
	t.Helper()
	gs, err := os.Getgroups()
	if err != nil {
		t.Fatal(err)
	}
	out := make([]uint32, len(gs))
	for i, g := range gs {
		out[i] = uint32(g)
	}
	slices.Sort(out)
	return out
}

// acceptOne listens on a socket in dir; the test accepts.
func acceptOne(t *testing.T, dir string) (string, net.Listener) {
	t.Helper()
	sock := filepath.Join(dir, "s.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return sock, ln
}

// TestSOPeerCredOwnProcess: this test process is the peer; the kernel's
// answer is its uid, gid, pid and exactly its supplementary groups.
func TestSOPeerCredOwnProcess(t *testing.T) {
	sock, ln := acceptOne(t, t.TempDir())
	c, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	sc, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	p, err := SOPeerCred(sc)
	if err != nil {
		t.Fatal(err)
	}
	if p.UID != uint32(os.Getuid()) || p.GID != uint32(os.Getgid()) || p.PID != int32(os.Getpid()) {
		t.Errorf("peer %+v, want uid %d gid %d pid %d", p, os.Getuid(), os.Getgid(), os.Getpid())
	}
	got := slices.Clone(p.Groups)
	slices.Sort(got)
	if want := sortedGroups(t); !slices.Equal(got, want) {
		t.Errorf("supplementary groups %v, want %v (os.Getgroups)", got, want)
	}
}

func TestSOPeerCredNotUnix(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	if _, err := SOPeerCred(a); err == nil || !strings.Contains(err.Error(), "not a Unix connection") {
		t.Errorf("error %v", err)
	}
}

// worldDir is a temporary directory that a child running as nobody can
// reach, holding a copy of this test binary it can execute (go test's own
// build directory is root's alone).
func worldDir(t *testing.T) (dir, bin string) {
	t.Helper()
	if os.Getuid() != 0 {
		t.Skip("needs root: starting a peer with other uid and groups takes CAP_SETUID and CAP_SETGID")
	}
	dir = t.TempDir()
	for _, d := range []string{dir, filepath.Dir(dir)} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	bin = filepath.Join(dir, "peer")
	if err := os.WriteFile(bin, b, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir, bin
}

// child runs this binary as a client (peerChildEnv) as uid and gid 65534
// with groups, and returns what it printed.
func child(t *testing.T, bin, sock, request string, groups []uint32) (string, int) {
	t.Helper()
	cmd := exec.Command(bin)
	// GORACE: under -race a binary sleeps a second at exit, by default.
	cmd.Env = []string{peerChildEnv + "=" + sock, peerChildEnv + "_REQUEST=" + request, "GORACE=atexit_sleep_ms=0"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534, Groups: groups}}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("peer child: %v: %s", err, stderr.String())
	}
	return string(out), cmd.Process.Pid
}

// TestPeerGroupsOfAnotherProcess: a client process whose groups differ
// from the test's (which is root) is admitted or refused by the groups the
// kernel recorded for it, through the whole server.
func TestPeerGroupsOfAnotherProcess(t *testing.T) {
	dir, bin := worldDir(t)
	const readGID, writeGID = 4242, 4343
	tests := []struct {
		name, method string
		groups       []uint32
		status       string
	}{
		{"reader and writer", "POST", []uint32{readGID, writeGID}, "201"},
		{"reader may not write", "POST", []uint32{readGID}, "403"},
		{"reader reads", "GET", []uint32{7, readGID}, "200"}, // sorted, as the kernel keeps them
		{"no groups", "GET", nil, "403"},
	}
	var mu sync.Mutex
	var seen Peer
	resolve := func(c net.Conn) (Peer, error) {
		p, err := SOPeerCred(c)
		mu.Lock()
		seen = p
		mu.Unlock()
		return p, err
	}
	sock := filepath.Join(dir, "s.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(sock, 0o666); err != nil {
		t.Fatal(err)
	}
	s := New(&fakeService{}, WithPeerResolver(resolve), WithAccess(Access{ReadGID: readGID, WriteGID: writeGID}))
	done := make(chan error, 1)
	go func() { done <- s.Serve(ln) }()
	defer func() {
		s.Shutdown(t.Context())
		<-done
	}()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := "GET /v1/instances HTTP/1.1\r\nHost: cgpud\r\nConnection: close\r\n\r\n"
			if tt.method == "POST" {
				req = fmt.Sprintf("POST /v1/instances HTTP/1.1\r\nHost: cgpud\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s", len(okCreate), okCreate)
			}
			out, pid := child(t, bin, sock, req, tt.groups)
			if !strings.HasPrefix(out, "HTTP/1.1 "+tt.status+" ") {
				t.Errorf("answer %.200q, want %s", out, tt.status)
			}
			mu.Lock()
			defer mu.Unlock()
			if seen.UID != 65534 || seen.GID != 65534 || seen.PID != int32(pid) || fmt.Sprint(seen.Groups) != fmt.Sprint(tt.groups) {
				t.Errorf("the server saw %+v, want uid/gid 65534, pid %d, groups %v", seen, pid, tt.groups)
			}
		})
	}
}

// TestPeerGroupsOutliveThePeer: the groups are the ones the peer had when
// it connected, also once its pid is gone (and could be another
// process's): nothing is read from /proc/<pid>.
func TestPeerGroupsOutliveThePeer(t *testing.T) {
	dir, bin := worldDir(t)
	sock, ln := acceptOne(t, dir)
	if err := os.Chmod(sock, 0o666); err != nil {
		t.Fatal(err)
	}
	groups := []uint32{4242, 4343}
	_, pid := child(t, bin, sock, "", groups) // connects, exits, is reaped
	if _, err := os.Stat(fmt.Sprintf("/proc/%d/status", pid)); err == nil {
		t.Logf("pid %d already belongs to another process", pid)
	}
	ln.(*net.UnixListener).SetDeadline(time.Now().Add(5 * time.Second))
	sc, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	p, err := SOPeerCred(sc)
	if err != nil {
		t.Fatal(err)
	}
	if p.UID != 65534 || fmt.Sprint(p.Groups) != fmt.Sprint(groups) {
		t.Errorf("peer %+v, want uid 65534 and groups %v", p, groups)
	}
}

// TestSOPeerCredHTTP: the test process through the whole server, as a
// member of the read group but not of the write group.
func TestSOPeerCredHTTP(t *testing.T) {
	if os.Getuid() == 0 {
		t.Skip("running as root, which may do everything: nothing would be refused (TestPeerGroupsOfAnotherProcess covers root's runs)")
	}
	gid := uint32(os.Getgid())
	c := serve(t, New(&fakeService{}, WithAccess(Access{ReadGID: int64(gid), WriteGID: -1})))
	if r := do(t, c, "GET", "/v1/version", "", nil); r.status != 200 {
		t.Fatalf("GET as a member of the read group: %d %s", r.status, r.body)
	}
	if r := do(t, c, "POST", "/v1/instances", "application/json", strings.NewReader(okCreate)); r.status != 403 {
		t.Fatalf("POST without the write group: %d %s", r.status, r.body)
	}
}
