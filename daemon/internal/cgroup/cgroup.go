// Package cgroup resolves container cgroup v2 paths to their ids (the
// directory's inode number, which is what the kernel calls the cgroup id)
// and watches them for removal.
package cgroup

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// DefaultRoot is the cgroup2 mount.
const DefaultRoot = "/sys/fs/cgroup"

var (
	ErrNotFound  = errors.New("no such cgroup")
	ErrInvalid   = errors.New("invalid cgroup path")
	ErrNotCgroup = errors.New("not a cgroup v2 directory")
)

// Cgroup is a resolved cgroup.
type Cgroup struct {
	Rel  string // relative to the mount, with a leading "/": "/kubepods/pod1/c1"
	Path string // absolute on this host: root + Rel
	ID   uint64 // inode number of the directory
}

// Option configures a Resolver.
type Option func(*Resolver)

// WithRoot sets the cgroup2 mount (default DefaultRoot).
func WithRoot(root string) Option { return func(r *Resolver) { r.root = root } }

// WithFSCheck replaces the check that a path lies on cgroup2 (statfs
// magic); tests on a tmp dir pass one that accepts it.
func WithFSCheck(check func(path string) error) Option {
	return func(r *Resolver) { r.fsCheck = check }
}

// Resolver maps paths under one cgroup2 mount to cgroups.
type Resolver struct {
	root    string
	fsCheck func(path string) error
}

// New returns a Resolver.
func New(opts ...Option) *Resolver {
	r := &Resolver{root: DefaultRoot, fsCheck: IsCgroup2}
	for _, o := range opts {
		o(r)
	}
	r.root = filepath.Clean(r.root)
	return r
}

// Root is the cgroup2 mount this resolver works under.
func (r *Resolver) Root() string { return r.root }

// CheckRoot checks that the mount is there and is cgroup2. When it is
// not (unmounted, misconfigured), no cgroup under it can be said to be
// gone, and callers must not act as if they were.
func (r *Resolver) CheckRoot() error {
	fi, err := os.Stat(r.root)
	if err != nil {
		return fmt.Errorf("cgroup root: %w", err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("cgroup root %s: %w", r.root, ErrNotCgroup)
	}
	return r.fsCheck(r.root)
}

// IsCgroup2 checks that path is on a cgroup2 file system.
func IsCgroup2(path string) error {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return fmt.Errorf("statfs %s: %w", path, err)
	}
	if st.Type != unix.CGROUP2_SUPER_MAGIC {
		return fmt.Errorf("%s (file system magic %#x): %w", path, st.Type, ErrNotCgroup)
	}
	return nil
}

// Rel turns what a caller gave — an absolute path under the mount, or a
// path relative to it with or without a leading "/" — into the path
// relative to the mount. It refuses "..", the mount itself and anything
// that is not a plain path.
func (r *Resolver) Rel(path string) (string, error) {
	if path == "" {
		return "", fmt.Errorf("%w: empty", ErrInvalid)
	}
	if strings.ContainsRune(path, 0) || len(path) > unix.PathMax {
		return "", fmt.Errorf("%w: %q", ErrInvalid, path)
	}
	rel := path
	if r.root == "/" {
		rel = path
	} else if path == r.root || strings.HasPrefix(path, r.root+"/") {
		rel = strings.TrimPrefix(path, r.root)
	}
	for _, part := range strings.Split(rel, "/") {
		if part == ".." {
			return "", fmt.Errorf("%w: %q climbs out of %s", ErrInvalid, path, r.root)
		}
	}
	rel = filepath.Clean("/" + rel)
	if rel == "/" {
		return "", fmt.Errorf("%w: %q is the root cgroup", ErrInvalid, path)
	}
	return rel, nil
}

// Resolve finds the cgroup at path (see Rel), checks that it is a cgroup2
// directory reached without symlinks, and returns it with its id.
func (r *Resolver) Resolve(path string) (Cgroup, error) {
	rel, err := r.Rel(path)
	if err != nil {
		return Cgroup{}, err
	}
	abs := filepath.Join(r.root, rel)
	// cgroupfs has no symlinks: one on the way means the path is not what
	// it says, perhaps a way out of the mount.
	real, err := filepath.EvalSymlinks(abs)
	if errors.Is(err, os.ErrNotExist) {
		return Cgroup{}, fmt.Errorf("cgroup %s: %w", abs, ErrNotFound)
	}
	if err != nil {
		return Cgroup{}, fmt.Errorf("cgroup %s: %w: %v", abs, ErrInvalid, err)
	}
	rootReal, err := filepath.EvalSymlinks(r.root)
	if err != nil {
		return Cgroup{}, fmt.Errorf("cgroup root %s: %w", r.root, err)
	}
	if real != filepath.Join(rootReal, rel) {
		return Cgroup{}, fmt.Errorf("%w: %s goes through a symlink (to %s)", ErrInvalid, abs, real)
	}
	id, err := inode(abs)
	if err != nil {
		return Cgroup{}, err
	}
	if err := r.fsCheck(abs); err != nil {
		return Cgroup{}, fmt.Errorf("cgroup %s: %w", abs, err)
	}
	return Cgroup{Rel: rel, Path: abs, ID: id}, nil
}

func inode(abs string) (uint64, error) {
	fi, err := os.Lstat(abs)
	if errors.Is(err, os.ErrNotExist) {
		return 0, fmt.Errorf("cgroup %s: %w", abs, ErrNotFound)
	}
	if err != nil {
		return 0, fmt.Errorf("cgroup %s: %w", abs, err)
	}
	if !fi.IsDir() {
		return 0, fmt.Errorf("%w: %s is not a directory", ErrNotCgroup, abs)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, fmt.Errorf("cgroup %s: no inode number", abs)
	}
	return st.Ino, nil
}

// Exists says whether the cgroup at path (as Resolve takes it) is still
// there and still the one with this id (a cgroup removed and made again
// at the same path is another cgroup).
func (r *Resolver) Exists(id uint64, path string) (bool, error) {
	rel, err := r.Rel(path)
	if err != nil {
		return false, err
	}
	got, err := inode(filepath.Join(r.root, rel))
	if errors.Is(err, ErrNotFound) || errors.Is(err, ErrNotCgroup) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return got == id, nil
}

// Find looks for the cgroups with the given ids under the mount, walking
// its tree (symlinks are not followed; cgroupfs has none), and returns
// those that exist now. It is for a caller that knows a cgroup by its id
// only; the walk costs one stat per cgroup on the host.
func (r *Resolver) Find(ids []uint64) (map[uint64]Cgroup, error) {
	want := make(map[uint64]bool, len(ids))
	for _, id := range ids {
		want[id] = true
	}
	found := map[uint64]Cgroup{}
	if len(want) == 0 {
		return found, nil
	}
	err := filepath.WalkDir(r.root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) && p != r.root {
				return nil // removed during the walk
			}
			return err
		}
		if !d.IsDir() || p == r.root {
			return nil
		}
		fi, err := d.Info()
		if errors.Is(err, fs.ErrNotExist) {
			return fs.SkipDir
		}
		if err != nil {
			return err
		}
		st, ok := fi.Sys().(*syscall.Stat_t)
		if !ok || !want[st.Ino] {
			return nil
		}
		found[st.Ino] = Cgroup{Rel: strings.TrimPrefix(p, strings.TrimSuffix(r.root, "/")), Path: p, ID: st.Ino}
		if len(found) == len(want) {
			return fs.SkipAll
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("find cgroups under %s: %w", r.root, err)
	}
	return found, nil
}
