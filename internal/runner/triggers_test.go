package runner

import (
	"sort"
	"testing"
	"time"

	"github.com/spate-dev/spate/internal/metrics"
	"github.com/spate-dev/spate/internal/record"
	"github.com/spate-dev/spate/internal/verdict/threshold"
)

// TestTriggerWatchFiresOnceOnFaults replays, on a clock of its own, what
// the root package's TestTriggerFiresOnceOnFaults (-tags integration) runs
// in real time against the simulator: 80 requests a second of 36 ms; from
// 3 s to 7 s every request takes 300 ms more and a fifth of them fail.
// The stage's watcher, stepped once a second as it is in a run, compares
// 1 s windows with the stage's first 2 s: the trigger holds from 4 s,
// fires once at 5 s (not again while the same hold goes on) with the
// delta of p95(e2e) at 300 ms, and the stage fails without aborting.
func TestTriggerWatchFiresOnceOnFaults(t *testing.T) {
	tr, err := threshold.ParseTrigger("delta(p95(e2e), first 2s) > 150ms for 1s and error_rate >= 5%")
	if err != nil {
		t.Fatal(err)
	}
	ts := []Trigger{{Trigger: tr, Window: time.Second}}
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	rec := metrics.New(metrics.Config{Start: start, Window: triggerSpan(ts)})
	var recs []*record.Record
	for s := 0; s < 9; s++ {
		faulty := s >= 3 && s < 7
		for i := 0; i < 80; i++ {
			sent := start.Add(time.Duration(s)*time.Second + time.Duration(i)*time.Second/80)
			e2e := 36 * time.Millisecond
			if faulty {
				e2e += 300 * time.Millisecond
			}
			r := &record.Record{Intended: sent, Sent: sent, FirstToken: sent.Add(20 * time.Millisecond), End: sent.Add(e2e), OutputTokens: 8, Chunks: 8}
			if faulty && i%5 == 0 {
				r.Fail(record.HTTPStatus(500), "injected fault", r.End)
			}
			recs = append(recs, r)
		}
	}
	sort.SliceStable(recs, func(i, j int) bool { return recs[i].End.Before(recs[j].End) })
	tw := newTriggerWatch(ts, nil)
	next := 0
	for tick := 1; tick <= 9; tick++ {
		now := start.Add(time.Duration(tick) * time.Second)
		for ; next < len(recs) && recs[next].End.Before(now); next++ {
			rec.Sent(recs[next].Sent, recs[next].Intended, false)
			rec.Record(recs[next])
		}
		if o := tw.step(now, start, 0, rec); o != nil {
			t.Fatalf("at %d s: a trigger without abortOnFail stopped the stage: %+v", tick, o)
		}
	}
	outs := tw.outcomes()
	if len(outs) != 1 {
		t.Fatalf("outcomes %+v", outs)
	}
	o := outs[0]
	if o.Pass || !o.Trigger || o.Err != "" || o.Fired != 1 || o.FiredAtS == nil {
		t.Fatalf("outcome %+v, want it failed, fired once", o)
	}
	if *o.FiredAtS != 5 {
		t.Errorf("fired at %v s, want 5 s", *o.FiredAtS)
	}
	if o.Value < 290 || o.Value > 310 {
		t.Errorf("delta of p95(e2e) at firing %.1f ms, want 300 (± the histograms' 1 %%)", o.Value)
	}
}

// windowedFailures makes 80 requests a second of 36 ms for 9 s, those
// sent in seconds 3 and 4 failed, in the order they end.
func windowedFailures(start time.Time) []*record.Record {
	var recs []*record.Record
	for s := 0; s < 9; s++ {
		for i := 0; i < 80; i++ {
			sent := start.Add(time.Duration(s)*time.Second + time.Duration(i)*time.Second/80)
			r := &record.Record{Intended: sent, Sent: sent, FirstToken: sent.Add(20 * time.Millisecond), End: sent.Add(36 * time.Millisecond), OutputTokens: 8, Chunks: 8}
			if s == 3 || s == 4 {
				r.Fail(record.HTTPStatus(500), "injected fault", r.End)
			}
			recs = append(recs, r)
		}
	}
	sort.SliceStable(recs, func(i, j int) bool { return recs[i].End.Before(recs[j].End) })
	return recs
}

// TestWindowsAreTheirOwn: an abort threshold and a trigger are each judged
// on their own window, however long a window the stage keeps for the
// others. The requests sent in seconds 3 and 4 fail, the rest pass, and
// the condition is an error rate of 70 %: over the last 1 s it holds at
// 4 s (second 3 alone), over 2 s only at 5 s (second 2 dilutes it at 4 s),
// over 3 s never (two of three seconds are 67 %). One second wider or
// narrower, each of these moves. A 10 s window beside them (a second
// abort threshold that never fails) makes the stage keep 10 s.
func TestWindowsAreTheirOwn(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		window time.Duration
		want   int // the second it fires at, 0: never
	}{{time.Second, 4}, {2 * time.Second, 5}, {3 * time.Second, 0}} {
		t.Run(tc.window.String(), func(t *testing.T) {
			abort, err := threshold.Parse("error_rate < 70%")
			if err != nil {
				t.Fatal(err)
			}
			never, err := threshold.Parse("p99(e2e) < 10s")
			if err != nil {
				t.Fatal(err)
			}
			aborts := []Abort{{Threshold: abort, Window: tc.window}, {Threshold: never, Window: 10 * time.Second}}
			tr, err := threshold.ParseTrigger("error_rate >= 70%")
			if err != nil {
				t.Fatal(err)
			}
			ts := []Trigger{{Trigger: tr, Window: tc.window, AbortOnFail: true}}
			rec := metrics.New(metrics.Config{Start: start, Window: max(10*time.Second, triggerSpan(ts))})
			recs := windowedFailures(start)
			tw := newTriggerWatch(ts, nil)
			abortAt, trigAt, next := 0, 0, 0
			for tick := 1; tick <= 9; tick++ {
				now := start.Add(time.Duration(tick) * time.Second)
				for ; next < len(recs) && recs[next].End.Before(now); next++ {
					rec.Sent(recs[next].Sent, recs[next].Intended, false)
					rec.Record(recs[next])
				}
				if o := abortStep(now, start, aborts, rec); o != nil && abortAt == 0 {
					abortAt = tick
					if want := "error_rate < 70% (abortOnFail, last " + tc.window.String() + ")"; o.Expr != want {
						t.Errorf("abort outcome %q, want %q", o.Expr, want)
					}
				}
				if o := tw.step(now, start, 0, rec); o != nil && trigAt == 0 {
					trigAt = tick
				}
			}
			if abortAt != tc.want || trigAt != tc.want {
				t.Errorf("window %v: the abort threshold failed at %d s, the trigger fired at %d s; want both at %d s (0: never)", tc.window, abortAt, trigAt, tc.want)
			}
		})
	}
}
