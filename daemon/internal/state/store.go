// Package state is cgpud's durable record of its instances: a bbolt file
// under /var/lib/cgpu/, written before the kernel is changed so that the
// next start can finish or undo whatever a crash interrupted.
//
// Writes are durable (bbolt fsyncs every commit) and grouped: while one
// commit is in flight the writes that arrive queue, and the next commit
// takes them all, so concurrent creates share one fsync. bbolt's own Batch
// would group too but first waits MaxBatchDelay (10 ms by default) for
// company, which a lone create would pay in full; here a lone write is
// committed at once, by its own goroutine (no hand-off to a writer). Writes
// land in the order they were submitted, which lets a caller queue a write
// without waiting for it (PutNoWait) and still know that a later write of
// the same record lands after it.
package state

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"
)

// DefaultDir holds the state file.
const DefaultDir = "/var/lib/cgpu"

// FileName is the state file's name in its directory.
const FileName = "state.db"

// SchemaVersion is the layout this package reads and writes; a file with
// another one is refused rather than misread.
const SchemaVersion = 1

var (
	ErrNotFound = errors.New("no such record")
	ErrLocked   = errors.New("state file is locked by another process (is another cgpud running?)")
	ErrSchema   = errors.New("unsupported state schema")
	ErrClosed   = errors.New("state store is closed")
)

var (
	bucketMeta      = []byte("meta")
	bucketInstances = []byte("instances")
	keySchema       = []byte("schema")
)

type options struct {
	path     string
	timeout  time.Duration
	maxBatch int
}

// Option configures Open.
type Option func(*options)

// WithDir puts the state file (state.db) in dir instead of DefaultDir.
func WithDir(dir string) Option {
	return func(o *options) { o.path = filepath.Join(dir, FileName) }
}

// WithPath names the state file itself.
func WithPath(path string) Option { return func(o *options) { o.path = path } }

// WithLockTimeout bounds the wait for the file lock another process holds
// (default 1s); then Open fails with ErrLocked.
func WithLockTimeout(d time.Duration) Option { return func(o *options) { o.timeout = d } }

// WithMaxBatch caps the writes committed in one transaction (default 1024).
func WithMaxBatch(n int) Option { return func(o *options) { o.maxBatch = n } }

type write struct {
	fn   func(*bolt.Tx) error
	done chan error
}

// Store is the open state file. Safe for concurrent use.
type Store struct {
	db       *bolt.DB
	path     string
	maxBatch int

	mu      sync.Mutex // guards the fields below
	closed  bool
	pending []write    // queued, in submission order
	leading bool       // a goroutine is committing; it takes pending next
	idle    *sync.Cond // signalled when leading ends

	commits, writes atomic.Uint64
	// beforeCommit, when set (tests), runs before each group's commit.
	beforeCommit func(n int)
}

// Open opens (creating if needed) the state file and starts its writer.
func Open(opts ...Option) (*Store, error) {
	o := options{path: filepath.Join(DefaultDir, FileName), timeout: time.Second, maxBatch: 1024}
	for _, opt := range opts {
		opt(&o)
	}
	if o.maxBatch < 1 {
		o.maxBatch = 1
	}
	if err := os.MkdirAll(filepath.Dir(o.path), 0o700); err != nil {
		return nil, fmt.Errorf("state dir: %w", err)
	}
	db, err := bolt.Open(o.path, 0o600, &bolt.Options{Timeout: o.timeout})
	if errors.Is(err, bolt.ErrTimeout) {
		return nil, fmt.Errorf("open %s: %w", o.path, ErrLocked)
	}
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", o.path, err)
	}
	if err := initSchema(db); err != nil {
		db.Close()
		return nil, fmt.Errorf("open %s: %w", o.path, err)
	}
	s := &Store{db: db, path: o.path, maxBatch: o.maxBatch}
	s.idle = sync.NewCond(&s.mu)
	return s, nil
}

func initSchema(db *bolt.DB) error {
	return db.Update(func(tx *bolt.Tx) error {
		meta, err := tx.CreateBucketIfNotExists(bucketMeta)
		if err != nil {
			return err
		}
		want := strconv.Itoa(SchemaVersion)
		switch v := meta.Get(keySchema); {
		case v == nil:
			if err := meta.Put(keySchema, []byte(want)); err != nil {
				return err
			}
		case string(v) != want:
			return fmt.Errorf("%w: file has %q, this cgpud reads %s", ErrSchema, v, want)
		}
		_, err = tx.CreateBucketIfNotExists(bucketInstances)
		return err
	})
}

// Path is the state file.
func (s *Store) Path() string { return s.path }

// Close commits the writes already queued, then closes the file.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	for s.leading {
		s.idle.Wait()
	}
	s.mu.Unlock()
	return s.db.Close()
}

// submit queues fn and returns the channel its commit's result arrives on.
// With no commit in flight the caller commits at once: on its own
// goroutine when it will wait anyway (inline), else on a new one.
func (s *Store) submit(fn func(*bolt.Tx) error, inline bool) <-chan error {
	done := make(chan error, 1)
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		done <- ErrClosed
		return done
	}
	s.pending = append(s.pending, write{fn: fn, done: done})
	if s.leading {
		s.mu.Unlock()
		return done
	}
	s.leading = true
	s.mu.Unlock()
	if inline {
		s.lead(true)
	} else {
		go s.lead(false)
	}
	return done
}

