package plan

import (
	"context"
	"fmt"
	"time"

	"github.com/spate-dev/spate/experiment"
	"github.com/spate-dev/spate/internal/metrics/observe"
	"github.com/spate-dev/spate/internal/output/telemetry"
	"github.com/spate-dev/spate/internal/scrub"
	"github.com/spate-dev/spate/result"
)

func observeDefaults() experiment.Observe {
	return experiment.Observe{ScrapeInterval: observe.DefaultInterval, OTLPProtocol: telemetry.ProtoHTTP, OTLPInterval: telemetry.DefaultPushInterval}
}

// observeFeature scrapes the server's Prometheus metrics onto the run's
// time line (package observe) and exports spate's own (package telemetry):
// the experiment's observe section.
type observeFeature struct {
	obs *observe.Observer
	exp *telemetry.Exporter
	ctx context.Context
}

func (f *observeFeature) check(_ context.Context, x *experiment.Experiment) error {
	o := x.Observe
	for _, u := range o.Scrape {
		if err := observe.CheckEndpoint(u); err != nil {
			return invalidf("--scrape: %v", err)
		}
	}
	if o.ScrapeInterval <= 0 {
		return invalidf("--scrape-interval %v: want a positive duration, e.g. 1s", o.ScrapeInterval)
	}
	if len(o.ScrapeMetrics) > 0 && len(o.Scrape) == 0 {
		return invalidf("--scrape-metric needs a --scrape URL to scrape it from")
	}
	for _, m := range o.ScrapeMetrics {
		if _, err := observe.ParseSelector(m); err != nil {
			return invalidf("--scrape-metric: %v", err)
		}
	}
	if o.OTLPEndpoint != "" {
		if err := telemetry.CheckOTLP(o.OTLPEndpoint, o.OTLPProtocol); err != nil {
			return invalidf("--otlp-endpoint/--otlp-protocol: %v", err)
		}
	}
	if o.OTLPTraces && o.OTLPEndpoint == "" {
		return invalidf("--otlp-traces needs --otlp-endpoint")
	}
	if o.OTLPInterval <= 0 {
		return invalidf("--otlp-interval %v: want a positive duration", o.OTLPInterval)
	}
	return nil
}

// start makes sure the exporters are flushed however the run ends.
func (f *observeFeature) start(ctx context.Context, r *Run) error {
	f.ctx = ctx
	r.onClose(func() { f.close(r) })
	return nil
}

// apply adds the scraper and the exporter to the plan's observers.
func (f *observeFeature) apply(ctx context.Context, r *Run) error {
	o, p := r.X.Observe, &r.Plan
	if len(o.Scrape) > 0 {
		var sels []observe.Selector
		for _, m := range o.ScrapeMetrics {
			sel, _ := observe.ParseSelector(m) // checked
			sels = append(sels, sel)
		}
		f.obs = observe.New(observe.Config{Endpoints: o.Scrape, Interval: o.ScrapeInterval, Metrics: sels})
		p.Observers = append(p.Observers, f.obs)
	}
	if o.MetricsAddr == "" && o.OTLPEndpoint == "" {
		return nil
	}
	exp, err := telemetry.Start(ctx, telemetry.Config{
		MetricsAddr: o.MetricsAddr, OTLPEndpoint: o.OTLPEndpoint, OTLPProtocol: o.OTLPProtocol,
		OTLPTraces: o.OTLPTraces, PushInterval: o.OTLPInterval,
		Endpoint: scrub.URL(r.X.Target.URL), Version: r.env.Version, Errors: r.stderr(),
	})
	if err != nil {
		return err
	}
	f.exp = exp
	if a := exp.Addr(); a != "" && !r.quiet() {
		fmt.Fprintf(r.stderr(), "serving live metrics at http://%s/metrics\n", a)
	}
	p.Observers = append(p.Observers, exp)
	return nil
}

// finish flushes the exporters once the result is written.
func (f *observeFeature) finish(r *Run, _ *result.Result) error {
	f.close(r)
	return nil
}

// close stops scraping and flushes and stops the exporters (again a
// no-op); a failed flush is a warning: the run's result stands.
func (f *observeFeature) close(r *Run) {
	if f.obs != nil {
		f.obs.Close()
	}
	if f.exp == nil {
		return
	}
	// An interrupt cancels the run's context: flush on a context of our own.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(f.ctx), 10*time.Second)
	defer cancel()
	if err := f.exp.Shutdown(ctx); err != nil {
		fmt.Fprintf(r.stderr(), "warning: %v\n", err)
	}
}
