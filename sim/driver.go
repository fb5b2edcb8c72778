package sim

import (
	"context"
	"sync"
	"time"
)

// maxDriverLag is how far the engine clock may fall behind real time (the
// process was starved of CPU) before it is pulled forward; up to it, steps
// that started late are still timed from their planned start.
const maxDriverLag = 5 * time.Millisecond

// driver runs the engine core in real time: engine time is real time since
// epoch. Each step is computed at its start, the driver sleeps until the
// step's end on the precise clock, then releases the step's tokens to their
// streams, all at once.
type driver struct {
	core    *engineCore
	metrics *simMetrics
	epoch   time.Time

	mu    sync.Mutex
	inbox []*seq
	spare []*seq
	kick  chan struct{}
}

func newDriver(core *engineCore, m *simMetrics) *driver {
	return &driver{core: core, metrics: m, epoch: time.Now(), kick: make(chan struct{}, 1)}
}

// since converts a wall-clock instant to engine time.
func (d *driver) since(t time.Time) time.Duration { return t.Sub(d.epoch) }

// submit hands a sequence (with arrival in engine time) to the engine.
func (d *driver) submit(q *seq) {
	d.mu.Lock()
	d.inbox = append(d.inbox, q)
	d.mu.Unlock()
	select {
	case d.kick <- struct{}{}:
	default:
	}
}

// run is the driver's loop; it returns when ctx is done.
func (d *driver) run(ctx context.Context) {
	unlock := lockClockThread()
	defer unlock()
	w := newWaiter()
	var vnow time.Duration
	for ctx.Err() == nil {
		select {
		case <-d.kick:
		default:
		}
		d.mu.Lock()
		in := d.inbox
		d.inbox = d.spare[:0]
		d.mu.Unlock()
		for i, q := range in {
			d.core.add(q)
			in[i] = nil
		}
		d.spare = in

		real := time.Since(d.epoch)
		if d.core.idle() || real-vnow > maxDriverLag {
			vnow = max(vnow, real)
		}
		if !d.core.hasWork(vnow) {
			d.publishGauges()
			if next, ok := d.core.nextArrival(); ok {
				w.until(ctx, d.epoch.Add(next), d.kick)
			} else {
				select {
				case <-d.kick:
					d.kickSelf()
				case <-ctx.Done():
				}
			}
			continue
		}
		r := d.core.step(vnow)
		d.publishGauges()
		end := vnow + r.dur
		w.until(ctx, d.epoch.Add(end), nil)
		d.publish(r)
		vnow = end
	}
}

func (d *driver) kickSelf() {
	select {
	case d.kick <- struct{}{}:
	default:
	}
}

// publish hands a finished step's tokens to the streams and counts it.
func (d *driver) publish(r *stepResult) {
	for _, q := range r.emitted {
		if q.sink != nil && !q.done {
			q.sink.release(q.generated)
		}
	}
	for _, q := range r.finished {
		if q.sink != nil {
			q.sink.queueTime.Store(int64(q.firstScheduled - q.arrival))
			q.sink.finish(q.generated)
		}
	}
	m := d.metrics
	if r.preemptions > 0 {
		m.preemptions.Add(float64(r.preemptions))
	}
	if r.prefixQueries > 0 {
		m.prefixQueries.Add(float64(r.prefixQueries))
		m.prefixHits.Add(float64(r.prefixHits))
	}
	m.engineSteps.Inc()
	m.batchSize.Observe(float64(len(r.batch)))
}

func (d *driver) publishGauges() {
	running, waiting := d.core.counts()
	m := d.metrics
	m.running.Set(float64(running))
	m.waiting.Set(float64(waiting))
	u := d.core.blocks.usage()
	m.kvUsage.Set(u)
	m.gpuCacheUsage.Set(u)
}
