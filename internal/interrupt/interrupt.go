// Package interrupt turns a user's Ctrl-C (SIGINT) and SIGTERM into the
// stages of stopping a run: the first cancels the context (the run stops
// sending, drains for engine.DefaultInterruptedDrain and writes its partial
// result), the second closes the context's hurry channel (the drain ends at
// once; what was measured is written), the third exits at once.
//
// Stage: engine (how a run stops).
// The data flow: experiment → workload → schedule → engine → client → record
// → metrics → verdict → outputs (docs/design.md).
package interrupt

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// hurryKey is the context key of the channel closed on a second signal.
type hurryKey struct{}

// Hurry returns the channel Watch closes on a second signal (nil when ctx
// did not come from Watch): give it to spate.WithHurry.
func Hurry(ctx context.Context) <-chan struct{} {
	h, _ := ctx.Value(hurryKey{}).(chan struct{})
	return h
}

// Watch returns a context cancelled on the first SIGINT or SIGTERM; the
// second closes its Hurry channel; the third exits the process with code
// 130. Each is announced on stderr. stop ends the watch and cancels ctx.
func Watch(parent context.Context, stderr io.Writer) (ctx context.Context, stop func()) {
	ctx, cancel := context.WithCancel(parent)
	hurry := make(chan struct{})
	ctx = context.WithValue(ctx, hurryKey{}, hurry)
	sigs := make(chan os.Signal, 3)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		defer close(done)
		n := 0
		for range sigs {
			switch n++; n {
			case 1:
				fmt.Fprintln(stderr, "spate: stopping: requests in flight get 2s to finish (interrupt again to stop now)")
				cancel()
			case 2:
				fmt.Fprintln(stderr, "spate: stopping now: writing what was measured (interrupt again to quit without it)")
				close(hurry)
			default:
				os.Exit(130)
			}
		}
	}()
	return ctx, func() {
		signal.Stop(sigs)
		close(sigs)
		<-done
		cancel()
	}
}
