package engine

import (
	"context"
	"fmt"
	"time"
)

// maxMissedSteps bounds the pacer steps counting missed requests; past
// it the rest is estimated from the schedule's rate so far.
const maxMissedSteps = 1 << 22

// openLoop sends request n at the pacer's offset n until the schedule ends,
// and nothing after the schedule's deadline: its end plus the grace. Late
// requests are sent at once, keeping their intended time; those still
// unsent at the deadline are counted in r.out.Missed.
func (r *run) openLoop(ctx context.Context) error {
	cfg := r.cfg
	var sem chan struct{}
	if cfg.MaxConcurrency > 0 {
		sem = make(chan struct{}, cfg.MaxConcurrency)
	}
	release := func() { <-sem }
	if sem == nil {
		release = nil
	}
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	dl := r.newDeadline()
	defer dl.stop()
	end := cfg.Warmup + cfg.Duration
	measured := 0
	var prev time.Duration
	// capDebt is how long the loop has waited for slots since it was last
	// on schedule: the part of the current lag the cap caused.
	var capDebt time.Duration
	for n := uint64(0); ; n++ {
		off := cfg.Pacer.Pace(n, prev)
		if off < prev {
			return fmt.Errorf("engine: pacer went back in time at request %d", n)
		}
		if cfg.Duration > 0 && off >= end {
			return nil
		}
		warm := off < cfg.Warmup
		if !warm && cfg.Requests > 0 && measured >= cfg.Requests {
			return nil
		}
		req, err := cfg.Source.Request(n)
		if err != nil {
			return fmt.Errorf("making request %d: %w", n, err)
		}
		intended := r.out.Start.Add(off)
		if d := time.Until(intended); d > 0 {
			capDebt = 0 // ahead of schedule again: earlier waits no longer delay anyone
			timer.Reset(d)
			select {
			case <-timer.C:
			case <-ctx.Done():
				return nil
			}
		} else {
			if ctx.Err() != nil {
				return nil
			}
			if -d > MinGrace {
				dl.know(n, off, measured)
			}
			if dl.passed() {
				r.out.Missed = r.countMissed(n, off, measured)
				return nil
			}
		}
		var wait time.Duration
		if sem != nil {
			select {
			case sem <- struct{}{}:
			default:
				dl.know(n, off, measured)
				t0 := time.Now()
				select {
				case sem <- struct{}{}:
				case <-ctx.Done():
					return nil
				case <-dl.c:
					r.out.Missed = r.countMissed(n, off, measured)
					return nil
				}
				capDebt += time.Since(t0)
				if dl.passed() {
					<-sem
					r.out.Missed = r.countMissed(n, off, measured)
					return nil
				}
			}
			// The lag the cap caused: every slot wait since the loop last
			// was on schedule, as far as this request is late.
			wait = min(capDebt, time.Since(intended))
		}
		if !warm {
			measured++
		}
		r.send(req, n, intended, warm, wait, release)
		prev = off
	}
}

// deadline is when an open-loop stage stops sending: the end of its
// schedule plus the grace. A duration-bounded schedule knows it at once; a
// request-bounded one works it out (by running the pacer to its last
// request) the first time the loop falls behind.
type deadline struct {
	r     *run
	at    time.Time
	c     <-chan time.Time // fires at the deadline, once known
	timer *time.Timer
}

func (r *run) newDeadline() *deadline {
	d := &deadline{r: r}
	if r.cfg.Duration > 0 && r.cfg.Requests == 0 {
		d.set(r.cfg.Warmup + r.cfg.Duration)
	}
	return d
}

// set makes the schedule end at offset end.
func (d *deadline) set(end time.Duration) {
	grace := d.r.cfg.Grace
	if grace <= 0 {
		grace = Grace(end)
	}
	d.r.out.Grace = grace
	d.at = d.r.out.Start.Add(end + grace)
	d.r.sendBy.Store(int64(end + grace))
	d.timer = time.NewTimer(time.Until(d.at))
	d.c = d.timer.C
}

// know works out the deadline, if not yet known, from request n at offset
// off with measured requests sent before it.
func (d *deadline) know(n uint64, off time.Duration, measured int) {
	if d.timer != nil {
		return
	}
	cfg := d.r.cfg
	end := cfg.Warmup + cfg.Duration
	if cfg.Requests > 0 {
		last, _ := d.r.walk(n, off, measured, func(time.Duration) bool { return true })
		if cfg.Duration <= 0 || last < end {
			end = last
		}
	}
	d.set(end)
}

// passed reports whether the deadline is known and past.
func (d *deadline) passed() bool { return d.timer != nil && !time.Now().Before(d.at) }

func (d *deadline) stop() {
	if d.timer != nil {
		d.timer.Stop()
	}
}

// walk runs the pacer from request n (at offset off, measured requests
// sent before it) to the end of the schedule, calling each for the offset
// of every measured request left (n's included) until it returns false. It
// returns the offset of the last measured request it was called for and
// how many it was called for.
func (r *run) walk(n uint64, off time.Duration, measured int, each func(time.Duration) bool) (time.Duration, uint64) {
	cfg := r.cfg
	end := cfg.Warmup + cfg.Duration
	var count uint64
	last := off
	for k, o := n, off; ; k++ {
		if k > n {
			o = cfg.Pacer.Pace(k, last)
		}
		if cfg.Duration > 0 && o >= end {
			break
		}
		if o >= cfg.Warmup {
			if cfg.Requests > 0 && measured+int(count) >= cfg.Requests {
				break
			}
			count++
			if !each(o) {
				last = o
				break
			}
		}
		last = o
	}
	return last, count
}

// countMissed counts the measured requests from request n on (n at offset
// off, measured requests sent before it) that the schedule still held when
// the loop stopped at its deadline. Past maxMissedSteps of them, the rest
// of a duration-bounded schedule is estimated from its rate so far.
func (r *run) countMissed(n uint64, off time.Duration, measured int) uint64 {
	cfg := r.cfg
	if cfg.Requests > 0 && cfg.Duration <= 0 {
		return uint64(cfg.Requests - measured)
	}
	steps := 0
	last, count := r.walk(n, off, measured, func(time.Duration) bool {
		steps++
		return steps < maxMissedSteps
	})
	if steps >= maxMissedSteps && last > off {
		end := cfg.Warmup + cfg.Duration
		rate := float64(count) / float64(last-off)
		more := uint64(rate * float64(end-last))
		if cfg.Requests > 0 {
			more = min(more, uint64(cfg.Requests-measured)-count)
		}
		count += more
	}
	return count
}
