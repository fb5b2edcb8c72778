package plan

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"time"

	"github.com/spate-dev/spate/experiment"
	"github.com/spate-dev/spate/internal/chaos"
	"github.com/spate-dev/spate/internal/client/failover"
	"github.com/spate-dev/spate/internal/client/vector"
	"github.com/spate-dev/spate/internal/engine"
	"github.com/spate-dev/spate/internal/record"
	"github.com/spate-dev/spate/internal/runner"
	"github.com/spate-dev/spate/internal/scrub"
	"github.com/spate-dev/spate/result"
)

// Defaults of the chaos and failover settings.
const (
	defaultBackoff = failover.DefaultBackoff
	defaultBudget  = failover.DefaultBudget
)

func chaosDefaults() experiment.Chaos {
	return experiment.Chaos{TMax: chaos.DefaultTMax, RecoveryBin: chaos.DefaultRecoveryBin}
}

// chaosFeature is the in-process chaos proxy, several upstreams with client
// policies (target.urls, retries), request-level chaos and the chaos
// figures (experiment section chaos, target's failover fields).
type chaosFeature struct {
	proxy    *chaos.Proxy
	set      chaos.Set // the run-wide faults, applied as the first stage starts
	upstream string    // the target before it was pointed at the proxy
}

// proxyOn reports whether the run puts the chaos proxy before the target
// (or before the vector database, with --vector-proxy).
func proxyOn(c experiment.Chaos) bool { return len(c.Rules) > 0 || c.Faults != "" || c.Proxy }

// clientSide reports whether a failover client is needed.
func clientSide(t experiment.Target) bool { return len(t.URLs) > 0 || t.Retries > 0 }

func (f *chaosFeature) check(_ context.Context, x *experiment.Experiment) error {
	t, c := x.Target, x.Chaos
	if _, err := failover.ParsePolicy(t.Policy); err != nil {
		return invalidf("--policy: %v", err)
	}
	if t.Retries < 0 || t.RetryBudget < 0 || t.RetryBackoff < 0 || t.AttemptTimeout < 0 {
		return invalidf("--retries, --retry-budget, --retry-backoff and --attempt-timeout must not be negative")
	}
	if c.TMax <= 0 || c.RecoveryBin <= 0 {
		return invalidf("--chaos-tmax and --chaos-recovery-bin must be positive")
	}
	if c.Requests != "" {
		if _, err := chaos.ParseMix(c.Requests); err != nil {
			return invalidf("--request-chaos: %v", err)
		}
	}
	for _, r := range c.Rules {
		if _, err := chaos.ParseRule(r); err != nil {
			return invalidf("--chaos: %v", err)
		}
	}
	return nil
}

// loadSpan is how long stages send load, warm-up included, when each is
// bound by its duration alone (0: not known before the run).
func loadSpan(stages []experiment.Stage) time.Duration {
	var span time.Duration
	for _, st := range stages {
		if st.Duration <= 0 || st.Requests > 0 {
			return 0
		}
		span += st.Warmup + st.Duration
	}
	return span
}

// neverOn reports a rule that begins only once the span of load it is
// applied to (counted from when it is applied) has been sent: it would
// never take effect, and the run would measure a service without the
// fault asked for. span 0 checks nothing.
func neverOn(rules []chaos.Rule, span time.Duration) error {
	if span <= 0 {
		return nil
	}
	for i, r := range rules {
		if from := time.Duration(r.From); from >= span {
			return fmt.Errorf("rule %d begins at from=%v, but the load it applies to is sent in %v: it would never take effect (start it earlier or send load for longer)", i+1, from, span)
		}
	}
	return nil
}

