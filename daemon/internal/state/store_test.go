package state

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sync"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

func openT(t *testing.T, dir string, opts ...Option) *Store {
	t.Helper()
	s, err := Open(append([]Option{WithDir(dir)}, opts...)...)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func rec(name string) Record {
	return Record{
		Name: name, ContainerID: "c-" + name, Cgroup: "/kubepods/" + name, CgroupID: 42,
		Memory: 1 << 30, Weight: 1, Placement: "binpack", State: StateReady,
		Created: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
		Slots:   []Slot{{GPU: 0, UUID: "GPU-0", Minor: 0, KernelID: 7}, {GPU: 1, UUID: "GPU-1", Minor: 1}},
	}
}

func TestPutGetListDelete(t *testing.T) {
	ctx := context.Background()
	s := openT(t, t.TempDir())
	if _, err := s.Get(ctx, "a"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get of nothing: %v, want ErrNotFound", err)
	}
	for _, n := range []string{"b", "a", "c"} {
		if err := s.Put(ctx, rec(n)); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.Get(ctx, "a")
	if err != nil || !reflect.DeepEqual(got, rec("a")) {
		t.Fatalf("Get = %+v, %v; want %+v", got, err, rec("a"))
	}
	list, err := s.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range list {
		names = append(names, r.Name)
	}
	if !reflect.DeepEqual(names, []string{"a", "b", "c"}) {
		t.Fatalf("List names = %v", names)
	}
	if err := s.Delete(ctx, "b"); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, "b"); err != nil {
		t.Fatalf("second Delete: %v", err)
	}
	if _, err := s.Get(ctx, "b"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get after Delete: %v", err)
	}
	if err := s.Put(ctx, Record{}); err == nil {
		t.Fatal("Put of a nameless record succeeded")
	}
}

func TestReopenKeepsRecords(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := Open(WithDir(dir))
	if err != nil {
		t.Fatal(err)
	}
	r := rec("x")
	r.State = StateCreating
	if err := s.Put(ctx, r); err != nil {
		t.Fatal(err)
	}
	// A write queued without waiting is still committed by Close.
	r2 := rec("y")
	done := s.PutNoWait(r2)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("queued write: %v", err)
	}
	if err := s.Put(ctx, rec("z")); !errors.Is(err, ErrClosed) {
		t.Fatalf("Put after Close: %v, want ErrClosed", err)
	}
	s2 := openT(t, dir)
	list, err := s2.List(ctx)
	if err != nil || len(list) != 2 || !reflect.DeepEqual(list[0], r) || !reflect.DeepEqual(list[1], r2) {
		t.Fatalf("after reopen: %+v, %v", list, err)
	}
}

func TestSecondOpenIsLocked(t *testing.T) {
	dir := t.TempDir()
	openT(t, dir)
	start := time.Now()
	_, err := Open(WithDir(dir), WithLockTimeout(100*time.Millisecond))
	if !errors.Is(err, ErrLocked) {
		t.Fatalf("second Open: %v, want ErrLocked", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("second Open took %v", d)
	}
}

func TestSchemaMismatchRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucket(bucketMeta)
		if err != nil {
			return err
		}
		return b.Put(keySchema, []byte("99"))
	}); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if _, err := Open(WithPath(path)); !errors.Is(err, ErrSchema) {
		t.Fatalf("Open of schema 99: %v, want ErrSchema", err)
	}
}

func TestOpenCreatesDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "var", "lib", "cgpu")
	s := openT(t, dir)
	if s.Path() != filepath.Join(dir, FileName) {
		t.Fatalf("Path = %s", s.Path())
	}
	if _, err := os.Stat(s.Path()); err != nil {
		t.Fatal(err)
	}
}

// TestConcurrentWritesShareCommits holds the first commit until every
// other writer has queued, so the rest must go in one group.
func TestConcurrentWritesShareCommits(t *testing.T) {
	ctx := context.Background()
	s := openT(t, t.TempDir())
	const n = 64
	release := make(chan struct{})
	var releaseOnce sync.Once
	unblock := func() { releaseOnce.Do(func() { close(release) }) }
	t.Cleanup(unblock) // before the store's Close, which waits for the writer
	held := make(chan int, 1)
	var once sync.Once
	var sizes []int
	var mu sync.Mutex
	s.beforeCommit = func(size int) {
		mu.Lock()
		sizes = append(sizes, size)
		mu.Unlock()
		once.Do(func() {
			held <- size
			<-release
		})
	}
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- s.Put(ctx, rec(fmt.Sprintf("i%02d", i)))
		}()
	}
	// The first group is held in its commit; wait for the others to queue.
	first := <-held
	deadline := time.Now().Add(10 * time.Second)
	for first+s.queued() < n {
		if time.Now().After(deadline) {
			t.Fatalf("only %d+%d writes queued", first, s.queued())
		}
		time.Sleep(time.Millisecond)
	}
	unblock()
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	want := uint64(2) // the held group, then all the others at once
	if first == n {
		want = 1
	}
	commits, writes := s.Counts()
	if commits != want || writes != n {
		t.Fatalf("commits, writes = %d, %d; want %d, %d (groups %v)", commits, writes, want, n, sizes)
	}
	list, _ := s.List(ctx)
	if len(list) != n {
		t.Fatalf("%d records, want %d", len(list), n)
	}
}

// TestFailedWriteSparesItsGroup: a write whose function fails gets its
// error; the others of its group are committed.
func TestFailedWriteSparesItsGroup(t *testing.T) {
	ctx := context.Background()
	s := openT(t, t.TempDir())
	release := make(chan struct{})
	var once, releaseOnce sync.Once
	t.Cleanup(func() { releaseOnce.Do(func() { close(release) }) })
	s.beforeCommit = func(int) { once.Do(func() { <-release }) }
	first := s.PutNoWait(rec("first"))
	boom := errors.New("boom")
	a := s.PutNoWait(rec("a"))
	bad := s.submit(func(*bolt.Tx) error { return boom }, false)
	b := s.PutNoWait(rec("b"))
	releaseOnce.Do(func() { close(release) })
	for _, c := range []<-chan error{first, a, b} {
		if err := <-c; err != nil {
			t.Fatal(err)
		}
	}
	if err := <-bad; !errors.Is(err, boom) {
		t.Fatalf("bad write: %v", err)
	}
	for _, n := range []string{"first", "a", "b"} {
		if _, err := s.Get(ctx, n); err != nil {
			t.Fatalf("Get %s: %v", n, err)
		}
	}
}

// TestWritesLandInOrder: a delete queued after a put of the same name wins,
// and a put queued after a delete wins.
func TestWritesLandInOrder(t *testing.T) {
	ctx := context.Background()
	s := openT(t, t.TempDir())
	for i := range 50 {
		n := fmt.Sprintf("r%d", i)
		s.PutNoWait(rec(n))
		if i%2 == 0 {
			s.DeleteNoWait(n)
		}
	}
	r := rec("r1")
	r.Weight = 9
	if err := s.Put(ctx, r); err != nil {
		t.Fatal(err)
	}
	list, _ := s.List(ctx)
	if len(list) != 25 {
		t.Fatalf("%d records, want 25", len(list))
	}
	if got, _ := s.Get(ctx, "r1"); got.Weight != 9 {
		t.Fatalf("r1 weight %d, want the later write's 9", got.Weight)
	}
}
