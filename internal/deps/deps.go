//go:build tools

// Package deps pins the modules the daemon and CLI are being built on, so
// go.mod and go.sum hold them while the code that imports them lands. It is
// never compiled (build tag tools).
package deps

import (
	_ "github.com/BurntSushi/toml"
	_ "github.com/NVIDIA/go-nvml/pkg/nvml"
	_ "github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxa100"
	_ "github.com/cilium/ebpf"
	_ "github.com/cilium/ebpf/asm"
	_ "github.com/cilium/ebpf/link"
	_ "github.com/cilium/ebpf/rlimit"
	_ "github.com/coreos/go-systemd/v22/activation"
	_ "github.com/coreos/go-systemd/v22/daemon"
	_ "github.com/coreos/go-systemd/v22/journal"
	_ "github.com/prometheus/client_golang/prometheus"
	_ "github.com/prometheus/client_golang/prometheus/promhttp"
	_ "github.com/prometheus/client_golang/prometheus/testutil"
	_ "github.com/sirupsen/logrus"
	_ "github.com/spf13/cobra"
	_ "github.com/spf13/cobra/doc"
	_ "go.etcd.io/bbolt"
	_ "tags.cncf.io/container-device-interface/pkg/cdi"
	_ "tags.cncf.io/container-device-interface/specs-go"
)
