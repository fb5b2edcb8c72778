package runner

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/spate-dev/spate/internal/metrics"
	"github.com/spate-dev/spate/internal/verdict/threshold"
	"github.com/spate-dev/spate/result"
)

// Trigger is a threshold of the trigger form (threshold.ParseTrigger),
// watched every second while each stage it applies to runs: it fails when
// it fires, and with AbortOnFail its firing stops the run.
type Trigger struct {
	Trigger     threshold.Trigger
	AbortOnFail bool
	// Delay is how long into a stage before the first evaluation.
	Delay time.Duration
	// Window is the span of recent seconds each condition is evaluated
	// over (default DefaultAbortWindow).
	Window time.Duration
}

// windowable lists the figures a trigger's condition can be evaluated on
// over a window of the run (and so a change of, against a baseline).
func windowable(metric string) bool { return abortable[metric] }

// CheckTriggers reports a trigger on a figure that is not kept over a
// window, or with a negative delay or window.
func CheckTriggers(ts []Trigger) error {
	for _, t := range ts {
		for _, c := range t.Trigger.Conds {
			if c.Input != "" {
				return fmt.Errorf("trigger %q: the figures by input length are not kept over a window of the run", t.Trigger.Expr)
			}
			if !windowable(c.Metric) {
				return fmt.Errorf("trigger %q: %s is not kept over a window of the run: a trigger watches ttft, tpot, e2e, itl, error_rate, goodput, goodput_rps, rps, stps and *_tps", t.Trigger.Expr, c.Metric)
			}
		}
		if t.Delay < 0 || t.Window < 0 {
			return fmt.Errorf("trigger %q: delay and window must not be negative", t.Trigger.Expr)
		}
	}
	return nil
}

// triggerSpan is the recent history a stage's recorder must keep for its
// triggers: their windows and their baselines at the stage's start.
func triggerSpan(ts []Trigger) time.Duration {
	var span time.Duration
	for _, t := range ts {
		w := t.Window
		if w <= 0 {
			w = DefaultAbortWindow
		}
		span = max(span, w)
		for _, c := range t.Trigger.Conds {
			if c.Change != "" && !c.Baseline.Previous {
				b := c.Baseline.First
				if b <= 0 {
					b = threshold.DefaultBaselineSpan
				}
				// The baseline is read a little after it ends: keep a
				// few seconds more.
				span = max(span, b+3*time.Second)
			}
		}
	}
	return span
}

// triggerWatch watches the triggers of one stage.
type triggerWatch struct {
	ts      []Trigger
	watches []*threshold.Watch
	// bases[i][j] is trigger i's condition j's baseline (nil while
	// unknown); firstSpan[i][j] its span at the stage's start (0 for the
	// previous stage's).
	bases     [][]threshold.Source
	firstSpan [][]time.Duration

	mu      sync.Mutex
	aborted *threshold.Outcome
}

// newTriggerWatch prepares the watches of the triggers ts for a stage;
// prev is the previous stage's figures (nil for the first stage).
func newTriggerWatch(ts []Trigger, prev threshold.Source) *triggerWatch {
	tw := &triggerWatch{ts: ts}
	for _, t := range ts {
		tw.watches = append(tw.watches, &threshold.Watch{Trigger: t.Trigger})
		bases := make([]threshold.Source, len(t.Trigger.Conds))
		spans := make([]time.Duration, len(t.Trigger.Conds))
		for j, c := range t.Trigger.Conds {
			switch {
			case c.Change == "":
			case c.Baseline.Previous || (c.Baseline.First <= 0 && prev != nil):
				bases[j] = prev // nil for the first stage: never evaluated
			case c.Baseline.First > 0:
				spans[j] = c.Baseline.First
			default:
				spans[j] = threshold.DefaultBaselineSpan
			}
		}
		tw.bases = append(tw.bases, bases)
		tw.firstSpan = append(tw.firstSpan, spans)
	}
	return tw
}

// step evaluates every trigger at now; warmup is the stage's warm-up,
// whose seconds the baselines at the stage's start come after. It returns
// a trigger with AbortOnFail that fired, if any.
func (tw *triggerWatch) step(now, start time.Time, warmup time.Duration, rec *metrics.Recorder) *threshold.Outcome {
	at := now.Sub(start)
	nowSec := int(at / time.Second) // the current, incomplete second
	warmSec := int((warmup + time.Second - 1) / time.Second)
	for i, t := range tw.ts {
		for j, span := range tw.firstSpan[i] {
			if span <= 0 || tw.bases[i][j] != nil {
				continue
			}
			from, to := warmSec, warmSec+int(span/time.Second)
			if nowSec < to {
				continue
			}
			if sc, hist, ok := rec.WindowSpan(now, from, to); ok {
				tw.bases[i][j] = metrics.Source{Scenario: &sc, Hists: hist}
			}
		}
		if at < t.Delay {
			continue
		}
		win := t.Window
		if win <= 0 {
			win = DefaultAbortWindow
		}
		sc, hist, ok := rec.WindowSpan(now, max(nowSec-int(win/time.Second), 0), nowSec)
		if !ok {
			continue
		}
		if tw.watches[i].Step(at, metrics.Source{Scenario: &sc, Hists: hist}, tw.bases[i]) && t.AbortOnFail {
			o := tw.watches[i].Outcome()
			return &o
		}
	}
	return nil
}

// outcomes are the triggers' verdicts on the stage.
func (tw *triggerWatch) outcomes() []result.ThresholdOutcome {
	out := make([]result.ThresholdOutcome, 0, len(tw.watches))
	for i, w := range tw.watches {
		o := w.Outcome()
		if o.Err != "" {
			// Say which baseline was missing.
			for j, c := range w.Trigger.Conds {
				switch span := tw.firstSpan[i][j]; {
				case c.Change == "" || tw.bases[i][j] != nil:
				case span > 0:
					o.Err += fmt.Sprintf(" (condition %d compares with the stage's first %s after its warm-up, which the stage did not outlast by a window)", j+1, span)
				default:
					o.Err += fmt.Sprintf(" (condition %d compares with the previous stage, and this stage has none)", j+1)
				}
			}
		}
		out = append(out, o)
	}
	return out
}

// watchTriggers evaluates the stage's triggers once a second until the
// returned stop is called; a trigger with AbortOnFail that fires cancels
// the stage. stop waits for the watcher and returns the triggers'
// outcomes and the one that stopped the stage, if any.
func watchTriggers(ctx context.Context, cancel context.CancelFunc, ts []Trigger, prev threshold.Source, rec *metrics.Recorder, start time.Time, warmup time.Duration) (stop func() ([]result.ThresholdOutcome, *threshold.Outcome)) {
	if len(ts) == 0 {
		return func() ([]result.ThresholdOutcome, *threshold.Outcome) { return nil, nil }
	}
	tw := newTriggerWatch(ts, prev)
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case now := <-t.C:
				if o := tw.step(now, start, warmup, rec); o != nil {
					tw.mu.Lock()
					tw.aborted = o
					tw.mu.Unlock()
					cancel()
					return
				}
			}
		}
	}()
	return func() ([]result.ThresholdOutcome, *threshold.Outcome) {
		close(done)
		<-stopped
		tw.mu.Lock()
		defer tw.mu.Unlock()
		return tw.outcomes(), tw.aborted
	}
}

// triggersFor returns the triggers that apply to the named stage.
func triggersFor(ts []Trigger, stage string) []Trigger {
	var out []Trigger
	for _, t := range ts {
		if t.Trigger.Stage == "" || t.Trigger.Stage == stage {
			out = append(out, t)
		}
	}
	return out
}
