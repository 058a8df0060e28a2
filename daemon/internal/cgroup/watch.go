package cgroup

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// DefaultSweep is how often every watched cgroup is checked, to catch a
// removal whose inotify event was lost (queue overflow, a watch that
// could not be added, a cgroup the kernel removed without an rmdir).
const DefaultSweep = 30 * time.Second

// Gone reports a watched cgroup that no longer exists.
type Gone struct {
	ID   uint64
	Path string // as given to Add
	// By is what noticed: "inotify" or "sweep".
	By string
}

// WatchOption configures a Watcher.
type WatchOption func(*Watcher)

// WithSweep sets the sweep interval (default DefaultSweep).
func WithSweep(d time.Duration) WatchOption { return func(w *Watcher) { w.sweep = d } }

type watch struct {
	path string // as given to Add
	wd   int    // the parent directory's watch; -1: the sweep alone looks after it
	name string // the cgroup's name in its parent
}

// event is what the reader passes on: a watch descriptor and, for an
// entry of a watched directory, its name.
type event struct {
	wd   int
	name string
	self bool // the watched directory itself went (or its watch did)
}

// Watcher tells when watched cgroup directories are removed: at once
// through inotify and, as a safety net, by a periodic sweep. The watch is
// on the cgroup's parent (IN_DELETE names the child): cgroupfs (kernfs)
// sends no IN_DELETE_SELF for a removed cgroup, but an rmdir, which is how
// runtimes remove them, makes the VFS report the entry's deletion.
// cgroup.events' "populated 0" is not taken as an end: a cgroup is empty
// before the container's first process joins it, and an empty cgroup can
// be filled again.
type Watcher struct {
	r     *Resolver
	sweep time.Duration

	mu      sync.Mutex
	watched map[uint64]*watch
	byWD    map[int]map[string]uint64 // parent watch -> child name -> id
	file    *os.File                  // the inotify instance; nil without inotify
	fd      int
	closed  bool
	kick    chan struct{}
}

// NewWatcher returns a Watcher for cgroups under r's mount. Without
// inotify (none left, or not supported) it still works by sweeping.
func NewWatcher(r *Resolver, opts ...WatchOption) (*Watcher, error) {
	w := &Watcher{
		r:       r,
		sweep:   DefaultSweep,
		watched: map[uint64]*watch{},
		byWD:    map[int]map[string]uint64{},
		fd:      -1,
		kick:    make(chan struct{}, 1),
	}
	for _, o := range opts {
		o(w)
	}
	if w.sweep <= 0 {
		return nil, fmt.Errorf("cgroup watcher: sweep interval %v", w.sweep)
	}
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err == nil {
		w.fd = fd
		// Non-blocking, so reads go through the runtime poller and Close
		// interrupts them.
		w.file = os.NewFile(uintptr(fd), "inotify")
	}
	return w, nil
}

// Inotify says whether removals are seen at once (else only by sweeps).
func (w *Watcher) Inotify() bool { return w.file != nil }

// Add watches the cgroup id at path (as Resolver.Resolve takes it). A
// cgroup already gone is reported by the next sweep, which Add hastens.
func (w *Watcher) Add(id uint64, path string) error {
	rel, err := w.r.Rel(path)
	if err != nil {
		return err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return errors.New("cgroup watcher is closed")
	}
	if old, ok := w.watched[id]; ok {
		w.dropLocked(id, old)
	}
	wt := &watch{path: path, wd: -1, name: filepath.Base(rel)}
	if w.file != nil {
		parent := filepath.Join(w.r.root, filepath.Dir(rel))
		wd, err := unix.InotifyAddWatch(w.fd, parent, unix.IN_DELETE|unix.IN_MOVED_FROM|unix.IN_DELETE_SELF|unix.IN_ONLYDIR)
		if err == nil {
			wt.wd = wd
			if w.byWD[wd] == nil {
				w.byWD[wd] = map[string]uint64{}
			}
			w.byWD[wd][wt.name] = id
		}
	}
	w.watched[id] = wt
	if _, err := os.Lstat(filepath.Join(w.r.root, rel)); wt.wd < 0 || err != nil {
		// Gone before its watch was in place, or not watched at all.
		w.kickSweep()
	}
	return nil
}

// Remove stops watching id; unknown ids are fine.
func (w *Watcher) Remove(id uint64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if wt, ok := w.watched[id]; ok {
		w.dropLocked(id, wt)
	}
}

