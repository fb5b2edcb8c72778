package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/spate-dev/spate/internal/chaos"
	"github.com/spate-dev/spate/internal/client/failover"
	"github.com/spate-dev/spate/internal/client/openai"
	"github.com/spate-dev/spate/internal/engine"
	"github.com/spate-dev/spate/internal/record"
	"github.com/spate-dev/spate/internal/runner"
	"github.com/spate-dev/spate/result"
)

func init() {
	runExtensions = append(runExtensions, func() runExtension { return &chaosExt{} })
}

// chaosExt wires issue 9 into spate run: the in-process chaos proxy,
// several upstreams with client policies, request-level chaos and the
// chaos figures.
type chaosExt struct {
	proxyOn      bool
	rules        []string
	faultsFile   string
	statsURL     string
	targets      []string
	policy       string
	retries      int
	backoff      time.Duration
	budget       float64
	attempt      time.Duration
	requestChaos string
	tMax         time.Duration
	recoveryBin  time.Duration

	proxy    *chaos.Proxy
	set      chaos.Set // the run-wide faults, applied as the first stage starts
	upstream string    // --target before it was pointed at the proxy
}

func (x *chaosExt) addFlags(fs *pflag.FlagSet) {
	fs.BoolVar(&x.proxyOn, "chaos-proxy", false, "start the chaos proxy in front of --target (a stage's faults: url /admin/faults then reach it)")
	fs.StringArrayVar(&x.rules, "chaos", nil, "run-wide fault rule on the chaos proxy, e.g. 'error_rate=0.1,latency=lognormal:3.2:0.5,from=10s,until=20s' (repeatable; implies --chaos-proxy)")
	fs.StringVar(&x.faultsFile, "chaos-faults", "", "JSON fault set for the chaos proxy, as PUT to /admin/faults (implies --chaos-proxy)")
	fs.StringVar(&x.statsURL, "chaos-stats", "", "GET /admin/stats URL of a chaos proxy run elsewhere (spate chaos proxy), for the chaos figures")
	fs.StringSliceVar(&x.targets, "targets", nil, "more upstreams of the same service beside --target, URL,URL (see --policy)")
	fs.StringVar(&x.policy, "policy", "round-robin", "with --targets: round-robin, or failover (next upstream on an error before any token)")
	fs.IntVar(&x.retries, "retries", 0, "retry a request that failed before any token (connect, timeout, 5xx, 429) up to N more times")
	fs.DurationVar(&x.backoff, "retry-backoff", failover.DefaultBackoff, "base of the exponential backoff between retries (with jitter)")
	fs.Float64Var(&x.budget, "retry-budget", failover.DefaultBudget, "extra attempts (retries and failovers) allowed, as a fraction of requests")
	fs.DurationVar(&x.attempt, "attempt-timeout", 0, "give up one attempt after this long and fail over or retry (0: only --timeout)")
	fs.StringVar(&x.requestChaos, "request-chaos", "", "fractions of chaos requests, e.g. 'max_tokens_1=0.05,oversize=0.02,malformed=0.01,max_context=8192'")
	fs.DurationVar(&x.tMax, "chaos-tmax", chaos.DefaultTMax, "T_max of MSR")
	fs.DurationVar(&x.recoveryBin, "chaos-recovery-bin", chaos.DefaultRecoveryBin, "bin width that recovery after a fault window is judged on")
}

// clientSide reports whether a failover client is needed.
func (x *chaosExt) clientSide() bool { return len(x.targets) > 0 || x.retries > 0 }

