package engine

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/spate-dev/spate/internal/record"
	"github.com/spate-dev/spate/internal/schedule"
	"github.com/spate-dev/spate/internal/workload"
)

// collect is a Sink that keeps copies of every record.
type collect struct {
	mu       sync.Mutex
	sent     int
	recs     []record.Record
	inFlight int
	maxIn    int
}

func (c *collect) Sent(at, intended time.Time, warmup bool) {
	c.mu.Lock()
	c.sent++
	c.inFlight++
	c.maxIn = max(c.maxIn, c.inFlight)
	c.mu.Unlock()
}

func (c *collect) Record(r *record.Record) {
	c.mu.Lock()
	c.inFlight--
	cp := *r
	cp.Gaps = nil
	c.recs = append(c.recs, cp)
	c.mu.Unlock()
}

// sleeper is a client whose requests take d (or until ctx ends).
func sleeper(d time.Duration) Client {
	return ClientFunc(func(ctx context.Context, _ *workload.Request, rec *record.Record) {
		select {
		case <-time.After(d):
			rec.FirstToken = time.Now()
			rec.End = rec.FirstToken
		case <-ctx.Done():
			rec.Fail(record.Cancelled, "cancelled", time.Now())
		}
	})
}

var src = workload.Synthetic{Input: workload.Lengths{Mean: 4, Min: 1}, Seed: 1}

