// Package buildinfo carries the version stamped into every binary at link
// time (-X github.com/cgpu-dev/cgpu/internal/buildinfo.Version=...).
package buildinfo

// Version is `git describe` of the tree the binary was built from.
var Version = "0.0.0-dev"