func (x *chaosExt) before(cmd *cobra.Command, f *runFlags) (func(), error) {
	if _, err := failover.ParsePolicy(x.policy); err != nil {
		return nil, usageErr("--policy: %v", err)
	}
	if x.retries < 0 || x.budget < 0 || x.backoff < 0 || x.attempt < 0 {
		return nil, usageErr("--retries, --retry-budget, --retry-backoff and --attempt-timeout must not be negative")
	}
	if x.tMax <= 0 || x.recoveryBin <= 0 {
		return nil, usageErr("--chaos-tmax and --chaos-recovery-bin must be positive")
	}
	if x.requestChaos != "" {
		if _, err := chaos.ParseMix(x.requestChaos); err != nil {
			return nil, usageErr("--request-chaos: %v", err)
		}
	}
	if len(x.rules) == 0 && x.faultsFile == "" && !x.proxyOn {
		return nil, nil
	}
	if f.target == "" {
		return nil, usageErr("--chaos-proxy needs --target, the service to put the proxy in front of")
	}
	set, err := chaosSet(x.faultsFile, x.rules, int64(f.seed))
	if err != nil {
		return nil, err
	}
	u, err := url.Parse(f.target)
	if err != nil || u.Host == "" {
		return nil, usageErr("--target %q: not a URL", openai.Redact(f.target))
	}
	p, err := chaos.New(u.Scheme + "://" + u.Host)
	if err != nil {
		return nil, usageErr("--target: %v", err)
	}
	if err := set.Validate(); err != nil {
		return nil, usageErr("--chaos: %v", err)
	}
	x.set = set
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("starting the chaos proxy on loopback: %w", err)
	}
	ctx, cancel := context.WithCancel(context.WithoutCancel(cmd.Context()))
	done := make(chan error, 1)
	go func() { done <- chaos.Serve(ctx, ln, p) }()
	x.proxy, x.upstream = p, f.target
	// The proxy takes the target's place; the stage faults' "/admin/faults"
	// is then resolved against it.
	pu := *u
	pu.Scheme, pu.Host = "http", ln.Addr().String()
	f.target = pu.String()
	if !f.quiet {
		fmt.Fprintf(cmd.ErrOrStderr(), "chaos proxy at http://%s in front of %s\n", ln.Addr(), openai.Redact(x.upstream))
	}
	return func() {
		cancel()
		if err := <-done; err != nil && !errors.Is(err, http.ErrServerClosed) {
			fmt.Fprintf(cmd.ErrOrStderr(), "spate: chaos proxy: %v\n", err)
		}
	}, nil
}

func (x *chaosExt) after(cmd *cobra.Command, f *runFlags, p *runner.Plan) error {
	if x.upstream != "" {
		// The result names the service measured, not the proxy before it.
		p.Provenance.Target = openai.Redact(x.upstream)
	}
	if x.requestChaos != "" {
		mix, _ := chaos.ParseMix(x.requestChaos)
		p.Source = chaos.Requests(p.Source, mix, int64(f.seed))
		for i := range p.Stages {
			if p.Stages[i].Source != nil {
				p.Stages[i].Source = chaos.Requests(p.Stages[i].Source, mix, int64(f.seed))
			}
		}
	}
	if x.clientSide() {
		ups := []failover.Upstream{{Name: openai.Redact(x.nameOf(f.target)), Client: p.Client}}
		for _, t := range x.targets {
			c, err := f.newClient(t)
			if err != nil {
				return err
			}
			ups = append(ups, failover.Upstream{Name: openai.Redact(t), Client: c})
		}
		fc, err := failover.New(failover.Config{
			Upstreams: ups, Policy: failover.Policy(x.policy), Retries: x.retries, Backoff: x.backoff,
			Budget: x.budget, AttemptTimeout: x.attempt, Seed: f.seed,
		})
		if err != nil {
			return usageErr("%v", err)
		}
		p.Client = checked{fc, p.Client}
	}
	var stats func(context.Context) (chaos.Stats, error)
	switch {
	case x.proxy != nil:
		stats = chaos.LocalStats(x.proxy)
	case x.statsURL != "":
		stats = chaos.RemoteStats(x.statsURL)
	case x.clientSide():
		stats = func(context.Context) (chaos.Stats, error) { return chaos.Stats{}, nil }
	default:
		return nil
	}
	if x.proxy != nil && len(x.set.Rules()) > 0 {
		for _, st := range p.Stages {
			if st.Faults != nil {
				return usageErr("stage %s has its own faults: and --chaos/--chaos-faults set the same proxy's: use one or the other", st.Name)
			}
		}
		p.Observers = append(p.Observers, &applyOnStart{proxy: x.proxy, set: x.set})
	}
	p.Observers = append(p.Observers, &chaos.Observer{Stats: stats, TMax: x.tMax, RecoveryBin: x.recoveryBin})
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
		a.proxy.Apply(a.set) // validated in before
	}
}
func (a *applyOnStart) Sent(string, time.Time, time.Time, bool) {}
func (a *applyOnStart) Record(string, *record.Record)           {}
func (a *applyOnStart) StageEnd(runner.Stage, *result.Scenario) {}

// nameOf names the main upstream: the real target, not the proxy.
func (x *chaosExt) nameOf(target string) string {
	if x.upstream != "" {
		return x.upstream
	}
	return target
}

// finish prints each stage's chaos figures after the summary.
func (x *chaosExt) finish(cmd *cobra.Command, f *runFlags, res *result.Result, _ string) error {
	if f.quiet || f.noSummary || res == nil {
		return nil
	}
	for i := range res.Scenarios {
		if err := chaos.WriteSummary(cmd.OutOrStdout(), res.Scenarios[i].Name, res.Scenarios[i].Chaos); err != nil {
			return err
		}
	}
	return nil
}

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
