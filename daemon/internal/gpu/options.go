package gpu

import (
	"errors"
	"io"

	"github.com/sirupsen/logrus"
)

// ErrNVMLUnavailable means NVML cannot be used: libnvidia-ml.so.1 did not
// load or initialise, or this binary was built without cgo.
var ErrNVMLUnavailable = errors.New("NVML unavailable")

// Option configures New, NewProcfs and NewNVML.
type Option func(*options)

type options struct {
	log      logrus.FieldLogger
	procRoot string
	devDir   string
	noNVML   bool
	nvmlLib  any // an nvml.Interface (tests); kept untyped so !cgo builds
}

func newOptions(opts []Option) options {
	l := logrus.New()
	l.SetOutput(io.Discard)
	o := options{log: l, procRoot: "/proc", devDir: "/dev"}
	for _, opt := range opts {
		opt(&o)
	}
	return o
}

// WithLogger logs which source discovery used and why (silent by default).
func WithLogger(l logrus.FieldLogger) Option { return func(o *options) { o.log = l } }

// WithProcRoot reads <dir>/driver/nvidia instead of /proc's.
func WithProcRoot(dir string) Option { return func(o *options) { o.procRoot = dir } }

// WithDevDir opens <dir>/nvidiactl instead of /dev's.
func WithDevDir(dir string) Option { return func(o *options) { o.devDir = dir } }

// WithoutNVML makes New use procfs only.
func WithoutNVML() Option { return func(o *options) { o.noNVML = true } }
