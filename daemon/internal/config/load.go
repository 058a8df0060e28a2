package config

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"reflect"
	"sort"
	"strings"
	"time"

	"github.com/BurntSushi/toml"
)

// Decode reads a TOML document over the defaults. Unknown keys are an
// error, and so is a value that does not validate.
func Decode(r io.Reader, source string) (Config, error) {
	c := Default()
	md, err := toml.NewDecoder(r).Decode(&c)
	if err != nil {
		return Config{}, fmt.Errorf("%s: %w", source, err)
	}
	if und := md.Undecoded(); len(und) > 0 {
		keys := make([]string, len(und))
		for i, k := range und {
			keys[i] = k.String()
		}
		return Config{}, fmt.Errorf("%s: unknown keys: %s", source, strings.Join(keys, ", "))
	}
	if err := c.Validate(); err != nil {
		return Config{}, fmt.Errorf("%s: %w", source, err)
	}
	return c, nil
}

// LoadFile reads path over the defaults.
func LoadFile(path string) (Config, error) {
	f, err := os.Open(path)
	if err != nil {
		return Config{}, fmt.Errorf("config: %w", err)
	}
	defer f.Close()
	return Decode(f, path)
}

// Loader remembers the command line so that a reload re-reads the file and
// applies the same flags over it.
type Loader struct {
	// Path is the config file; when it is DefaultPath and was not given
	// explicitly, it may be missing.
	Path        string
	explicit    bool
	flags       Config
	set         []string // keys given as flags
	ShowVersion bool
}

// Parse reads the command line. flag.ErrHelp is returned after the usage
// has been written to out for -h/--help.
func Parse(name string, args []string, out io.Writer) (*Loader, error) {
	l := &Loader{flags: Default()}
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(out)
	fs.StringVar(&l.Path, "config", DefaultPath, "the TOML config file (optional at the default path)")
	fs.BoolVar(&l.ShowVersion, "version", false, "print the version and exit")
	bind(fs, &l.flags)
	fs.Usage = func() {
		fmt.Fprintf(out, `Usage: %s [flags]

cgpud is the cgpu node daemon: it discovers the GPUs, keeps each container's
GPU memory slice in cgpu.ko, and serves the API on a Unix socket
(%s by default). Settings come from the TOML file given by
--config (every key has a default), and the flags below override it; a
flag's name is the file's key with - for _. SIGHUP re-reads the file
(%s apply at once; other keys need a restart).

Flags:
`, name, Default().Socket, strings.Join(Reloadable, ", "))
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments: %s (see --help)", strings.Join(fs.Args(), " "))
	}
	fs.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "config":
			l.explicit = true
		case "version":
		default:
			l.set = append(l.set, strings.ReplaceAll(f.Name, "-", "_"))
		}
	})
	sort.Strings(l.set)
	return l, nil
}

// Load reads the file (if any) and applies the flags over it.
func (l *Loader) Load() (Config, error) {
	c, err := LoadFile(l.Path)
	if errors.Is(err, fs.ErrNotExist) && !l.explicit {
		c, err = Default(), nil
	}
	if err != nil {
		return Config{}, err
	}
	dst, src := reflect.ValueOf(&c).Elem(), reflect.ValueOf(l.flags)
	for _, key := range l.set {
		for i := range dst.NumField() {
			if dst.Type().Field(i).Tag.Get("toml") == key {
				dst.Field(i).Set(src.Field(i))
			}
		}
	}
	if err := c.Validate(); err != nil {
		return Config{}, fmt.Errorf("flags: %w", err)
	}
	return c, nil
}

// Overrides lists the keys given as flags.
func (l *Loader) Overrides() []string { return append([]string(nil), l.set...) }

// bind defines one flag per key of c, writing into c.
func bind(fs *flag.FlagSet, c *Config) {
	v := reflect.ValueOf(c).Elem()
	t := v.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		key := f.Tag.Get("toml")
		if key == "version" {
			continue // --version prints the version; the format is the file's business
		}
		if f.Tag.Get("flag") == "-" {
			continue // read from the file by another program (env_policy: the hook)
		}
		name := strings.ReplaceAll(key, "_", "-")
		usage := usages[key]
		switch p := v.Field(i).Addr().Interface().(type) {
		case *string:
			fs.StringVar(p, name, *p, usage)
		case *bool:
			fs.BoolVar(p, name, *p, usage)
		case *int:
			fs.IntVar(p, name, *p, usage)
		case *time.Duration:
			fs.DurationVar(p, name, *p, usage)
		default:
			panic(fmt.Sprintf("config: no flag for %s (%T)", key, p))
		}
	}
}

var usages = map[string]string{
	"socket":                  "the API's Unix socket",
	"socket_group":            "group that owns the socket and may read (root-only when it does not exist)",
	"write_group":             "group that may also create, resize and destroy instances (root always may; \"\" = root only)",
	"state_dir":               "directory of the bbolt state",
	"max_connections":         "most connections open at once on the API socket (2..4096); users other than root share this less max_connections_per_uid",
	"max_connections_per_uid": "most connections one uid other than root holds at once on the API socket",
	"metrics_address":         "host:port that serves /metrics over TCP too (empty = socket only)",
	"placement":               "GPU choice when a create names none: binpack or spread",
	"log_level":               "trace, debug, info, warning or error",
	"log_format":              "auto (journald under systemd, else text), text, json or journald",
	"sweep_interval":          "how often to look for container cgroups that are gone",
	"cgroup_root":             "the cgroup v2 mount",
	"bpffs_root":              "the bpffs mount where device filters are pinned",
	"proc_root":               "procfs",
	"dev_dir":                 "where the device nodes are",
	"device_filter":           "attach an eBPF device filter to each container's cgroup",
	"load_module":             "modprobe cgpu at start when /dev/cgpu is missing",
	"cdi_dir":                 "where to write cgpu's CDI spec at start (\"\" = nowhere)",
}