func TestOpenLoopSendsOnSchedule(t *testing.T) {
	sink := &collect{}
	out, err := Run(context.Background(), Config{
		Pacer: schedule.Constant{Rate: 100}, Duration: 500 * time.Millisecond,
		Source: src, Client: sleeper(5 * time.Millisecond), Sink: sink,
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(sink.recs) != 50 || sink.sent != 50 || out.Sent != 50 {
		t.Fatalf("sent %d, recorded %d, outcome %d: want 50 requests at 100/s for 0.5 s", sink.sent, len(sink.recs), out.Sent)
	}
	late := 0
	for _, r := range sink.recs {
		want := out.Start.Add(time.Duration(r.Seq) * 10 * time.Millisecond)
		if !r.Intended.Equal(want) {
			t.Fatalf("request %d intended at %v, want %v", r.Seq, r.Intended.Sub(out.Start), want.Sub(out.Start))
		}
		if r.Lag() > 5*time.Millisecond {
			late++
		}
	}
	if late > 5 {
		t.Errorf("%d of 50 requests sent more than 5 ms late", late)
	}
}

func TestRequestsAndWarmup(t *testing.T) {
	for _, closed := range []bool{false, true} {
		sink := &collect{}
		cfg := Config{Requests: 20, Warmup: 100 * time.Millisecond, Source: src, Client: sleeper(2 * time.Millisecond), Sink: sink}
		if closed {
			cfg.Concurrency = 2
		} else {
			cfg.Pacer = schedule.Constant{Rate: 100}
		}
		if _, err := Run(context.Background(), cfg); err != nil {
			t.Fatal(err)
		}
		warm, measured := 0, 0
		for _, r := range sink.recs {
			if r.Warmup {
				warm++
				if r.Sent.Sub(r.Intended) < 0 {
					t.Fatal("warm-up record with negative lag")
				}
			} else {
				measured++
			}
		}
		if measured != 20 || warm == 0 {
			t.Errorf("closed=%v: %d measured, %d warm-up; want 20 measured and some warm-up", closed, measured, warm)
		}
	}
}

func TestClosedLoopConcurrency(t *testing.T) {
	sink := &collect{}
	_, err := Run(context.Background(), Config{
		Concurrency: 4, Duration: 300 * time.Millisecond,
		Source: src, Client: sleeper(20 * time.Millisecond), Sink: sink,
	})
	if err != nil {
		t.Fatal(err)
	}
	if sink.maxIn != 4 {
		t.Errorf("max in flight %d, want 4", sink.maxIn)
	}
	// 4 workers × 300 ms / 20 ms ≈ 60 requests.
	if n := len(sink.recs); n < 40 || n > 64 {
		t.Errorf("%d requests, want about 60", n)
	}
	for _, r := range sink.recs {
		if !r.Intended.Equal(r.Sent) {
			t.Fatal("closed loop: intended time must equal send time")
		}
	}
}

// TestCapExposesBacklog: a slow server behind --max-concurrency delays
// sends; send-time latency hides it, intended-time latency shows it.
func TestCapExposesBacklog(t *testing.T) {
	sink := &collect{}
	_, err := Run(context.Background(), Config{
		Pacer: schedule.Constant{Rate: 100}, MaxConcurrency: 1, Requests: 20,
		Source: src, Client: sleeper(30 * time.Millisecond), Sink: sink,
	})
	if err != nil {
		t.Fatal(err)
	}
	if sink.maxIn != 1 {
		t.Fatalf("max in flight %d, want the cap of 1", sink.maxIn)
	}
	var last record.Record
	for _, r := range sink.recs {
		if r.Seq == 19 {
			last = r
		}
		if e2e := r.E2E(); e2e < 25*time.Millisecond || e2e > 80*time.Millisecond {
			t.Errorf("request %d send-time E2E %v, want about 30 ms", r.Seq, e2e)
		}
	}
	// Request 19 was meant for 190 ms but could only go at about 19×30 ms.
	if lag := last.Lag(); lag < 300*time.Millisecond {
		t.Errorf("last request lag %v, want > 300 ms (backlog of 20×30 ms work at 10 ms spacing)", lag)
	}
	if last.SlotWait < 10*time.Millisecond {
		t.Errorf("last request waited %v for a slot; the wait must be recorded", last.SlotWait)
	}
}

func TestInterruptDrainsThenCancels(t *testing.T) {
	sink := &collect{}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(150*time.Millisecond, cancel)
	t0 := time.Now()
	out, err := Run(ctx, Config{
		Pacer: schedule.Constant{Rate: 50}, Duration: time.Minute, InterruptedDrain: 100 * time.Millisecond,
		Source: src, Client: sleeper(time.Hour), Sink: sink,
	})
	if err != nil {
		t.Fatal(err)
	}
	if el := time.Since(t0); el > 2*time.Second {
		t.Fatalf("interrupted run took %v to return", el)
	}
	if !out.Interrupted {
		t.Fatal("Outcome.Interrupted not set")
	}
	if len(sink.recs) != sink.sent || sink.sent == 0 {
		t.Fatalf("sent %d, recorded %d: every sent request must be recorded", sink.sent, len(sink.recs))
	}
	for _, r := range sink.recs {
		if r.Err != record.Cancelled {
			t.Fatalf("request %d: %q, want cancelled", r.Seq, r.Err)
		}
	}
}

func TestDrainTimeout(t *testing.T) {
	sink := &collect{}
	t0 := time.Now()
	out, err := Run(context.Background(), Config{
		Concurrency: 2, Requests: 2, DrainTimeout: 100 * time.Millisecond,
		Source: src, Client: sleeper(time.Hour), Sink: sink,
	})
	if err != nil || out.Interrupted {
		t.Fatalf("err %v interrupted %v", err, out.Interrupted)
	}
	if el := time.Since(t0); el > 2*time.Second {
		t.Fatalf("drain took %v, want about 100 ms", el)
	}
	if len(sink.recs) != 2 || sink.recs[0].Err != record.Cancelled {
		t.Fatalf("records %+v", sink.recs)
	}
}

func TestConfigErrors(t *testing.T) {
	c := sleeper(0)
	tests := []Config{
		{Duration: time.Second, Source: src, Client: c, Sink: &collect{}},
		{Pacer: schedule.Constant{Rate: 1}, Concurrency: 1, Duration: time.Second, Source: src, Client: c, Sink: &collect{}},
		{Concurrency: 1, Source: src, Client: c, Sink: &collect{}},
		{Concurrency: 1, Duration: time.Second, Client: c, Sink: &collect{}},
	}
	for i, cfg := range tests {
		if _, err := Run(context.Background(), cfg); err == nil {
			t.Errorf("config %d: no error", i)
		}
	}
}
