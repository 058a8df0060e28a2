package server

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Peer is the process at the other end of a connection, as the kernel
// reported it when it connected (SO_PEERCRED), plus its supplementary
// groups read from /proc.
type Peer struct {
	PID    int32
	UID    uint32
	GID    uint32
	Groups []uint32
}

// InGroup says whether gid is the peer's primary or a supplementary group.
func (p Peer) InGroup(gid uint32) bool {
	if p.GID == gid {
		return true
	}
	for _, g := range p.Groups {
		if g == gid {
			return true
		}
	}
	return false
}

// PeerResolver finds who is at the other end of an accepted connection.
type PeerResolver func(c net.Conn) (Peer, error)

// SOPeerCred returns the resolver the daemon uses: SO_PEERCRED on the Unix
// socket, then the Groups: line of /proc/<pid>/status under procRoot. A peer
// that has exited by the time its groups are read keeps its uid and gid
// only, which can only narrow what it may do.
func SOPeerCred(procRoot string) PeerResolver {
	return func(c net.Conn) (Peer, error) {
		uc, ok := c.(*net.UnixConn)
		if !ok {
			return Peer{}, fmt.Errorf("peer credentials: %T is not a Unix connection", c)
		}
		raw, err := uc.SyscallConn()
		if err != nil {
			return Peer{}, fmt.Errorf("peer credentials: %w", err)
		}
		var cred *unix.Ucred
		var credErr error
		if err := raw.Control(func(fd uintptr) {
			cred, credErr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
		}); err != nil {
			return Peer{}, fmt.Errorf("peer credentials: %w", err)
		}
		if credErr != nil {
			return Peer{}, fmt.Errorf("peer credentials: SO_PEERCRED: %w", credErr)
		}
		p := Peer{PID: cred.Pid, UID: cred.Uid, GID: cred.Gid}
		if p.PID > 0 {
			groups, err := procGroups(procRoot, p.PID)
			if err == nil {
				p.Groups = groups
			}
		}
		return p, nil
	}
}

// procGroups reads the supplementary groups of pid from its status file.
func procGroups(procRoot string, pid int32) ([]uint32, error) {
	f, err := os.Open(filepath.Join(procRoot, strconv.Itoa(int(pid)), "status"))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "Groups:")
		if !ok {
			continue
		}
		var groups []uint32
		for _, field := range strings.Fields(rest) {
			g, err := strconv.ParseUint(field, 10, 32)
			if err != nil {
				return nil, fmt.Errorf("groups of pid %d: %q: %w", pid, field, err)
			}
			groups = append(groups, uint32(g))
		}
		return groups, nil
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return nil, fmt.Errorf("groups of pid %d: no Groups: line", pid)
}

type peerKey struct{}

type peerResult struct {
	peer Peer
	err  error
}

func withPeer(ctx context.Context, p Peer, err error) context.Context {
	return context.WithValue(ctx, peerKey{}, peerResult{peer: p, err: err})
}

// PeerFrom returns the peer of the request's connection.
func PeerFrom(ctx context.Context) (Peer, error) {
	r, ok := ctx.Value(peerKey{}).(peerResult)
	if !ok {
		return Peer{}, errors.New("no peer credentials on this connection")
	}
	return r.peer, r.err
}

// Access is who may do what. Root may do everything; a group id of -1
// grants nothing.
type Access struct {
	ReadGID  int64 // may GET
	WriteGID int64 // may also POST, PATCH, DELETE
	// The groups' names, for the messages of refusals.
	ReadGroup, WriteGroup string
}

// need says who may do what a refused peer tried.
func (a Access) need(write bool) string {
	gid, name := a.ReadGID, a.ReadGroup
	if write {
		gid, name = a.WriteGID, a.WriteGroup
	}
	switch {
	case gid < 0:
		return "only root may"
	case name != "":
		return fmt.Sprintf("root or group %s (gid %d) may", name, gid)
	default:
		return fmt.Sprintf("root or gid %d may", gid)
	}
}

func (a Access) allows(p Peer, write bool) bool {
	if p.UID == 0 {
		return true
	}
	if a.WriteGID >= 0 && p.InGroup(uint32(a.WriteGID)) {
		return true
	}
	if write {
		return false
	}
	return a.ReadGID >= 0 && p.InGroup(uint32(a.ReadGID))
}
