package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/spate-dev/spate/internal/client/openai"
	"github.com/spate-dev/spate/internal/metrics/observe"
	"github.com/spate-dev/spate/internal/output/telemetry"
	"github.com/spate-dev/spate/internal/runner"
	"github.com/spate-dev/spate/result"
)

func init() {
	runExtensions = append(runExtensions, func() runExtension { return &observeExt{} })
}

// observeExt wires issue 7 into spate run: scraping the server's
// Prometheus metrics (package observe) and exporting spate's own
// (package telemetry).
type observeExt struct {
	scrape         []string
	scrapeInterval time.Duration
	scrapeMetrics  []string
	metricsAddr    string
	otlpEndpoint   string
	otlpProtocol   string
	otlpTraces     bool
	otlpInterval   time.Duration

	obs *observe.Observer
	exp *telemetry.Exporter
}

func (x *observeExt) addFlags(fl *pflag.FlagSet) {
	fl.StringArrayVar(&x.scrape, "scrape", nil, "scrape this Prometheus URL of the server under test during each stage, e.g. http://127.0.0.1:8000/metrics (repeatable)")
	fl.DurationVar(&x.scrapeInterval, "scrape-interval", observe.DefaultInterval, "interval between scrapes of --scrape URLs")
	fl.StringArrayVar(&x.scrapeMetrics, "scrape-metric", nil, "also keep this scraped metric as a series: name or name{label=\"value\"} (repeatable)")
	fl.StringVar(&x.metricsAddr, "metrics-addr", "", "serve spate's live metrics for Prometheus at http://ADDR/metrics, e.g. 127.0.0.1:9464")
	fl.StringVar(&x.otlpEndpoint, "otlp-endpoint", "", "push spate's live metrics over OTLP to this URL, e.g. http://127.0.0.1:4318 (http) or http://127.0.0.1:4317 (grpc)")
	fl.StringVar(&x.otlpProtocol, "otlp-protocol", telemetry.ProtoHTTP, "OTLP protocol: http or grpc")
	fl.BoolVar(&x.otlpTraces, "otlp-traces", false, "also push one span per request over OTLP, with the trace and span id of its traceparent header")
	fl.DurationVar(&x.otlpInterval, "otlp-interval", telemetry.DefaultPushInterval, "interval between OTLP metric pushes")
}

// before checks the flags and makes sure the exporters are flushed
// however the run ends.
func (x *observeExt) before(cmd *cobra.Command, f *runFlags) (func(), error) {
	for _, u := range x.scrape {
		if err := observe.CheckEndpoint(u); err != nil {
			return nil, usageErr("--scrape: %v", err)
		}
	}
	if x.scrapeInterval <= 0 {
		return nil, usageErr("--scrape-interval %v: want a positive duration, e.g. 1s", x.scrapeInterval)
	}
	if len(x.scrapeMetrics) > 0 && len(x.scrape) == 0 {
		return nil, usageErr("--scrape-metric needs a --scrape URL to scrape it from")
	}
	for _, m := range x.scrapeMetrics {
		if _, err := observe.ParseSelector(m); err != nil {
			return nil, usageErr("--scrape-metric: %v", err)
		}
	}
	if x.otlpEndpoint != "" {
		if err := telemetry.CheckOTLP(x.otlpEndpoint, x.otlpProtocol); err != nil {
			return nil, usageErr("--otlp-endpoint/--otlp-protocol: %v", err)
		}
	}
	if x.otlpTraces && x.otlpEndpoint == "" {
		return nil, usageErr("--otlp-traces needs --otlp-endpoint")
	}
	if x.otlpInterval <= 0 {
		return nil, usageErr("--otlp-interval %v: want a positive duration", x.otlpInterval)
	}
	return func() { x.close(cmd) }, nil
}

// after adds the scraper and the exporter to the plan's observers.
func (x *observeExt) after(cmd *cobra.Command, f *runFlags, p *runner.Plan) error {
	if len(x.scrape) > 0 {
		var sels []observe.Selector
		for _, m := range x.scrapeMetrics {
			sel, _ := observe.ParseSelector(m) // checked in before
			sels = append(sels, sel)
		}
		x.obs = observe.New(observe.Config{Endpoints: x.scrape, Interval: x.scrapeInterval, Metrics: sels})
		p.Observers = append(p.Observers, x.obs)
	}
	if x.metricsAddr == "" && x.otlpEndpoint == "" {
		return nil
	}
	exp, err := telemetry.Start(cmd.Context(), telemetry.Config{
		MetricsAddr: x.metricsAddr, OTLPEndpoint: x.otlpEndpoint, OTLPProtocol: x.otlpProtocol,
		OTLPTraces: x.otlpTraces, PushInterval: x.otlpInterval,
		Endpoint: openai.Redact(f.target), Version: version, Errors: cmd.ErrOrStderr(),
	})
	if err != nil {
		return err
	}
	x.exp = exp
	if a := exp.Addr(); a != "" && !f.quiet {
		fmt.Fprintf(cmd.ErrOrStderr(), "serving live metrics at http://%s/metrics\n", a)
	}
	p.Observers = append(p.Observers, exp)
	return nil
}

// finish flushes the exporters once the result is written.
func (x *observeExt) finish(cmd *cobra.Command, f *runFlags, res *result.Result, out string) error {
	x.close(cmd)
	return nil
}

// close stops scraping and flushes and stops the exporters (again a
// no-op); a failed flush is a warning: the run's result stands.
func (x *observeExt) close(cmd *cobra.Command) {
	if x.obs != nil {
		x.obs.Close()
	}
	if x.exp == nil {
		return
	}
	// Ctrl-C cancels the command's context: flush on a context of our own.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(cmd.Context()), 10*time.Second)
	defer cancel()
	if err := x.exp.Shutdown(ctx); err != nil {
		fmt.Fprintf(cmd.ErrOrStderr(), "warning: %v\n", err)
	}
}
