package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/spate-dev/spate/internal/record"
	"github.com/spate-dev/spate/internal/runner"
	"github.com/spate-dev/spate/internal/verdict"
	"github.com/spate-dev/spate/result"
)

// Observer is a runner.Observer that fills each stage's result.Chaos from
// its requests and the proxy's fault windows and counts.
type Observer struct {
	// Stats returns the proxy's counts: Proxy.Stats for a proxy in this
	// process, RemoteStats for one elsewhere.
	Stats func(ctx context.Context) (Stats, error)
	// TMax and RecoveryBin: see FigureOptions.
	TMax, RecoveryBin time.Duration
	// Proxied says the stage's load is meant to go through the proxy
	// Stats reads: a stage whose requests it never saw is invalid
	// (verdict.CauseNotApplied), its faults having reached nothing.
	Proxied bool

	mu      sync.Mutex
	samples []Sample
	start   time.Time
	before  Stats
	err     error
}

var _ runner.Observer = (*Observer)(nil)

// LocalStats returns the Stats func of an in-process proxy.
func LocalStats(p *Proxy) func(context.Context) (Stats, error) {
	return func(context.Context) (Stats, error) { return p.Stats(), nil }
}

// RemoteStats returns a Stats func that reads GET /admin/stats at url.
func RemoteStats(url string) func(context.Context) (Stats, error) {
	return func(ctx context.Context) (Stats, error) {
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return Stats{}, err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return Stats{}, fmt.Errorf("reading chaos proxy stats at %s: %w", url, err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
		if err != nil || resp.StatusCode != http.StatusOK {
			return Stats{}, fmt.Errorf("reading chaos proxy stats at %s: HTTP %d %v", url, resp.StatusCode, err)
		}
		var s Stats
		if err := json.Unmarshal(b, &s); err != nil {
			return Stats{}, fmt.Errorf("reading chaos proxy stats at %s: %w", url, err)
		}
		return s, nil
	}
}

// StageStart notes the proxy's counts as the stage begins.
func (o *Observer) StageStart(ctx context.Context, st runner.Stage, start time.Time) {
	before, err := o.Stats(context.WithoutCancel(ctx))
	o.mu.Lock()
	defer o.mu.Unlock()
	o.samples, o.start, o.before, o.err = o.samples[:0], start, before, err
}

// Sent does nothing: figures are made from finished requests.
func (o *Observer) Sent(string, time.Time, time.Time, bool) {}

// Record keeps what the figures need of a measured request.
func (o *Observer) Record(_ string, rec *record.Record) {
	if rec.Warmup {
		return
	}
	s := Sample{Sent: rec.Sent, End: rec.End, FirstToken: rec.FirstToken, Failed: rec.Failed(), Attempts: rec.Attempts, Upstream: rec.Upstream}
	o.mu.Lock()
	o.samples = append(o.samples, s)
	o.mu.Unlock()
}

// StageEnd computes the stage's chaos figures into sc.Chaos.
func (o *Observer) StageEnd(st runner.Stage, sc *result.Scenario) {
	end := time.Now()
	after, err := o.Stats(context.Background())
	o.mu.Lock()
	defer o.mu.Unlock()
	if err == nil {
		err = o.err
	}
	if err != nil {
		sc.Chaos = &result.Chaos{Warnings: []string{"no chaos figures: " + err.Error()}}
		return
	}
	var windows []Window
	for _, w := range after.Windows {
		if (w.End.IsZero() || w.End.After(o.start)) && w.Start.Before(end) {
			windows = append(windows, w)
		}
	}
	inj := map[string]int64{}
	for k, v := range after.Injected {
		if d := v - o.before.Injected[k]; d != 0 {
			inj[k] = d
		}
	}
	sc.Chaos = Figures(o.samples, windows, FigureOptions{
		Start: o.start, End: end, TMax: o.TMax, RecoveryBin: o.RecoveryBin, P99Bound: st.SLO.E2E,
		Injected: inj, Failing: after.Failing - o.before.Failing,
	})
	if seen := after.Requests - o.before.Requests; o.Proxied && seen == 0 && len(o.samples) > 0 {
		why := fmt.Sprintf("the chaos proxy saw none of the stage's %d requests: its faults reached nothing, and the figures are of the service without them (is --target the proxy whose --chaos-stats are read?)", len(o.samples))
		sc.Chaos.Warnings = append(sc.Chaos.Warnings, why)
		sc.Load.Valid, sc.Load.InvalidCause = false, verdict.CauseNotApplied // wins: no --allow-invalid accepts it
		sc.Load.InvalidReason = strings.TrimPrefix(sc.Load.InvalidReason+"; "+why, "; ")
	}
}
