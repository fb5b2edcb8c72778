package telemetry

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/spate-dev/spate/internal/record"
	"github.com/spate-dev/spate/internal/runner"
	"github.com/spate-dev/spate/result"
)

// DefaultPushInterval is how often OTLP metrics are pushed.
const DefaultPushInterval = 5 * time.Second

// Config says where to export.
type Config struct {
	// MetricsAddr, when set, serves Prometheus metrics at
	// http://MetricsAddr/metrics (e.g. 127.0.0.1:9464; port 0 picks one).
	MetricsAddr string
	// OTLPEndpoint, when set, pushes metrics there: a URL such as
	// http://127.0.0.1:4318 (http) or http://127.0.0.1:4317 (grpc).
	OTLPEndpoint string
	// OTLPProtocol is "http" (default) or "grpc".
	OTLPProtocol string
	// OTLPTraces adds one span per request to the OTLP push.
	OTLPTraces bool
	// PushInterval is the OTLP metric push interval (DefaultPushInterval
	// when 0).
	PushInterval time.Duration
	// Endpoint labels every series: the target, credentials removed.
	Endpoint string
	// Version is spate's version, in the OTLP resource.
	Version string
	// Errors, when set, receives the OTLP exporters' errors as they
	// happen (the first few; exports cancelled by the flush at the end
	// are not errors).
	Errors io.Writer
}

// Exporter exports a run's live measurements. It is a runner.Observer;
// Shutdown flushes and stops it.
type Exporter struct {
	cfg    Config
	prom   *promMetrics
	srv    *http.Server
	ln     net.Listener
	served chan error

	mp     *sdkmetric.MeterProvider
	otel   *otelMetrics
	tp     *sdktrace.TracerProvider
	tracer trace.Tracer

	mu     sync.RWMutex
	stages map[string]*stageState
	// cur is the stage that started last: the one nearly every call is
	// for, found without a lock.
	cur atomic.Pointer[stageState]

	once    sync.Once
	downErr error
}

var _ runner.Observer = (*Exporter)(nil)

// stageState is one stage's label values and its bound instruments, per
// intent and outcome.
type stageState struct {
	name, endpoint, load string

	sent     prometheus.Counter
	inFlight prometheus.Gauge
	lag      prometheus.Observer
	base     []string
	// otel options with the stage's attributes
	addBase []metric.AddOption
	recBase []metric.RecordOption

	mu      sync.RWMutex
	intents map[string]*intentState
	outs    map[[2]string]*outcomeState
}

// intentState holds the instruments of one intent of a stage.
type intentState struct {
	ttft, itl, tpot, e2e prometheus.Observer
	in, out              prometheus.Counter
	add                  []metric.AddOption
	rec                  []metric.RecordOption
}

// outcomeState holds the request counter of one intent and outcome.
type outcomeState struct {
	requests prometheus.Counter
	add      []metric.AddOption
}

// Start starts the exporters the config asks for: it listens on
// MetricsAddr at once (so a busy port is an error before the run) and
// connects the OTLP exporters lazily.
func Start(ctx context.Context, cfg Config) (*Exporter, error) {
	if cfg.OTLPProtocol == "" {
		cfg.OTLPProtocol = ProtoHTTP
	}
	if cfg.PushInterval <= 0 {
		cfg.PushInterval = DefaultPushInterval
	}
	e := &Exporter{cfg: cfg, prom: newPromMetrics(), stages: map[string]*stageState{}}
	if cfg.MetricsAddr != "" {
		ln, err := net.Listen("tcp", cfg.MetricsAddr)
		if err != nil {
			return nil, fmt.Errorf("serving Prometheus metrics on %s: %w (choose another --metrics-addr)", cfg.MetricsAddr, err)
		}
		mux := http.NewServeMux()
		mux.Handle("/metrics", promhttp.HandlerFor(e.prom.reg, promhttp.HandlerOpts{EnableOpenMetrics: true}))
		e.ln = ln
		e.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
		e.served = make(chan error, 1)
		go func() { e.served <- e.srv.Serve(ln) }()
	}
	if cfg.OTLPEndpoint != "" {
		if err := CheckOTLP(cfg.OTLPEndpoint, cfg.OTLPProtocol); err != nil {
			e.Shutdown(ctx)
			return nil, err
		}
		otel.SetErrorHandler(errorHandler(cfg.Errors))
		exp, err := newMetricExporter(ctx, cfg.OTLPEndpoint, cfg.OTLPProtocol)
		if err != nil {
			e.Shutdown(ctx)
			return nil, fmt.Errorf("starting the OTLP metric exporter to %s: %w", cfg.OTLPEndpoint, err)
		}
		e.mp = sdkmetric.NewMeterProvider(
			sdkmetric.WithResource(newResource(cfg.Version)),
			sdkmetric.WithReader(sdkmetric.NewPeriodicReader(exp, sdkmetric.WithInterval(cfg.PushInterval))),
			sdkmetric.WithView(exponential),
		)
		if e.otel, err = newOtelMetrics(e.mp.Meter("github.com/spate-dev/spate/internal/output/telemetry")); err != nil {
			e.Shutdown(ctx)
			return nil, err
		}
		if cfg.OTLPTraces {
			texp, err := newTraceExporter(ctx, cfg.OTLPEndpoint, cfg.OTLPProtocol)
			if err != nil {
				e.Shutdown(ctx)
				return nil, fmt.Errorf("starting the OTLP span exporter to %s: %w", cfg.OTLPEndpoint, err)
			}
			e.tp = sdktrace.NewTracerProvider(
				sdktrace.WithResource(newResource(cfg.Version)),
				sdktrace.WithIDGenerator(idGenerator{}),
				sdktrace.WithSampler(sdktrace.AlwaysSample()),
				sdktrace.WithBatcher(texp, sdktrace.WithMaxQueueSize(1<<16), sdktrace.WithBatchTimeout(cfg.PushInterval)),
			)
			e.tracer = e.tp.Tracer("github.com/spate-dev/spate/internal/output/telemetry")
		}
	} else if cfg.OTLPTraces {
		return nil, errors.New("OTLP traces need an OTLP endpoint (--otlp-endpoint)")
	}
	return e, nil
}

