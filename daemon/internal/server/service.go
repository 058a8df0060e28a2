// Package server is cgpud's HTTP/JSON API on its Unix socket (the paths are
// listed in daemon/api/v1): routing, peer authorisation by SO_PEERCRED and
// SO_PEERGROUPS, limits on connections and on how long each may last,
// strict request decoding, the mapping of the Manager's errors to statuses,
// and /metrics.
package server

import (
	"context"

	v1 "github.com/cgpu-dev/cgpu/daemon/api/v1"
)

// Service is what the API needs from the instance Manager
// (internal/instance). Its errors wrap internal/instance's sentinels, which
// decide the HTTP status.
type Service interface {
	Version(ctx context.Context) (v1.Version, error)
	Health(ctx context.Context) v1.Health
	GPUs(ctx context.Context) ([]v1.GPU, error)
	// ListInstances returns every instance, or those of one container when
	// containerID is not empty.
	ListInstances(ctx context.Context, containerID string) ([]v1.Instance, error)
	GetInstance(ctx context.Context, name string) (v1.Instance, error)
	CreateInstance(ctx context.Context, req v1.CreateRequest) (v1.Instance, error)
	ResizeInstance(ctx context.Context, name string, req v1.ResizeRequest) (v1.Instance, error)
	DestroyInstance(ctx context.Context, name string, force bool) error
	Inspect(ctx context.Context) (v1.Inspect, error)
}
