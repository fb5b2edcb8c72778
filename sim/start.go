package sim

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
)

// Instance is a simulator served on a listener of this process, by Start.
type Instance struct {
	// Server is the simulator (its faults, stats and admin settings).
	Server *Server
	// URL is the API base URL, http://ADDR/v1.
	URL string

	ln     net.Listener
	cancel context.CancelFunc
	wg     sync.WaitGroup
	err    error
}

// Start serves a new simulator of cfg on addr (e.g. 127.0.0.1:0 for a free
// loopback port) until Close: the in-process form of spate sim, for tests
// and examples.
func Start(cfg Config, addr string) (*Instance, error) {
	s, err := New(cfg)
	if err != nil {
		return nil, fmt.Errorf("starting the simulator: %w", err)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		_ = s.Close()
		return nil, fmt.Errorf("starting the simulator: listening on %s: %w", addr, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	in := &Instance{Server: s, URL: "http://" + ln.Addr().String() + "/v1", ln: ln, cancel: cancel}
	in.wg.Go(func() {
		if err := Serve(ctx, ln, s); err != nil && !errors.Is(err, http.ErrServerClosed) && ctx.Err() == nil {
			in.err = err
		}
	})
	return in, nil
}

// Addr is the address the simulator listens on.
func (in *Instance) Addr() string { return in.ln.Addr().String() }

// Close stops serving (streams in flight are cut), waits for the server to
// stop and closes the simulator; it returns the error serving ended with,
// if any.
func (in *Instance) Close() error {
	in.cancel()
	in.wg.Wait()
	return errors.Join(in.err, in.Server.Close())
}