func (f *chaosFeature) start(ctx context.Context, r *Run) error {
	x := r.X
	if !proxyOn(x.Chaos) && !x.Vector.Proxy {
		return nil
	}
	if x.Vector.Proxy {
		return f.startVector(ctx, r)
	}
	if x.Target.URL == "" {
		return invalidf("--chaos-proxy needs --target, the service to put the proxy in front of")
	}
	set, err := chaos.LoadSet(ctx, x.Chaos.Faults, x.Chaos.Rules, int64(r.seed()))
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			return err
		}
		return invalidf("%v", err)
	}
	u, err := url.Parse(x.Target.URL)
	if err != nil || u.Host == "" {
		return invalidf("--target %q: not a URL", scrub.URL(x.Target.URL))
	}
	p, err := chaos.New(u.Scheme + "://" + u.Host)
	if err != nil {
		return invalidf("--target: %v", err)
	}
	if err := set.Validate(); err != nil {
		return invalidf("--chaos: %v", err)
	}
	// Applied as the first stage starts: its rules count from there.
	if err := neverOn(set.Rules(), loadSpan(x.Stages)); err != nil {
		return invalidf("--chaos: %v", err)
	}
	f.set = set
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("starting the chaos proxy on loopback: %w", err)
	}
	pctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan error, 1)
	go func() { done <- chaos.Serve(pctx, ln, p) }()
	r.onClose(func() {
		cancel()
		if err := <-done; err != nil && !errors.Is(err, http.ErrServerClosed) {
			fmt.Fprintf(r.stderr(), "spate: chaos proxy: %v\n", err)
		}
	})
	f.proxy, f.upstream = p, x.Target.URL
	// The proxy takes the target's place; the stage faults' "/admin/faults"
	// is then resolved against it.
	pu := *u
	pu.Scheme, pu.Host = "http", ln.Addr().String()
	x.Target.URL = pu.String()
	if !r.quiet() {
		fmt.Fprintf(r.stderr(), "chaos proxy at http://%s in front of %s\n", ln.Addr(), scrub.URL(f.upstream))
	}
	return nil
}

// startVector puts the chaos proxy in front of the vector database
// (--vector-proxy): the vector URL points at the proxy, and so does the
// target (nothing else is sent to it), so that stages' faults url
// /admin/faults reach the proxy.
func (f *chaosFeature) startVector(ctx context.Context, r *Run) error {
	x := r.X
	up, through, err := vector.ProxyUpstream(x.Vector.URL)
	if err != nil {
		return invalidf("--vector-proxy: %v", err)
	}
	set, err := chaos.LoadSet(ctx, x.Chaos.Faults, x.Chaos.Rules, int64(r.seed()))
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			return err
		}
		return invalidf("%v", err)
	}
	if err := set.Validate(); err != nil {
		return invalidf("--chaos: %v", err)
	}
	p, err := chaos.New(up)
	if err != nil {
		return invalidf("--vector-proxy: %v", err)
	}
	addr, err := f.serve(ctx, r, p)
	if err != nil {
		return err
	}
	f.proxy, f.set = p, set
	r.vectorUpstream = x.Vector.URL
	x.Vector.URL = through(addr)
	x.Target.URL = "http://" + addr
	if !r.quiet() {
		fmt.Fprintf(r.stderr(), "chaos proxy at http://%s in front of %s\n", addr, scrub.URL(r.vectorUpstream))
	}
	return nil
}

// serve runs p on a free loopback port until the run is closed and
// returns its address.
func (f *chaosFeature) serve(ctx context.Context, r *Run, p *chaos.Proxy) (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("starting the chaos proxy on loopback: %w", err)
	}
	pctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan error, 1)
	go func() { done <- chaos.Serve(pctx, ln, p) }()
	r.onClose(func() {
		cancel()
		if err := <-done; err != nil && !errors.Is(err, http.ErrServerClosed) {
			fmt.Fprintf(r.stderr(), "spate: chaos proxy: %v\n", err)
		}
	})
	return ln.Addr().String(), nil
}

