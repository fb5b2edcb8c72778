package sim

import "sync/atomic"

// stream connects the producer of one request's tokens (the pacer or the
// engine driver, one goroutine on one clock) with the handler goroutine that
// writes them. The producer only stores counters and sends a non-blocking
// wake-up; the handler reads the counters when it wakes and writes every
// token released since its last write, so no token is lost if it falls
// behind.
type stream struct {
	wake      chan struct{} // capacity 1
	released  atomic.Int64  // content tokens released so far
	done      atomic.Bool   // the producer has released everything it will
	cancelled atomic.Bool   // the handler is gone; the producer drops it

	queueTime atomic.Int64 // engine mode: ns from arrival to first scheduling
}

func newStream() *stream { return &stream{wake: make(chan struct{}, 1)} }

func (s *stream) notify() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// release makes the first n tokens available.
func (s *stream) release(n int) {
	s.released.Store(int64(n))
	s.notify()
}

// finish marks the stream complete after releasing n tokens.
func (s *stream) finish(n int) {
	s.released.Store(int64(n))
	s.done.Store(true)
	s.notify()
}