// maxErrors is how many export errors are reported.
const maxErrors = 5

// errorHandler reports the OTLP SDK's errors to w, not to the log: the
// first maxErrors, then how many more there were is left to Shutdown's
// error.
func errorHandler(w io.Writer) otel.ErrorHandler {
	var mu sync.Mutex
	n := 0
	return otel.ErrorHandlerFunc(func(err error) {
		if w == nil || errors.Is(err, context.Canceled) {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		n++
		if n <= maxErrors {
			fmt.Fprintf(w, "warning: OTLP export: %v\n", err)
		}
		if n == maxErrors {
			fmt.Fprintln(w, "warning: OTLP export: further errors are not shown")
		}
	})
}

// Addr is the address the Prometheus endpoint listens on ("" when none).
func (e *Exporter) Addr() string {
	if e.ln == nil {
		return ""
	}
	return e.ln.Addr().String()
}

// StageStart binds the stage's label values.
func (e *Exporter) StageStart(_ context.Context, st runner.Stage, _ time.Time) {
	s := &stageState{name: st.Name, endpoint: e.cfg.Endpoint, load: LoadLevel(st), intents: map[string]*intentState{}, outs: map[[2]string]*outcomeState{}}
	s.base = []string{s.name, s.endpoint, s.load}
	s.sent = e.prom.sent.WithLabelValues(s.base...)
	s.inFlight = e.prom.inFlight.WithLabelValues(s.base...)
	s.lag = e.prom.lag.WithLabelValues(s.base...)
	opt := metric.WithAttributes(attrs(s.name, s.endpoint, s.load)...)
	s.addBase, s.recBase = []metric.AddOption{opt}, []metric.RecordOption{opt}
	e.mu.Lock()
	e.stages[st.Name] = s
	e.mu.Unlock()
	e.cur.Store(s)
}

func (e *Exporter) stage(name string) *stageState {
	if s := e.cur.Load(); s != nil && s.name == name {
		return s
	}
	e.mu.RLock()
	s := e.stages[name]
	e.mu.RUnlock()
	return s
}

// Sent counts a request sent and in flight.
func (e *Exporter) Sent(stage string, at, intended time.Time, warmup bool) {
	s := e.stage(stage)
	if s == nil {
		return
	}
	s.inFlight.Inc()
	if e.otel != nil {
		e.otel.inFlight.Add(context.Background(), 1, s.addBase...)
	}
	if warmup {
		return
	}
	s.sent.Inc()
	lag := max(0, at.Sub(intended)).Seconds()
	s.lag.Observe(lag)
	if e.otel != nil {
		e.otel.sent.Add(context.Background(), 1, s.addBase...)
		e.otel.lag.Record(context.Background(), lag, s.recBase...)
	}
}

// Record exports a finished request.
func (e *Exporter) Record(stage string, rec *record.Record) {
	s := e.stage(stage)
	if s == nil {
		return
	}
	s.inFlight.Dec()
	ctx := context.Background()
	if e.otel != nil {
		e.otel.inFlight.Add(ctx, -1, s.addBase...)
	}
	if e.tracer != nil {
		span(e.tracer, s, rec)
	}
	if rec.Warmup {
		return
	}
	is := e.intent(s, rec.Intent)
	os := e.outcome(s, rec.Intent, Outcome(rec))
	os.requests.Inc()
	is.in.Add(float64(rec.InputTokens))
	is.out.Add(float64(rec.OutputTokens))
	if e.otel != nil {
		e.otel.requests.Add(ctx, 1, os.add...)
		e.otel.inputTokens.Add(ctx, int64(rec.InputTokens), is.add...)
		e.otel.outputTokens.Add(ctx, int64(rec.OutputTokens), is.add...)
	}
	if rec.Err != record.OK {
		return
	}
	e2e := rec.End.Sub(rec.Sent).Seconds()
	is.e2e.Observe(e2e)
	if e.otel != nil {
		e.otel.e2e.Record(ctx, e2e, is.rec...)
	}
	if rec.FirstToken.IsZero() {
		return
	}
	ttft := rec.FirstToken.Sub(rec.Sent).Seconds()
	is.ttft.Observe(ttft)
	if e.otel != nil {
		e.otel.ttft.Record(ctx, ttft, is.rec...)
	}
	for _, g := range rec.Gaps {
		is.itl.Observe(g.Seconds())
		if e.otel != nil {
			e.otel.itl.Record(ctx, g.Seconds(), is.rec...)
		}
	}
	if rec.OutputTokens >= 2 {
		tpot := rec.End.Sub(rec.FirstToken).Seconds() / float64(rec.OutputTokens-1)
		is.tpot.Observe(tpot)
		if e.otel != nil {
			e.otel.tpot.Record(ctx, tpot, is.rec...)
		}
	}
}

// intent returns the stage's instruments for an intent, binding them the
// first time.
func (e *Exporter) intent(s *stageState, intent string) *intentState {
	s.mu.RLock()
	is := s.intents[intent]
	s.mu.RUnlock()
	if is != nil {
		return is
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if is = s.intents[intent]; is != nil {
		return is
	}
	lv := append(s.base[:3:3], intentLabel(intent))
	opt := metric.WithAttributes(append(attrs(s.name, s.endpoint, s.load), intentAttr(intent))...)
	is = &intentState{
		ttft: e.prom.ttft.WithLabelValues(lv...), itl: e.prom.itl.WithLabelValues(lv...),
		tpot: e.prom.tpot.WithLabelValues(lv...), e2e: e.prom.e2e.WithLabelValues(lv...),
		in: e.prom.inputTokens.WithLabelValues(lv...), out: e.prom.outputTokens.WithLabelValues(lv...),
		add: []metric.AddOption{opt}, rec: []metric.RecordOption{opt},
	}
	s.intents[intent] = is
	return is
}

// outcome returns the stage's request counter for an intent and outcome.
func (e *Exporter) outcome(s *stageState, intent, outcome string) *outcomeState {
	key := [2]string{intent, outcome}
	s.mu.RLock()
	os := s.outs[key]
	s.mu.RUnlock()
	if os != nil {
		return os
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if os = s.outs[key]; os != nil {
		return os
	}
	lv := append(s.base[:3:3], intentLabel(intent), outcome)
	opt := metric.WithAttributes(append(attrs(s.name, s.endpoint, s.load), intentAttr(intent), outcomeAttr(outcome))...)
	os = &outcomeState{requests: e.prom.requests.WithLabelValues(lv...), add: []metric.AddOption{opt}}
	s.outs[key] = os
	return os
}

// StageEnd adds nothing to the result: the export is live.
func (e *Exporter) StageEnd(runner.Stage, *result.Scenario) {}

// Shutdown pushes what is left to the OTLP endpoint and stops serving; it
// is safe to call more than once and returns the first call's error.
func (e *Exporter) Shutdown(ctx context.Context) error {
	e.once.Do(func() {
		var errs []error
		if e.tp != nil {
			if err := e.tp.Shutdown(ctx); err != nil {
				errs = append(errs, fmt.Errorf("flushing OTLP spans to %s: %w", e.cfg.OTLPEndpoint, err))
			}
		}
		if e.mp != nil {
			if err := e.mp.Shutdown(ctx); err != nil {
				errs = append(errs, fmt.Errorf("flushing OTLP metrics to %s: %w", e.cfg.OTLPEndpoint, err))
			}
		}
		if e.srv != nil {
			if err := e.srv.Shutdown(ctx); err != nil {
				errs = append(errs, fmt.Errorf("stopping the Prometheus endpoint: %w", err))
			}
			if err := <-e.served; err != nil && !errors.Is(err, http.ErrServerClosed) {
				errs = append(errs, fmt.Errorf("serving Prometheus metrics: %w", err))
			}
		}
		e.downErr = errors.Join(errs...)
	})
	return e.downErr
}