func (f *chaosFeature) apply(_ context.Context, r *Run) error {
	x, p := r.X, &r.Plan
	if f.upstream != "" {
		// The result names the service measured, not the proxy before it.
		p.Provenance.Target = scrub.URL(f.upstream)
	}
	if x.Chaos.Requests != "" {
		mix, _ := chaos.ParseMix(x.Chaos.Requests) // checked
		p.Source = chaos.Requests(p.Source, mix, int64(r.seed()))
		for i := range p.Stages {
			if p.Stages[i].Source != nil {
				p.Stages[i].Source = chaos.Requests(p.Stages[i].Source, mix, int64(r.seed()))
			}
		}
	}
	t := x.Target
	if clientSide(t) && !x.Vector.Proxy {
		main := t.URL
		if f.upstream != "" {
			main = f.upstream // the real target, not the proxy
		}
		ups := []failover.Upstream{{Name: scrub.URL(main), Client: p.Client}}
		for _, u := range t.URLs {
			c, err := r.newClient(u)
			if err != nil {
				return err
			}
			ups = append(ups, failover.Upstream{Name: scrub.URL(u), Client: c})
		}
		fc, err := failover.New(failover.Config{
			Upstreams: ups, Policy: failover.Policy(t.Policy), Retries: t.Retries, Backoff: t.RetryBackoff,
			Budget: t.RetryBudget, AttemptTimeout: t.AttemptTimeout, Seed: r.seed(),
		})
		if err != nil {
			return invalidf("%v", err)
		}
		p.Client = checked{fc, p.Client}
	}
	var stats func(context.Context) (chaos.Stats, error)
	switch {
	case f.proxy != nil:
		stats = chaos.LocalStats(f.proxy)
	case x.Chaos.Stats != "":
		stats = chaos.RemoteStats(x.Chaos.Stats)
	case clientSide(t):
		stats = func(context.Context) (chaos.Stats, error) { return chaos.Stats{}, nil }
	default:
		return nil
	}
	if f.proxy != nil && len(f.set.Rules()) > 0 {
		for _, st := range p.Stages {
			if st.Faults != nil {
				return invalidf("stage %s has its own faults: and --chaos/--chaos-faults set the same proxy's: use one or the other", st.Name)
			}
		}
		p.Observers = append(p.Observers, &applyOnStart{proxy: f.proxy, set: f.set})
	}
	p.Observers = append(p.Observers, &chaos.Observer{Stats: stats, TMax: x.Chaos.TMax, RecoveryBin: x.Chaos.RecoveryBin,
		Proxied: f.proxy != nil || x.Chaos.Stats != ""})
	return nil
}

// finish prints each stage's chaos figures after the summary.
func (f *chaosFeature) finish(r *Run, res *result.Result) error {
	if !r.summary() {
		return nil
	}
	for i := range res.Scenarios {
		if err := chaos.WriteSummary(r.stdout(), res.Scenarios[i].Name, res.Scenarios[i].Chaos); err != nil {
			return err
		}
	}
	return nil
}

// applyOnStart applies the run-wide fault set as the first stage starts,
// so that its rules' from and until count from there. A stage with its
// own faults: has set them already; they win.
type applyOnStart struct {
	proxy *chaos.Proxy
	set   chaos.Set
	done  bool
}

func (a *applyOnStart) StageStart(_ context.Context, st runner.Stage, _ time.Time) {
	if a.done {
		return
	}
	a.done = true
	if st.Faults == nil {
		a.proxy.Apply(a.set) // validated in start
	}
}
func (a *applyOnStart) Sent(string, time.Time, time.Time, bool) {}
func (a *applyOnStart) Record(string, *record.Record)           {}
func (a *applyOnStart) StageEnd(runner.Stage, *result.Scenario) {}

// checked keeps the main client's reachability check (runner.Checker)
// when it is wrapped.
type checked struct {
	engine.Client
	inner engine.Client
}

// Check checks the main upstream, if its client can.
func (c checked) Check(ctx context.Context) error {
	if ch, ok := c.inner.(runner.Checker); ok {
		return ch.Check(ctx)
	}
	return nil
}
