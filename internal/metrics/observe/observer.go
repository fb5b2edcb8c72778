package observe

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spate-dev/spate/internal/record"
	"github.com/spate-dev/spate/internal/runner"
	"github.com/spate-dev/spate/internal/scrub"
	"github.com/spate-dev/spate/result"
)

// DefaultInterval is the scrape interval when none is set.
const DefaultInterval = time.Second

// Config says what to scrape.
type Config struct {
	// Endpoints are the Prometheus URLs to scrape, e.g.
	// http://127.0.0.1:8000/metrics.
	Endpoints []string
	// Interval between scrapes (DefaultInterval when 0).
	Interval time.Duration
	// Metrics are extra metrics to keep as series, beside the known ones.
	Metrics []Selector
	// Client scrapes (a client with a timeout of the interval when nil).
	Client *http.Client
}

// Observer scrapes the endpoints during each stage, from its start to its
// end, and fills the scenario's Server section. It is a runner.Observer.
type Observer struct {
	cfg Config
	cur atomic.Pointer[stageRun]
}

var _ runner.Observer = (*Observer)(nil)

// New returns an Observer for cfg.
func New(cfg Config) *Observer {
	if cfg.Interval <= 0 {
		cfg.Interval = DefaultInterval
	}
	if cfg.Client == nil {
		cfg.Client = &http.Client{Timeout: max(cfg.Interval, 500*time.Millisecond)}
	}
	return &Observer{cfg: cfg}
}

// failure counts one endpoint's failed scrapes in a stage.
type failure struct {
	n       int
	first   string
	firstAt float64
}

// stageRun is one stage's scraping: its goroutine and what it got.
type stageRun struct {
	start   time.Time
	cancel  context.CancelFunc
	done    chan struct{}
	scrapes []Scrape
	fails   []failure // by endpoint

	// outTokens and requests count the requests that ended in the stage
	// (warm-up and failures too: the GPUs spent energy on them) and their
	// output tokens, for the energy per token and per request.
	outTokens, requests atomic.Int64

	// ttft holds the TTFTs (ms) of successful requests by the second of
	// the stage they were sent in.
	mu   sync.Mutex
	ttft [][]float64
}

// StageStart starts scraping: once before it returns (the stage sends
// after it, so that a counter's growth over the whole stage is in the
// rates; a slow endpoint holds the stage up to the scrape's timeout, a
// failed scrape is counted as any other), then every interval, and once
// more as the stage ends.
func (o *Observer) StageStart(ctx context.Context, _ runner.Stage, start time.Time) {
	o.stop() // a stage that ended without StageEnd (it failed to start)
	ctx, cancel := context.WithCancel(ctx)
	sr := &stageRun{start: start, cancel: cancel, done: make(chan struct{}), fails: make([]failure, len(o.cfg.Endpoints))}
	o.cur.Store(sr)
	o.round(ctx, sr)
	go o.loop(ctx, sr)
}

// loop scrapes every interval until ctx ends, then scrapes a last time.
func (o *Observer) loop(ctx context.Context, sr *stageRun) {
	defer close(sr.done)
	t := time.NewTicker(o.cfg.Interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			last, cancel := context.WithTimeout(context.WithoutCancel(ctx), min(o.cfg.Interval, 2*time.Second))
			o.round(last, sr)
			cancel()
			return
		case <-t.C:
			o.round(ctx, sr)
		}
	}
}

// round scrapes every endpoint at once and keeps what they said, at the
// offset of the round's start.
func (o *Observer) round(ctx context.Context, sr *stageRun) {
	at := time.Now()
	got := make([]Families, len(o.cfg.Endpoints))
	errs := make([]error, len(o.cfg.Endpoints))
	var wg sync.WaitGroup
	for i, ep := range o.cfg.Endpoints {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[i], errs[i] = fetch(ctx, o.cfg.Client, ep)
		}()
	}
	wg.Wait()
	if ctx.Err() != nil {
		return // cut short by the stage's end: the last round follows
	}
	off := at.Sub(sr.start).Seconds()
	var fams Families
	for i, f := range got {
		if errs[i] != nil {
			fl := &sr.fails[i]
			if fl.n == 0 {
				fl.first, fl.firstAt = errs[i].Error(), off
			}
			fl.n++
			continue
		}
		if len(o.cfg.Endpoints) > 1 {
			tag(f, i)
		}
		if fams == nil {
			fams = Families{}
		}
		fams.merge(f)
	}
	sr.scrapes = append(sr.scrapes, Scrape{OffsetS: off, Families: fams})
}

