package merge

import (
	"context"
	"math"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/spate-dev/spate/internal/longtest"
)

// fakeClock is a local clock that moves only when slept on or probed.
type fakeClock struct{ t time.Time }

func (c *fakeClock) Now() time.Time { return c.t }
func (c *fakeClock) Sleep(_ context.Context, d time.Duration) error {
	if d > 0 {
		c.t = c.t.Add(d)
	}
	return nil
}

// fakeTarget is a server whose clock is offset from the fake local one;
// each probe takes rtt, and the Date is read half-way.
func fakeTarget(c *fakeClock, offset, rtt time.Duration) DateProbe {
	return func(context.Context) (time.Time, error) {
		c.t = c.t.Add(rtt / 2)
		d := c.t.Add(offset).Truncate(time.Second)
		c.t = c.t.Add(rtt - rtt/2)
		return d, nil
	}
}

func TestEstimateOffsetFakeClock(t *testing.T) {
	tests := []struct {
		offset, rtt time.Duration
		start       time.Duration // local start, past a whole second
	}{
		{2345678 * time.Microsecond, 300 * time.Microsecond, 0},
		{-700 * time.Millisecond, 300 * time.Microsecond, 123 * time.Millisecond},
		{0, 50 * time.Microsecond, 999 * time.Millisecond},
		{41*time.Second + 7*time.Millisecond, 5 * time.Millisecond, 400 * time.Millisecond},
		{-3*time.Hour - 1500*time.Microsecond, 2 * time.Millisecond, 17 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.offset.String()+"/"+tt.rtt.String(), func(t *testing.T) {
			clk := &fakeClock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC).Add(tt.start)}
			c, err := EstimateOffset(context.Background(), fakeTarget(clk, tt.offset, tt.rtt), clk, ClockOptions{})
			if err != nil {
				t.Fatal(err)
			}
			trueMS := float64(tt.offset) / 1e6
			if math.Abs(c.OffsetMS-trueMS) > c.UncertaintyMS {
				t.Fatalf("estimate %.3f ± %.3f ms does not hold the true offset %.3f ms", c.OffsetMS, c.UncertaintyMS, trueMS)
			}
			if bound := float64(tt.rtt)/1e6 + 1.01; c.UncertaintyMS > bound {
				t.Fatalf("uncertainty %.3f ms, want at most a round trip plus the 1 ms goal (%.3f ms); %d probes", c.UncertaintyMS, bound, c.Probes)
			}
			t.Logf("estimate %.3f ± %.3f ms (true %.3f) in %d probes", c.OffsetMS, c.UncertaintyMS, trueMS, c.Probes)
			if c.Probes > 100 {
				t.Fatalf("%d probes", c.Probes)
			}
		})
	}
}

func TestEstimateOffsetContradiction(t *testing.T) {
	clk := &fakeClock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	n := 0
	probe := func(ctx context.Context) (time.Time, error) {
		n++
		if n == 3 {
			return time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC), nil // a stale cached Date
		}
		return fakeTarget(clk, 0, time.Millisecond)(ctx)
	}
	if _, err := EstimateOffset(context.Background(), probe, clk, ClockOptions{}); err == nil {
		t.Fatal("contradictory Date values gave an estimate")
	}
}

// aheadServer is a loopback HTTP server whose Date header runs offset
// ahead of this machine's clock.
func aheadServer(t *testing.T, offset time.Duration) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Date", time.Now().Add(offset).UTC().Format(http.TimeFormat))
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestHTTPDateProbe reads a real server's Date header: whole seconds of
// its clock, so the reading lies between the send less a second and the
// answer, both on the server's clock (no bound on how long that takes).
// TestEstimateOffset* turn such readings into an offset on a clock of
// their own; TestEstimateOffsetHTTP does it against this server in real
// time.
func TestHTTPDateProbe(t *testing.T) {
	const offset = 1234500 * time.Microsecond
	srv := aheadServer(t, offset)
	probe := HTTPDateProbe(srv.Client(), srv.URL)
	for range 3 {
		s := time.Now()
		got, err := probe(context.Background())
		r := time.Now()
		if err != nil {
			t.Fatal(err)
		}
		if lo, hi := s.Add(offset-time.Second), r.Add(offset); got.Before(lo) || got.After(hi) {
			t.Fatalf("Date read %v, want within [%v, %v]: the send less a second and the answer, %v ahead", got, lo, hi, offset)
		}
	}
}

// TestEstimateOffsetHTTP measures a real HTTP server on loopback whose
// Date header runs 1.2345 s ahead of this machine's clock. The Date header
// counts whole seconds, so the estimate waits for the server's clock to
// tick: it takes 2 s or more and runs with -tags integration.
func TestEstimateOffsetHTTP(t *testing.T) {
	longtest.Skip(t)
	const offset = 1234500 * time.Microsecond
	srv := aheadServer(t, offset)
	c, err := EstimateOffset(context.Background(), HTTPDateProbe(srv.Client(), srv.URL), SystemClock{}, ClockOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("estimate %.3f ± %.3f ms in %d probes", c.OffsetMS, c.UncertaintyMS, c.Probes)
	if math.Abs(c.OffsetMS-1234.5) > c.UncertaintyMS {
		t.Fatalf("estimate %.3f ± %.3f ms does not hold the true offset 1234.5 ms", c.OffsetMS, c.UncertaintyMS)
	}
	// Loopback round trips are well under a millisecond; on a loaded
	// machine a few probes may be late, so allow a wide margin.
	if c.UncertaintyMS > 100 {
		t.Fatalf("uncertainty %.3f ms", c.UncertaintyMS)
	}
}

func TestHTTPDateProbeNoDate(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header()["Date"] = nil // net/http then sends none
	}))
	defer srv.Close()
	if _, err := HTTPDateProbe(srv.Client(), srv.URL)(context.Background()); err == nil {
		t.Fatal("no Date header: want an error")
	}
}
