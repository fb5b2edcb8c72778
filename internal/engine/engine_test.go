package engine

import (
	"context"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spate-dev/spate/internal/longtest"
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

// timerLateness measures, while the test runs, how late this machine's
// timers fire (10 ms sleeps, for about d): the calibration that the
// engine's own lateness is judged against on a busy machine.
func timerLateness(d time.Duration) (median func() time.Duration) {
	var lates []time.Duration
	done := make(chan struct{})
	go func() {
		defer close(done)
		for end := time.Now().Add(d); time.Now().Before(end); {
			t0 := time.Now()
			time.Sleep(10 * time.Millisecond)
			lates = append(lates, time.Since(t0)-10*time.Millisecond)
		}
	}()
	return func() time.Duration {
		<-done
		return medianOf(lates)
	}
}

func medianOf(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}

func TestOpenLoopSendsOnSchedule(t *testing.T) {
	sink := &collect{}
	calib := timerLateness(500 * time.Millisecond)
	out, err := Run(context.Background(), Config{
		Pacer: schedule.Constant{Rate: 100}, Duration: 500 * time.Millisecond, Grace: time.Minute,
		Source: src, Client: sleeper(5 * time.Millisecond), Sink: sink,
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(sink.recs) != 50 || sink.sent != 50 || out.Sent != 50 || out.Missed != 0 {
		t.Fatalf("sent %d, recorded %d, outcome %d, missed %d: want 50 requests at 100/s for 0.5 s", sink.sent, len(sink.recs), out.Sent, out.Missed)
	}
	var lags []time.Duration
	for _, r := range sink.recs {
		want := out.Start.Add(time.Duration(r.Seq) * 10 * time.Millisecond)
		if !r.Intended.Equal(want) {
			t.Fatalf("request %d intended at %v, want %v", r.Seq, r.Intended.Sub(out.Start), want.Sub(out.Start))
		}
		lags = append(lags, r.Lag())
	}
	// The engine's median lateness is at most two wake-ups (its timer,
	// then the request's goroutine) at the machine's timer lateness (a
	// 10 ms sleep's, measured at the same time), plus little.
	if m, c := medianOf(lags), calib(); m > 2*c+3*time.Millisecond {
		t.Errorf("median schedule lag %v, over twice the machine's timer lateness %v + 3 ms", m, c)
	}
}

func TestRequestsAndWarmup(t *testing.T) {
	for _, closed := range []bool{false, true} {
		sink := &collect{}
		cfg := Config{Requests: 20, Warmup: 100 * time.Millisecond, Grace: time.Minute, Source: src, Client: sleeper(2 * time.Millisecond), Sink: sink}
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
			if r.ClosedLoop != closed {
				// The client reads it (rawhttp.Request.NextWaits).
				t.Fatalf("closed=%v: request %d has ClosedLoop %v", closed, r.Seq, r.ClosedLoop)
			}
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
	// 4 workers × 300 ms / 20 ms: at most 64 requests (fewer on a busy
	// machine, whose sleeps last longer), every worker busy throughout.
	busy := 0 * time.Millisecond
	for _, r := range sink.recs {
		busy += r.E2E() + r.Turnaround
	}
	if n := len(sink.recs); n < 4 || n > 64 || busy < 4*(300*time.Millisecond-100*time.Millisecond) {
		t.Errorf("%d requests busy %v in all, want at most 64 keeping 4 workers busy for most of 300 ms", n, busy)
	}
	for _, r := range sink.recs {
		if !r.Intended.Equal(r.Sent) {
			t.Fatal("closed loop: intended time must equal send time")
		}
	}
}

// TestCapExposesBacklog: a slow server behind --max-concurrency delays
// sends; send-time latency hides it, intended-time latency shows it, and
// what the cap kept back past the deadline is missed.
func TestCapExposesBacklog(t *testing.T) {
	sink := &collect{}
	out, err := Run(context.Background(), Config{
		Pacer: schedule.Constant{Rate: 100}, MaxConcurrency: 1, Requests: 20,
		Source: src, Client: sleeper(100 * time.Millisecond), Sink: sink,
	})
	if err != nil {
		t.Fatal(err)
	}
	if sink.maxIn != 1 {
		t.Fatalf("max in flight %d, want the cap of 1", sink.maxIn)
	}
	// The schedule ends at 190 ms; its grace is 500 ms (MinGrace): at one
	// request per 100 ms, about 7 are sent by 690 ms and the rest missed.
	if out.Grace != MinGrace {
		t.Errorf("grace %v, want %v", out.Grace, MinGrace)
	}
	if got := uint64(len(sink.recs)) + out.Missed; got != 20 || out.Missed < 5 {
		t.Fatalf("%d sent + %d missed, want 20 with at least 5 missed", len(sink.recs), out.Missed)
	}
	var last record.Record
	var waited time.Duration
	for _, r := range sink.recs {
		if r.Seq > last.Seq {
			last = r
		}
		waited = max(waited, r.SlotWait)
		if e2e := r.E2E(); e2e < 90*time.Millisecond {
			t.Errorf("request %d send-time E2E %v, want about 100 ms", r.Seq, e2e)
		}
		if late := r.Sent.Sub(out.Start); late > 190*time.Millisecond+out.Grace {
			t.Errorf("request %d sent %v after the start, past the deadline %v", r.Seq, late, 190*time.Millisecond+out.Grace)
		}
	}
	// The last request sent was meant for 10 ms × seq but waited behind
	// 100 ms requests.
	if lag := last.Lag(); lag < time.Duration(last.Seq)*10*time.Millisecond {
		t.Errorf("last request (%d) lag %v, want > %v (a backlog of 100 ms work at 10 ms spacing)", last.Seq, lag, time.Duration(last.Seq)*10*time.Millisecond)
	}
	if waited < 10*time.Millisecond {
		t.Errorf("requests waited at most %v for a slot; the wait must be recorded", waited)
	}
}

// slowSource makes each request take d to build: a generator that cannot
// keep up with a fast schedule.
type slowSource struct{ d time.Duration }

func (s slowSource) Request(n uint64) (*workload.Request, error) {
	time.Sleep(s.d)
	return src.Request(n)
}
func (s slowSource) Digest() string { return "slow" }

// TestOpenLoopEndsAtItsDeadline: a generator too slow for its schedule
// sends nothing after the schedule's end plus the grace, and counts every
// scheduled request it did not send as missed, whether the schedule is
// bounded by a duration or by a request count.
func TestOpenLoopEndsAtItsDeadline(t *testing.T) {
	for _, tc := range []struct {
		name      string
		cfg       Config
		scheduled int
		end       time.Duration // the schedule's end
	}{
		{"duration", Config{Pacer: schedule.Constant{Rate: 1000}, Duration: 300 * time.Millisecond}, 300, 300 * time.Millisecond},
		{"duration+warmup", Config{Pacer: schedule.Constant{Rate: 1000}, Warmup: 100 * time.Millisecond, Duration: 200 * time.Millisecond}, 200, 300 * time.Millisecond},
		{"requests", Config{Pacer: schedule.Constant{Rate: 1000}, Requests: 300}, 300, 299 * time.Millisecond},
		{"poisson", Config{Pacer: schedule.Poisson{Rate: 1000, Seed: 3}, Duration: 300 * time.Millisecond}, -1, 300 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Each row's engine runs beside the others': the deadline has
			// a grace of 500 ms, and a busier machine only misses more.
			t.Parallel()
			sink := &collect{}
			cfg := tc.cfg
			cfg.Source, cfg.Client, cfg.Sink = slowSource{5 * time.Millisecond}, sleeper(time.Millisecond), sink
			out, err := Run(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			if out.Grace != MinGrace {
				t.Errorf("grace %v, want %v (a tenth of %v, at least %v)", out.Grace, MinGrace, tc.end, MinGrace)
			}
			measured := 0
			for _, r := range sink.recs {
				if at := r.Sent.Sub(out.Start); at > tc.end+out.Grace {
					t.Errorf("request %d sent at %v, after the deadline %v", r.Seq, at, tc.end+out.Grace)
				}
				if !r.Warmup {
					measured++
				}
			}
			want := tc.scheduled
			if want < 0 { // the schedule's own count
				want = 0
				var prev time.Duration
				for n := uint64(0); ; n++ {
					if prev = cfg.Pacer.Pace(n, prev); prev >= tc.end {
						break
					}
					want++
				}
			}
			if measured+int(out.Missed) != want || out.Missed == 0 {
				t.Fatalf("%d measured sent + %d missed, want %d scheduled with some missed (a request takes 5 ms to make)", measured, out.Missed, want)
			}
		})
	}
}

// TestOnScheduleMissesNothing: a generator that keeps up misses nothing.
func TestOnScheduleMissesNothing(t *testing.T) {
	sink := &collect{}
	out, err := Run(context.Background(), Config{
		Pacer: schedule.Constant{Rate: 50}, Duration: 200 * time.Millisecond,
		Source: src, Client: sleeper(time.Millisecond), Sink: sink,
	})
	if err != nil {
		t.Fatal(err)
	}
	if out.Missed != 0 || len(sink.recs) != 10 {
		t.Fatalf("%d sent, %d missed: want 10 and none", len(sink.recs), out.Missed)
	}
}

// TestClosedLoopStartsNothingAfterTheDeadline: no closed-loop request is
// sent after the duration, and each records the worker's turnaround.
func TestClosedLoopStartsNothingAfterTheDeadline(t *testing.T) {
	sink := &collect{}
	out, err := Run(context.Background(), Config{
		Concurrency: 3, Duration: 200 * time.Millisecond,
		Source: src, Client: sleeper(15 * time.Millisecond), Sink: sink,
	})
	if err != nil {
		t.Fatal(err)
	}
	turned := 0
	for _, r := range sink.recs {
		if at := r.Sent.Sub(out.Start); at >= 200*time.Millisecond {
			t.Errorf("request %d sent at %v, after the 200 ms duration", r.Seq, at)
		}
		if r.Turnaround > 0 {
			turned++
		}
		if r.Turnaround < 0 || r.Turnaround > 150*time.Millisecond {
			t.Errorf("request %d turnaround %v", r.Seq, r.Turnaround)
		}
	}
	if turned < len(sink.recs)-3 || out.Missed != 0 {
		t.Errorf("%d of %d requests carry a turnaround (all but each worker's first), %d missed", turned, len(sink.recs), out.Missed)
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

// stuck is a client that ignores cancellation until release is closed,
// like one stuck in work it cannot stop; started counts its calls.
type stuck struct {
	release chan struct{}
	started *atomic.Int64
}

func (s stuck) Do(ctx context.Context, _ *workload.Request, rec *record.Record) {
	s.started.Add(1)
	<-s.release
	rec.FirstToken = time.Now()
	rec.End = rec.FirstToken
}

// TestInterruptWithManyStuckInFlight: with 20,000 requests in flight whose
// client ignores cancellation, an interrupted run still returns within its
// drain plus AbandonAfter (with a generous margin for a busy machine),
// every request recorded once, as cancelled; the abandoned clients'
// records, when they finally return, reach nobody. The default suite
// strands 4,000 (20,000 goroutines took 4 s under -race); -tags
// integration 20,000.
func TestInterruptWithManyStuckInFlight(t *testing.T) {
	n := 4000
	if longtest.On {
		n = 20000
	}
	started := &atomic.Int64{}
	c := stuck{release: make(chan struct{}), started: started}
	sink := &collect{}
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		for started.Load() < int64(n) {
			time.Sleep(10 * time.Millisecond)
		}
		cancel()
	}()
	defer close(c.release) // only after Run returned
	out, err := Run(ctx, Config{
		Concurrency: n, Duration: time.Hour, InterruptedDrain: 100 * time.Millisecond,
		Source: src, Client: c, Sink: sink,
	})
	if err != nil {
		t.Fatal(err)
	}
	sink.mu.Lock()
	defer sink.mu.Unlock()
	if !out.Interrupted || out.Abandoned != uint64(n) || sink.sent != n || len(sink.recs) != n {
		t.Fatalf("interrupted %v, abandoned %d, sent %d, recorded %d: want %d of each", out.Interrupted, out.Abandoned, sink.sent, len(sink.recs), n)
	}
	for _, r := range sink.recs {
		if r.Err != record.Cancelled {
			t.Fatalf("request %d: %q, want cancelled", r.Seq, r.Err)
		}
	}
}

// TestInterruptReturnsOnTime: from the cancellation to Run's return takes
// the interrupted drain plus AbandonAfter, however many requests are
// stuck; the bound below leaves 3 s for a loaded machine.
func TestInterruptReturnsOnTime(t *testing.T) {
	started := &atomic.Int64{}
	c := stuck{release: make(chan struct{}), started: started}
	defer close(c.release)
	ctx, cancel := context.WithCancel(context.Background())
	var cancelled time.Time
	go func() {
		for started.Load() < 500 {
			time.Sleep(5 * time.Millisecond)
		}
		cancelled = time.Now()
		cancel()
	}()
	_, err := Run(ctx, Config{Concurrency: 500, Duration: time.Hour, InterruptedDrain: 200 * time.Millisecond,
		Source: src, Client: c, Sink: &collect{}})
	if err != nil {
		t.Fatal(err)
	}
	if el := time.Since(cancelled); el > 200*time.Millisecond+AbandonAfter+3*time.Second || el < 200*time.Millisecond+AbandonAfter {
		t.Fatalf("returned %v after the interrupt, want the drain (200 ms) + AbandonAfter (%v)", el, AbandonAfter)
	}
}

// TestHurryEndsTheDrainAtOnce: closing Hurry (a second Ctrl-C) cancels and
// records what is in flight without waiting for the drain.
func TestHurryEndsTheDrainAtOnce(t *testing.T) {
	started := &atomic.Int64{}
	c := stuck{release: make(chan struct{}), started: started}
	defer close(c.release)
	ctx, cancel := context.WithCancel(context.Background())
	hurry := make(chan struct{})
	go func() {
		for started.Load() < 100 {
			time.Sleep(5 * time.Millisecond)
		}
		cancel()
		time.Sleep(20 * time.Millisecond)
		close(hurry)
	}()
	sink := &collect{}
	t0 := time.Now()
	out, err := Run(ctx, Config{Concurrency: 100, Duration: time.Hour, InterruptedDrain: time.Hour, Hurry: hurry,
		Source: src, Client: c, Sink: sink})
	if err != nil {
		t.Fatal(err)
	}
	if el := time.Since(t0); el > 30*time.Second {
		t.Fatalf("took %v with an hour of drain: Hurry must end it", el)
	}
	if !out.Interrupted || out.Abandoned != 100 || len(sink.recs) != 100 {
		t.Fatalf("interrupted %v abandoned %d recorded %d", out.Interrupted, out.Abandoned, len(sink.recs))
	}
}

// TestDrainTimeoutAbandonsStuckClients: past the drain timeout a client
// that ignores cancellation is abandoned, not waited for.
func TestDrainTimeoutAbandonsStuckClients(t *testing.T) {
	started := &atomic.Int64{}
	c := stuck{release: make(chan struct{}), started: started}
	defer close(c.release)
	sink := &collect{}
	out, err := Run(context.Background(), Config{Pacer: schedule.Constant{Rate: 100}, Requests: 5, DrainTimeout: 50 * time.Millisecond,
		Source: src, Client: c, Sink: sink})
	if err != nil || out.Interrupted {
		t.Fatalf("err %v interrupted %v", err, out.Interrupted)
	}
	if out.Abandoned != 5 || len(sink.recs) != 5 || sink.recs[0].Err != record.Cancelled {
		t.Fatalf("abandoned %d, records %d", out.Abandoned, len(sink.recs))
	}
}

// causer is a client whose requests run until ctx ends and record
// context.Cause(ctx) as their message.
var causer = ClientFunc(func(ctx context.Context, _ *workload.Request, rec *record.Record) {
	<-ctx.Done()
	rec.Fail(record.Cancelled, context.Cause(ctx).Error(), time.Now())
})

// TestCancelCause: requests still running when the drain timeout ends are
// cancelled with record.ErrDrained (a client records a timeout); those an
// interruption or a second Ctrl-C cut short with context.Canceled.
func TestCancelCause(t *testing.T) {
	tests := []struct {
		name      string
		interrupt bool
		hurry     bool
		want      error
	}{
		{"drain timeout", false, false, record.ErrDrained},
		{"interrupted", true, false, context.Canceled},
		{"hurried", true, true, context.Canceled},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			hurry := make(chan struct{})
			sink := &collect{}
			cfg := Config{Concurrency: 3, Requests: 3, DrainTimeout: 50 * time.Millisecond, InterruptedDrain: 50 * time.Millisecond,
				Source: src, Client: causer, Sink: sink}
			if tc.interrupt {
				cfg.Requests, cfg.Duration, cfg.InterruptedDrain, cfg.Hurry = 0, time.Hour, time.Hour, hurry
				if !tc.hurry {
					cfg.InterruptedDrain = 50 * time.Millisecond
				}
				time.AfterFunc(50*time.Millisecond, func() {
					cancel()
					time.AfterFunc(20*time.Millisecond, func() {
						if tc.hurry {
							close(hurry)
						}
					})
				})
			}
			if _, err := Run(ctx, cfg); err != nil {
				t.Fatal(err)
			}
			sink.mu.Lock()
			defer sink.mu.Unlock()
			if len(sink.recs) != 3 {
				t.Fatalf("%d records, want 3", len(sink.recs))
			}
			for _, r := range sink.recs {
				if r.ErrMsg != tc.want.Error() && !(tc.hurry && r.ErrMsg == abandonMsg) {
					t.Fatalf("request %d cancelled with %q, want %q", r.Seq, r.ErrMsg, tc.want)
				}
			}
		})
	}
}

// TestClosedLoopStartsNoWorkerAfterItEnds: a closed loop of ten million
// workers starts none once the run is interrupted or past its deadline
// (starting them all took 48 s, deaf to Ctrl-C), and returns within the
// interrupted drain plus 2 s (asserted as 10 s); a small one starts all.
func TestClosedLoopStartsNoWorkerAfterItEnds(t *testing.T) {
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tc := range []struct {
		name        string
		ctx         context.Context
		concurrency int
		duration    time.Duration
		workers     int
	}{
		{"interrupted", cancelled, 10_000_000, time.Minute, 0},
		{"past the deadline", context.Background(), 10_000_000, time.Nanosecond, 0},
		{"a small loop starts every worker", context.Background(), 3, 50 * time.Millisecond, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t0 := time.Now()
			out, err := Run(tc.ctx, Config{
				Concurrency: tc.concurrency, Duration: tc.duration, InterruptedDrain: 100 * time.Millisecond,
				Source: src, Client: sleeper(time.Millisecond), Sink: &collect{},
			})
			took := time.Since(t0)
			t.Logf("%d workers started, returned after %v", out.Workers, took)
			if err != nil {
				t.Fatal(err)
			}
			if out.Workers != tc.workers {
				t.Errorf("%d workers started, want %d", out.Workers, tc.workers)
			}
			if took > 10*time.Second {
				t.Errorf("returned after %v, want within 10 s", took)
			}
		})
	}
}

// TestClosedLoopPausesWhenOutOfFiles: a worker whose request found no file
// descriptor on this machine waits OutOfFilesPause before its next, where
// the loop spun (32,000 failed requests in 5 s).
func TestClosedLoopPausesWhenOutOfFiles(t *testing.T) {
	noFiles := ClientFunc(func(_ context.Context, _ *workload.Request, rec *record.Record) {
		rec.Fail(record.LocalFileLimit, "socket: too many open files", time.Now())
	})
	sink := &collect{}
	d := 300 * time.Millisecond
	if _, err := Run(context.Background(), Config{Concurrency: 4, Duration: d, Source: src, Client: noFiles, Sink: sink}); err != nil {
		t.Fatal(err)
	}
	// Each worker: one request, then one a pause, until the duration.
	most := 4 * (int(d/OutOfFilesPause) + 1)
	t.Logf("%d requests in %v (at most %d)", sink.sent, d, most)
	if sink.sent > most {
		t.Errorf("%d requests in %v, want at most %d", sink.sent, d, most)
	}
}
