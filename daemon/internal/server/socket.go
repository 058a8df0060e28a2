package server

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/sirupsen/logrus"
)

// maxSocketPath is sun_path's size less its NUL.
const maxSocketPath = 107

// GroupLookup turns a group name into its gid; fs.ErrNotExist (wrapped)
// when there is no such group.
type GroupLookup func(name string) (int, error)

// LookupGroup reads the system's group database (pure Go: /etc/group).
func LookupGroup(name string) (int, error) {
	g, err := user.LookupGroup(name)
	if err != nil {
		var unknown user.UnknownGroupError
		if errors.As(err, &unknown) {
			return -1, fmt.Errorf("group %q: %w", name, fs.ErrNotExist)
		}
		return -1, fmt.Errorf("group %q: %w", name, err)
	}
	gid, err := strconv.Atoi(g.Gid)
	if err != nil {
		return -1, fmt.Errorf("group %q: gid %q: %w", name, g.Gid, err)
	}
	return gid, nil
}

// SocketOptions shape Listen.
type SocketOptions struct {
	// Group owns the socket (mode 0660). Empty, or a group that does not
	// exist, leaves it root-only (0600) with a warning.
	Group  string
	Lookup GroupLookup // LookupGroup when nil
	Log    logrus.FieldLogger
}

// Listen opens the daemon's Unix socket at path: the parent directory is
// created, a stale socket left by a dead daemon is removed (a live one that
// answers makes Listen fail instead), and the socket gets mode 0660 and
// the group. Peers are checked on every connection as well, so the moment
// between bind and chmod exposes nothing.
func Listen(path string, o SocketOptions) (net.Listener, error) {
	if o.Lookup == nil {
		o.Lookup = LookupGroup
	}
	if o.Log == nil {
		o.Log = logrus.StandardLogger()
	}
	if len(path) > maxSocketPath {
		return nil, fmt.Errorf("socket path %s: %d bytes, a Unix socket path takes at most %d", path, len(path), maxSocketPath)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("socket directory: %w", err)
	}
	if err := removeStale(path); err != nil {
		return nil, err
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", path, err)
	}
	mode := os.FileMode(0o660)
	gid := -1
	if o.Group != "" {
		gid, err = o.Lookup(o.Group)
		if err != nil {
			o.Log.WithField("group", o.Group).WithError(err).Warn("socket group not found; the socket stays root-only")
			gid = -1
		}
	}
	if gid < 0 {
		mode = 0o600
	} else if err := os.Chown(path, -1, gid); err != nil {
		ln.Close()
		return nil, fmt.Errorf("chown %s to group %s: %w", path, o.Group, err)
	}
	if err := os.Chmod(path, mode); err != nil {
		ln.Close()
		return nil, fmt.Errorf("chmod %s: %w", path, err)
	}
	return ln, nil
}

// removeStale removes a socket nobody listens on; anything else at path is
// an error.
func removeStale(path string) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("socket %s: %w", path, err)
	}
	if fi.Mode().Type() != fs.ModeSocket {
		return fmt.Errorf("socket %s: a %s is there, not a socket; not removing it", path, fi.Mode().Type())
	}
	c, err := net.DialTimeout("unix", path, time.Second)
	if err == nil {
		c.Close()
		return fmt.Errorf("socket %s: another daemon is listening on it", path)
	}
	if !errors.Is(err, syscall.ECONNREFUSED) {
		return fmt.Errorf("socket %s: probing for a live daemon: %w", path, err)
	}
	if err := os.Remove(path); err != nil {
		return fmt.Errorf("remove stale socket: %w", err)
	}
	return nil
}