// lead commits the queued writes group by group until none is left. An
// inline leader stops after the first group, which holds its own write,
// and hands what queued meanwhile to a new goroutine.
func (s *Store) lead(inline bool) {
	for {
		s.mu.Lock()
		if len(s.pending) == 0 {
			s.leading = false
			s.idle.Broadcast()
			s.mu.Unlock()
			return
		}
		n := min(len(s.pending), s.maxBatch)
		group := s.pending[:n:n]
		s.pending = s.pending[n:]
		s.mu.Unlock()
		s.commit(group)
		if inline {
			s.mu.Lock()
			more := len(s.pending) > 0
			if !more {
				s.leading = false
				s.idle.Broadcast()
			}
			s.mu.Unlock()
			if more {
				go s.lead(false)
			}
			return
		}
	}
}

// queued is how many writes wait for the next commit (tests).
func (s *Store) queued() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.pending)
}

// commit runs the group in one transaction. A write whose function fails
// gets its error and the rest are committed without it, so one bad write
// cannot fail its neighbours.
func (s *Store) commit(group []write) {
	for len(group) > 0 {
		if s.beforeCommit != nil {
			s.beforeCommit(len(group))
		}
		failed, ferr := -1, error(nil)
		err := s.db.Update(func(tx *bolt.Tx) error {
			for i, w := range group {
				if err := w.fn(tx); err != nil {
					failed, ferr = i, err
					return err
				}
			}
			return nil
		})
		if err == nil {
			s.commits.Add(1)
			s.writes.Add(uint64(len(group)))
			for _, w := range group {
				w.done <- nil
			}
			return
		}
		if failed < 0 {
			for _, w := range group {
				w.done <- fmt.Errorf("commit state: %w", err)
			}
			return
		}
		group[failed].done <- ferr
		group = append(group[:failed:failed], group[failed+1:]...)
	}
}

// Counts returns the commits made and the writes they carried.
func (s *Store) Counts() (commits, writes uint64) {
	return s.commits.Load(), s.writes.Load()
}

func putFn(rec Record) (func(*bolt.Tx) error, error) {
	if rec.Name == "" {
		return nil, errors.New("record without a name")
	}
	buf, err := json.Marshal(rec)
	if err != nil {
		return nil, fmt.Errorf("encode record %s: %w", rec.Name, err)
	}
	return func(tx *bolt.Tx) error {
		return tx.Bucket(bucketInstances).Put([]byte(rec.Name), buf)
	}, nil
}

// Put writes rec (keyed by its name) and returns once it is on disk. The
// write is queued even if ctx ends while it waits: ctx bounds nothing that
// could leave the file undecided.
func (s *Store) Put(ctx context.Context, rec Record) error {
	fn, err := putFn(rec)
	if err != nil {
		return err
	}
	return wait(s.submit(fn, true))
}

// PutNoWait queues the write of rec and returns at once; the channel
// reports when it is on disk. Writes submitted later land after it.
func (s *Store) PutNoWait(rec Record) <-chan error {
	fn, err := putFn(rec)
	if err != nil {
		done := make(chan error, 1)
		done <- err
		return done
	}
	return s.submit(fn, false)
}

// Delete removes the record of name (absent is fine) once on disk.
func (s *Store) Delete(ctx context.Context, name string) error {
	return wait(s.submit(deleteFn(name), true))
}

// DeleteNoWait queues the removal of name's record, as PutNoWait.
func (s *Store) DeleteNoWait(name string) <-chan error {
	return s.submit(deleteFn(name), false)
}

func deleteFn(name string) func(*bolt.Tx) error {
	return func(tx *bolt.Tx) error {
		return tx.Bucket(bucketInstances).Delete([]byte(name))
	}
}

func wait(done <-chan error) error { return <-done }

// Get reads the record of name.
func (s *Store) Get(ctx context.Context, name string) (Record, error) {
	var rec Record
	err := s.db.View(func(tx *bolt.Tx) error {
		v := tx.Bucket(bucketInstances).Get([]byte(name))
		if v == nil {
			return fmt.Errorf("record %q: %w", name, ErrNotFound)
		}
		return decode(name, v, &rec)
	})
	return rec, err
}

// List reads every record, by name.
func (s *Store) List(ctx context.Context) ([]Record, error) {
	var recs []Record
	err := s.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketInstances).ForEach(func(k, v []byte) error {
			var rec Record
			if err := decode(string(k), v, &rec); err != nil {
				return err
			}
			recs = append(recs, rec)
			return nil
		})
	})
	sort.Slice(recs, func(i, j int) bool { return recs[i].Name < recs[j].Name })
	return recs, err
}

func decode(name string, v []byte, rec *Record) error {
	if err := json.Unmarshal(v, rec); err != nil {
		return fmt.Errorf("decode record %q: %w", name, err)
	}
	return nil
}

// Sync returns once every write queued before it is on disk.
func (s *Store) Sync(ctx context.Context) error {
	return wait(s.submit(func(*bolt.Tx) error { return nil }, true))
}