func (w *Watcher) dropLocked(id uint64, wt *watch) {
	delete(w.watched, id)
	if wt.wd < 0 {
		return
	}
	names := w.byWD[wt.wd]
	if names[wt.name] == id {
		delete(names, wt.name)
	}
	if len(names) == 0 {
		delete(w.byWD, wt.wd)
		if !w.closed {
			unix.InotifyRmWatch(w.fd, uint32(wt.wd))
		}
	}
}

// Watched returns how many cgroups are watched.
func (w *Watcher) Watched() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.watched)
}

func (w *Watcher) kickSweep() {
	select {
	case w.kick <- struct{}{}:
	default:
	}
}

// Run reports each watched cgroup that disappears to gone (once; it is
// no longer watched then) until ctx ends, and then closes the Watcher.
// gone runs on Run's goroutine and may call Add and Remove.
func (w *Watcher) Run(ctx context.Context, gone func(Gone)) error {
	defer w.Close()
	events := make(chan event, 64)
	overflow := make(chan struct{}, 1)
	if w.file != nil {
		go w.read(events, overflow)
	}
	tick := time.NewTicker(w.sweep)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev := <-events:
			for _, id := range w.idsOf(ev) {
				w.check(id, "inotify", gone)
			}
		case <-overflow:
			w.sweepAll(gone)
		case <-w.kick:
			w.sweepAll(gone)
		case <-tick.C:
			w.sweepAll(gone)
		}
	}
}

// read passes removal events on until the file is closed.
func (w *Watcher) read(events chan<- event, overflow chan<- struct{}) {
	buf := make([]byte, 64*(unix.SizeofInotifyEvent+unix.NAME_MAX+1))
	for {
		n, err := w.file.Read(buf)
		if err != nil {
			return
		}
		for off := 0; off+unix.SizeofInotifyEvent <= n; {
			ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
			nameAt := off + unix.SizeofInotifyEvent
			off = nameAt + int(ev.Len)
			switch {
			case ev.Mask&unix.IN_Q_OVERFLOW != 0:
				select {
				case overflow <- struct{}{}:
				default:
				}
			case ev.Mask&(unix.IN_DELETE|unix.IN_MOVED_FROM) != 0 && ev.Len > 0 && off <= n:
				name := buf[nameAt:off]
				if i := bytes.IndexByte(name, 0); i >= 0 {
					name = name[:i]
				}
				events <- event{wd: int(ev.Wd), name: string(name)}
			case ev.Mask&(unix.IN_DELETE_SELF|unix.IN_IGNORED) != 0:
				events <- event{wd: int(ev.Wd), self: true}
			}
		}
	}
}

// idsOf returns the watched cgroups an event may concern: the named child,
// or every child of a parent that went.
func (w *Watcher) idsOf(ev event) []uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	names := w.byWD[ev.wd]
	if !ev.self {
		if id, ok := names[ev.name]; ok {
			return []uint64{id}
		}
		return nil
	}
	ids := make([]uint64, 0, len(names))
	for _, id := range names {
		ids = append(ids, id)
	}
	return ids
}

// check confirms that id is gone before it reports it: an entry of the
// same name may have been made again, and IN_IGNORED also comes when a
// watch is removed for other reasons. A cgroup that cannot be checked (an
// error other than absence, or a mount that is not sound) is kept: an
// instance is destroyed only when its cgroup is surely gone.
func (w *Watcher) check(id uint64, by string, gone func(Gone)) {
	w.mu.Lock()
	wt, ok := w.watched[id]
	w.mu.Unlock()
	if !ok {
		return
	}
	exists, err := w.r.Exists(id, wt.path)
	if err == nil && !exists {
		err = w.r.CheckRoot()
	}
	if err != nil || exists {
		if exists && by == "inotify" {
			// The parent's watch may have gone without the cgroup (an
			// unmount, a watch limit): watch it again.
			w.Add(id, wt.path)
		}
		return
	}
	w.mu.Lock()
	cur, ok := w.watched[id]
	if ok && cur == wt {
		w.dropLocked(id, wt)
	}
	w.mu.Unlock()
	if ok && cur == wt {
		gone(Gone{ID: id, Path: wt.path, By: by})
	}
}

func (w *Watcher) sweepAll(gone func(Gone)) {
	w.mu.Lock()
	ids := make([]uint64, 0, len(w.watched))
	for id := range w.watched {
		ids = append(ids, id)
	}
	w.mu.Unlock()
	for _, id := range ids {
		w.check(id, "sweep", gone)
	}
}

// Close stops the Watcher's inotify instance; Run closes it on return.
func (w *Watcher) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return nil
	}
	w.closed = true
	if w.file != nil {
		return w.file.Close()
	}
	return nil
}
