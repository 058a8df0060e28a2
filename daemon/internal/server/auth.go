package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Peer is the process at the other end of a connection, as the kernel
// recorded it when that process called connect(2): SO_PEERCRED's pid, uid
// and gid and SO_PEERGROUPS' supplementary groups. Nothing about a peer is
// read from /proc: a pid can be reused by another process between connect
// and the read, and that process would lend the connection its groups. The
// pid is for the logs only.
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

// SOPeerCred is the resolver the daemon uses: SO_PEERCRED and SO_PEERGROUPS
// (Linux 4.13+) on the Unix socket, both the credentials the kernel took
// from the peer at connect time, in the daemon's user namespace. A peer
// whose groups cannot be read is refused (an error), not served with fewer
// groups: the kernels cgpu runs on all have SO_PEERGROUPS.
func SOPeerCred(c net.Conn) (Peer, error) {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return Peer{}, fmt.Errorf("peer credentials: %T is not a Unix connection", c)
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return Peer{}, fmt.Errorf("peer credentials: %w", err)
	}
	var p Peer
	var credErr error
	if err := raw.Control(func(fd uintptr) {
		var cred *unix.Ucred
		cred, credErr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
		if credErr != nil {
			credErr = fmt.Errorf("SO_PEERCRED: %w", credErr)
			return
		}
		p = Peer{PID: cred.Pid, UID: cred.Uid, GID: cred.Gid}
		p.Groups, credErr = peerGroups(int(fd))
	}); err != nil {
		return Peer{}, fmt.Errorf("peer credentials: %w", err)
	}
	if credErr != nil {
		return Peer{}, fmt.Errorf("peer credentials: %w", credErr)
	}
	return p, nil
}

// peerGroups reads SO_PEERGROUPS. The kernel answers ERANGE, with the size
// it needs in the length, when the buffer is too small (a peer may have up
// to NGROUPS_MAX, 65536, groups). The groups are a copy taken at connect,
// so the second try fits; a second ERANGE is an error, not a loop.
func peerGroups(fd int) ([]uint32, error) {
	buf := make([]uint32, 64)
	for range 2 {
		size := uint32(len(buf) * 4)
		_, _, errno := unix.Syscall6(unix.SYS_GETSOCKOPT, uintptr(fd), unix.SOL_SOCKET, unix.SO_PEERGROUPS,
			uintptr(unsafe.Pointer(&buf[0])), uintptr(unsafe.Pointer(&size)), 0)
		if errno == unix.ERANGE && int(size) > len(buf)*4 {
			buf = make([]uint32, (size+3)/4)
			continue
		}
		if errno != 0 {
			return nil, fmt.Errorf("SO_PEERGROUPS: %w", errno)
		}
		if size == 0 {
			return nil, nil
		}
		return buf[: size/4 : size/4], nil
	}
	return nil, fmt.Errorf("SO_PEERGROUPS: still too small after resizing to the %d bytes the kernel asked for", len(buf)*4)
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
