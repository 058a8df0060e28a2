package hook

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
)

// bundleConfig is the part of a bundle's config.json the hook reads. Only
// process is decoded at once; the rest of specs.Spec is kept raw and read
// only when a decision needs it: a field the hook never uses, typed
// otherwise than this runtime-spec version says, must not stop a
// container that asked for no slice.
type bundleConfig struct {
	Process     *specs.Process  `json:"process"`
	Annotations json.RawMessage `json:"annotations"`
	Linux       json.RawMessage `json:"linux"`
	Mounts      json.RawMessage `json:"mounts"`
	Hooks       json.RawMessage `json:"hooks"`
}

// env is process.env, nil without a process.
func (c bundleConfig) env() []string {
	if c.Process == nil {
		return nil
	}
	return c.Process.Env
}

// openConfig opens <bundle>/config.json so that nothing in the bundle can
// make the hook read elsewhere or wait. The hook runs as root on every
// container start, and the runtime waits for it: a FIFO named config.json
// would block it forever (no writer), a symlink would make it read any
// file of the host, a device node an endless or hanging stream. So the
// file is opened relative to the bundle directory's fd, by its one name
// (it is an entry of that directory, never of another), with O_NOFOLLOW
// (a symlink there is refused, wherever it points) and O_NONBLOCK (opening
// a FIFO returns at once), and must then be a regular file by fstat, on
// which O_NONBLOCK changes nothing. The bundle path itself is the
// runtime's, an absolute path that may pass through symlinks (/var/run ->
// /run), so it is followed as given.
func openConfig(bundle string) (*os.File, string, error) {
	if bundle == "" {
		return nil, "", errors.New("container state has no bundle")
	}
	p := filepath.Join(bundle, "config.json")
	if !filepath.IsAbs(bundle) {
		return nil, p, fmt.Errorf("container state's bundle %q is not an absolute path", bundle)
	}
	dfd, err := retryEINTR(func() (int, error) {
		return unix.Open(bundle, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	})
	if err != nil {
		return nil, p, fmt.Errorf("read the bundle's config: %w", &os.PathError{Op: "open", Path: bundle, Err: err})
	}
	defer unix.Close(dfd)
	fd, err := retryEINTR(func() (int, error) {
		return unix.Openat(dfd, "config.json", unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	})
	if errors.Is(err, unix.ELOOP) {
		return nil, p, fmt.Errorf("read the bundle's config: %s is a symbolic link; the hook reads only a regular file in the bundle", p)
	}
	if err != nil {
		return nil, p, fmt.Errorf("read the bundle's config: %w", &os.PathError{Op: "open", Path: p, Err: err})
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, p, fmt.Errorf("read the bundle's config: %w", &os.PathError{Op: "fstat", Path: p, Err: err})
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		unix.Close(fd)
		return nil, p, fmt.Errorf("read the bundle's config: %s is not a regular file (mode %#o)", p, st.Mode&unix.S_IFMT)
	}
	return os.NewFile(uintptr(fd), p), p, nil
}

func retryEINTR(f func() (int, error)) (int, error) {
	for {
		fd, err := f()
		if !errors.Is(err, unix.EINTR) {
			return fd, err
		}
	}
}

// readConfig reads <bundle>/config.json (openConfig), at most maxConfig
// bytes of it.
func readConfig(bundle string) (bundleConfig, error) {
	var spec bundleConfig
	f, p, err := openConfig(bundle)
	if err != nil {
		return spec, err
	}
	defer f.Close()
	lr := &io.LimitedReader{R: bufio.NewReader(f), N: maxConfig + 1}
	err = json.NewDecoder(lr).Decode(&spec)
	if lr.N <= 0 {
		// Checked first: past the bound, the decoder saw a cut text.
		return spec, fmt.Errorf("%s is over %d bytes", p, maxConfig)
	}
	if err != nil {
		return spec, fmt.Errorf("parse %s: %v", p, err)
	}
	return spec, nil
}

// ReadEnv returns process.env of <bundle>/config.json.
func ReadEnv(bundle string) ([]string, error) {
	spec, err := readConfig(bundle)
	if err != nil {
		return nil, err
	}
	return spec.env(), nil
}