// stop ends the current stage's scraping and returns what it got.
func (o *Observer) stop() *stageRun {
	sr := o.cur.Swap(nil)
	if sr != nil {
		sr.cancel()
		<-sr.done
	}
	return sr
}

// Close stops any scraping still going on (a stage that never ended).
func (o *Observer) Close() { o.stop() }

// Sent does nothing: scraping does not look at requests.
func (o *Observer) Sent(string, time.Time, time.Time, bool) {}

// Record counts every request and its output tokens for the energy
// figures, and keeps a successful request's TTFT under the second it was
// sent in, for the correlation of queue depth with TTFT.
func (o *Observer) Record(_ string, rec *record.Record) {
	sr := o.cur.Load()
	if sr == nil {
		return
	}
	sr.requests.Add(1)
	sr.outTokens.Add(int64(rec.OutputTokens))
	if rec.Warmup || rec.Err != record.OK || rec.FirstToken.IsZero() {
		return
	}
	k := int(rec.Sent.Sub(sr.start) / time.Second)
	if k < 0 {
		return
	}
	ttft := float64(rec.FirstToken.Sub(rec.Sent)) / float64(time.Millisecond)
	sr.mu.Lock()
	for len(sr.ttft) <= k {
		sr.ttft = append(sr.ttft, nil)
	}
	sr.ttft[k] = append(sr.ttft[k], ttft)
	sr.mu.Unlock()
}

// StageEnd stops scraping and fills sc.Server.
func (o *Observer) StageEnd(_ runner.Stage, sc *result.Scenario) {
	sr := o.stop()
	if sr == nil {
		return
	}
	sc.Server = o.server(sr, sc.DurationS)
}

// server computes the Server section from a stage's scrapes; the energy
// figures are over the stage's first durationS seconds.
func (o *Observer) server(sr *stageRun, durationS float64) *result.Server {
	srv := &result.Server{IntervalS: o.cfg.Interval.Seconds(), OffsetsS: []float64{}, Series: map[string]result.ServerSeries{}}
	for _, ep := range o.cfg.Endpoints {
		srv.Endpoints = append(srv.Endpoints, scrub.URL(ep))
	}
	for _, sc := range sr.scrapes {
		srv.OffsetsS = append(srv.OffsetsS, sc.OffsetS)
	}
	for i, fl := range sr.fails {
		if fl.n > 0 {
			srv.Warnings = append(srv.Warnings, fmt.Sprintf("scraping %s: %s (%d of %d scrapes failed, the first at %.1f s); the run went on without it",
				scrub.URL(o.cfg.Endpoints[i]), fl.first, fl.n, len(sr.scrapes), fl.firstAt))
		}
	}
	series, warns := Compute(sr.scrapes, o.cfg.Metrics)
	srv.Series = series
	srv.Warnings = append(srv.Warnings, warns...)
	got := false
	for _, sc := range sr.scrapes {
		got = got || sc.Families != nil
	}
	if got && len(series) == 0 {
		srv.Warnings = append(srv.Warnings, "no metric of a known server ("+serverNames()+") was found in the scrapes; name the ones to keep with --scrape-metric")
	}
	sr.mu.Lock()
	p99 := P99PerSecond(sr.ttft)
	sr.mu.Unlock()
	figs, warns := Figures(srv.OffsetsS, series, p99)
	if len(figs) > 0 {
		srv.Figures = figs
	}
	energyFigures(srv, sr.scrapes, durationS, sr.outTokens.Load(), sr.requests.Load())
	srv.Warnings = append(srv.Warnings, warns...)
	return srv
}
