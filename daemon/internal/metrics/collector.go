// Package metrics exposes cgpud's numbers to Prometheus: one collector that
// builds const metrics at scrape time from the daemon's source of truth
// (the kernel's per-instance counters through the instance manager), as
// node_exporter's collectors do.
package metrics

import (
	"context"
	"io"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sirupsen/logrus"

	v1 "github.com/cgpu-dev/cgpu/daemon/api/v1"
)

// Source is what the collector reads at each scrape; the daemon's instance
// manager provides it.
type Source interface {
	GPUs(ctx context.Context) ([]v1.GPU, error)
	Instances(ctx context.Context) ([]v1.Instance, error)
	Health(ctx context.Context) v1.Health
}

const namespace = "cgpu"

var (
	gpuLabels  = []string{"gpu", "uuid"}
	instLabels = []string{"name", "container", "gpu"}

	gpuMemTotal = prometheus.NewDesc(namespace+"_gpu_memory_total_bytes",
		"Memory of the GPU.", gpuLabels, nil)
	gpuMemAllocated = prometheus.NewDesc(namespace+"_gpu_memory_allocated_bytes",
		"Sum of the memory limits of the cgpu instances on the GPU.", gpuLabels, nil)
	gpuMemUsed = prometheus.NewDesc(namespace+"_gpu_memory_used_bytes",
		"Memory held now by the processes of the cgpu instances on the GPU.", gpuLabels, nil)
	gpuInstances = prometheus.NewDesc(namespace+"_gpu_instances",
		"cgpu instances on the GPU.", gpuLabels, nil)
	gpuMaxInstances = prometheus.NewDesc(namespace+"_gpu_max_instances",
		"Most cgpu instances the GPU takes.", gpuLabels, nil)

	instLimit = prometheus.NewDesc(namespace+"_instance_memory_limit_bytes",
		"Memory limit of the instance on the GPU.", instLabels, nil)
	instUsed = prometheus.NewDesc(namespace+"_instance_memory_used_bytes",
		"Memory the instance's processes hold now on the GPU.", instLabels, nil)
	instPeak = prometheus.NewDesc(namespace+"_instance_memory_peak_bytes",
		"Highest memory the instance's processes held on the GPU.", instLabels, nil)
	instAllocs = prometheus.NewDesc(namespace+"_instance_allocations_total",
		"GPU memory allocations charged to the instance.", instLabels, nil)
	instRefused = prometheus.NewDesc(namespace+"_instance_refused_allocations_total",
		"GPU memory allocations refused because they would exceed the limit.", instLabels, nil)
	instRefusedManaged = prometheus.NewDesc(namespace+"_instance_refused_managed_total",
		"Managed (unified) memory mappings refused.", instLabels, nil)
	instProcs = prometheus.NewDesc(namespace+"_instance_processes",
		"Processes holding memory in the instance.", instLabels, nil)

	up = prometheus.NewDesc(namespace+"_up",
		"1 when every health check of the daemon passes.", nil, nil)
	healthCheck = prometheus.NewDesc(namespace+"_health_check",
		"1 when the health check passes.", []string{"check"}, nil)
	scrapeDuration = prometheus.NewDesc(namespace+"_scrape_duration_seconds",
		"Time the scrape took to read the source.", []string{"source"}, nil)
	scrapeSuccess = prometheus.NewDesc(namespace+"_scrape_success",
		"1 when the scrape read the source.", []string{"source"}, nil)
)

// Collector is a prometheus.Collector over a Source.
type Collector struct {
	src     Source
	timeout time.Duration
	now     func() time.Time
	log     logrus.FieldLogger
}

var _ prometheus.Collector = (*Collector)(nil)

// Option configures New.
type Option func(*Collector)

// WithTimeout bounds each scrape's reads of the source (default 5 s).
func WithTimeout(d time.Duration) Option { return func(c *Collector) { c.timeout = d } }

// WithClock replaces time.Now for the scrape durations.
func WithClock(now func() time.Time) Option { return func(c *Collector) { c.now = now } }

// WithLogger logs the sources that fail a scrape (silent by default).
func WithLogger(l logrus.FieldLogger) Option { return func(c *Collector) { c.log = l } }

