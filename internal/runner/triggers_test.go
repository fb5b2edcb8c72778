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
