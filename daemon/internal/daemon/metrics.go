package daemon

import (
	"context"

	v1 "github.com/cgpu-dev/cgpu/daemon/api/v1"
	"github.com/cgpu-dev/cgpu/daemon/internal/metrics"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/sirupsen/logrus"
)

// metricsSource reads the Manager for internal/metrics' collector.
type metricsSource struct{ m Manager }

func (s metricsSource) GPUs(ctx context.Context) ([]v1.GPU, error) { return s.m.GPUs(ctx) }
func (s metricsSource) Instances(ctx context.Context) ([]v1.Instance, error) {
	return s.m.ListInstances(ctx, "")
}
func (s metricsSource) Health(ctx context.Context) v1.Health { return s.m.Health(ctx) }

// Collector is the metrics collector over m, as /metrics serves it.
func Collector(m Manager, log logrus.FieldLogger) prometheus.Collector {
	return metrics.New(metricsSource{m}, metrics.WithLogger(log))
}