// New returns a collector over src.
func New(src Source, opts ...Option) *Collector {
	l := logrus.New()
	l.SetOutput(io.Discard)
	c := &Collector{src: src, timeout: 5 * time.Second, now: time.Now, log: l}
	for _, o := range opts {
		o(c)
	}
	return c
}

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{
		gpuMemTotal, gpuMemAllocated, gpuMemUsed, gpuInstances, gpuMaxInstances,
		instLimit, instUsed, instPeak, instAllocs, instRefused, instRefusedManaged, instProcs,
		up, healthCheck, scrapeDuration, scrapeSuccess,
	} {
		ch <- d
	}
}

// Collect implements prometheus.Collector. A source that fails leaves its
// metrics out and reports cgpu_scrape_success 0.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	c.timed(ch, "gpus", func() error {
		gpus, err := c.src.GPUs(ctx)
		if err != nil {
			return err
		}
		for _, g := range gpus {
			l := []string{strconv.Itoa(g.Index), g.UUID}
			ch <- prometheus.MustNewConstMetric(gpuMemTotal, prometheus.GaugeValue, float64(g.MemoryTotal), l...)
			ch <- prometheus.MustNewConstMetric(gpuMemAllocated, prometheus.GaugeValue, float64(g.MemoryAllocated), l...)
			ch <- prometheus.MustNewConstMetric(gpuMemUsed, prometheus.GaugeValue, float64(g.MemoryUsed), l...)
			ch <- prometheus.MustNewConstMetric(gpuInstances, prometheus.GaugeValue, float64(g.Instances), l...)
			ch <- prometheus.MustNewConstMetric(gpuMaxInstances, prometheus.GaugeValue, float64(g.MaxInstances), l...)
		}
		return nil
	})
	c.timed(ch, "instances", func() error {
		insts, err := c.src.Instances(ctx)
		if err != nil {
			return err
		}
		for _, in := range insts {
			for _, g := range in.GPUs {
				l := []string{in.Name, in.ContainerID, strconv.Itoa(g.Index)}
				ch <- prometheus.MustNewConstMetric(instLimit, prometheus.GaugeValue, float64(in.Memory), l...)
				ch <- prometheus.MustNewConstMetric(instUsed, prometheus.GaugeValue, float64(g.Used), l...)
				ch <- prometheus.MustNewConstMetric(instPeak, prometheus.GaugeValue, float64(g.Peak), l...)
				ch <- prometheus.MustNewConstMetric(instAllocs, prometheus.CounterValue, float64(g.Allocs), l...)
				ch <- prometheus.MustNewConstMetric(instRefused, prometheus.CounterValue, float64(g.RefusedAllocs), l...)
				ch <- prometheus.MustNewConstMetric(instRefusedManaged, prometheus.CounterValue, float64(g.RefusedManaged), l...)
				ch <- prometheus.MustNewConstMetric(instProcs, prometheus.GaugeValue, float64(g.Processes), l...)
			}
		}
		return nil
	})
	c.timed(ch, "health", func() error {
		h := c.src.Health(ctx)
		ch <- prometheus.MustNewConstMetric(up, prometheus.GaugeValue, boolValue(h.Status == "ok"))
		for _, chk := range h.Checks {
			ch <- prometheus.MustNewConstMetric(healthCheck, prometheus.GaugeValue, boolValue(chk.OK), chk.Name)
		}
		return nil
	})
}

// timed runs one source read and reports its duration and success.
func (c *Collector) timed(ch chan<- prometheus.Metric, source string, read func() error) {
	start := c.now()
	err := read()
	if err != nil {
		// The scrape itself succeeds without these metrics; success 0 says so.
		c.log.WithError(err).WithField("source", source).Warn("metrics scrape")
	}
	ch <- prometheus.MustNewConstMetric(scrapeDuration, prometheus.GaugeValue, c.now().Sub(start).Seconds(), source)
	ch <- prometheus.MustNewConstMetric(scrapeSuccess, prometheus.GaugeValue, boolValue(err == nil), source)
}

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
