package merge

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"time"

	"github.com/spate-dev/spate/result"
)

// Clock is the local clock a clock-offset estimate reads and waits on.
type Clock interface {
	Now() time.Time
	Sleep(ctx context.Context, d time.Duration) error
}

// SystemClock is the machine's clock.
type SystemClock struct{}

// Now implements Clock.
func (SystemClock) Now() time.Time { return time.Now() }

// Sleep implements Clock; it returns early with ctx's error.
func (SystemClock) Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// DateProbe asks the other clock for its time once: the value of the Date
// header of one response, to the whole second.
type DateProbe func(ctx context.Context) (time.Time, error)

// HTTPDateProbe probes url with HEAD requests and reads their Date header.
func HTTPDateProbe(client *http.Client, url string) DateProbe {
	return func(ctx context.Context) (time.Time, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodHead, url, nil)
		if err != nil {
			return time.Time{}, err
		}
		resp, err := client.Do(req)
		if err != nil {
			return time.Time{}, err
		}
		resp.Body.Close()
		d := resp.Header.Get("Date")
		if d == "" {
			return time.Time{}, errors.New("the response has no Date header")
		}
		t, err := http.ParseTime(d)
		if err != nil {
			return time.Time{}, fmt.Errorf("reading its Date header %q: %w", d, err)
		}
		return t, nil
	}
}

// ClockOptions bound a clock-offset estimate.
type ClockOptions struct {
	// Budget is how long the estimate may take (default 3 s).
	Budget time.Duration
	// MaxProbes caps the requests sent (default 100).
	MaxProbes int
	// Goal stops the estimate once the uncertainty is this small (default
	// 1 ms).
	Goal time.Duration
	// Step is the spacing of probes while waiting for the other clock's
	// second to tick (default 20 ms).
	Step time.Duration
}

func (o *ClockOptions) defaults() {
	if o.Budget <= 0 {
		o.Budget = 3 * time.Second
	}
	if o.MaxProbes <= 0 {
		o.MaxProbes = 100
	}
	if o.Goal <= 0 {
		o.Goal = time.Millisecond
	}
	if o.Step <= 0 {
		o.Step = 20 * time.Millisecond
	}
}

// EstimateOffset estimates the other clock minus the local one from Date
// values, which have one-second resolution. A probe sent at local time s
// and answered at r with Date D proves the offset is in (D − r, D + 1 s −
// s): the other clock read some instant of [D, D+1 s) at a local instant
// of [s, r]. The estimate intersects these intervals. It first probes
// every Step until the other clock's second ticks, which narrows the
// interval to about Step plus a round trip, then aims each probe at the
// instant the current estimate says the other second ticks, halving the
// interval each time down to about a round trip. The true offset is within
// OffsetMS ± UncertaintyMS whatever the timing of the probes; their
// aiming only decides how narrow the interval gets within the budget.
func EstimateOffset(ctx context.Context, probe DateProbe, clk Clock, opt ClockOptions) (result.ClockOffset, error) {
	opt.defaults()
	var lo, hi time.Duration // bounds of the offset, once have is set
	have := false
	var rtt, minRTT time.Duration
	start := clk.Now()
	probes := 0
	for probes < opt.MaxProbes && clk.Now().Sub(start) < opt.Budget {
		if have {
			width := hi - lo
			if width <= 2*opt.Goal || width <= opt.Goal+2*minRTT {
				break // as narrow as asked, or as a round trip allows
			}
			now := clk.Now()
			wait := opt.Step
			if width <= 5*opt.Step {
				// The other clock's next tick T happens at a local instant
				// within [T−hi, T−lo]: walk through that window in steps
				// of a round trip (or the goal), aiming each probe's
				// reading a half round trip after its send.
				fine := max(opt.Goal, rtt)
				t := now.Add(lo + rtt/2).Truncate(time.Second).Add(time.Second)
				if winStart := t.Add(-hi - rtt/2); now.Before(winStart) {
					wait = winStart.Sub(now)
				} else {
					wait = fine
				}
			}
			if now.Add(wait).Sub(start) >= opt.Budget {
				break
			}
			if err := clk.Sleep(ctx, wait); err != nil {
				return result.ClockOffset{}, err
			}
		}
		s := clk.Now()
		d, err := probe(ctx)
		r := clk.Now()
		probes++
		if err != nil {
			return result.ClockOffset{}, fmt.Errorf("probe %d: %w", probes, err)
		}
		rtt = r.Sub(s)
		if probes == 1 || rtt < minRTT {
			minRTT = rtt
		}
		l, h := d.Sub(r), d.Add(time.Second).Sub(s)
		if !have {
			lo, hi, have = l, h, true
		} else {
			lo, hi = max(lo, l), min(hi, h)
		}
		if lo > hi {
			return result.ClockOffset{}, fmt.Errorf("the Date values contradict each other after %d probes (a clock stepped, or a cache answered with an old Date)", probes)
		}
	}
	if !have {
		return result.ClockOffset{}, errors.New("no probe was sent within the budget")
	}
	ms := func(d time.Duration) float64 { return math.Round(float64(d)/1e3) / 1e3 }
	return result.ClockOffset{
		OffsetMS: ms(lo + (hi-lo)/2),
		// Rounded up, with a microsecond for the rounding of OffsetMS.
		UncertaintyMS: math.Ceil(float64((hi-lo)/2)/1e3+1) / 1e3,
		Against:       "the target's HTTP Date header",
		Probes:        probes,
	}, nil
}
