//go:build linux

package rawhttp

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestTimeout: Request.Timeout fails a request still running when it
// ends, whatever it is waiting for (the response, the socket's room for
// the request, the dial), with ErrTimeout and the reason's message; the
// pooled call and timer it leaves behind time nothing else out.
func TestTimeout(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/quick" {
			io.WriteString(w, "ok")
			return
		}
		io.WriteString(w, "first\n")
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer srv.Close()
	c := newClient(t, srv.URL)
	host := strings.TrimPrefix(srv.URL, "http://")

	t.Run("response", func(t *testing.T) {
		h := &collect{}
		start := time.Now()
		_, err := c.Do(context.Background(), &Request{Raw: get("/", host), Handler: h, Timeout: 100 * time.Millisecond})
		if took := time.Since(start); !errors.Is(err, ErrTimeout) || took < 100*time.Millisecond || took > 5*time.Second {
			t.Fatalf("error %v after %v, want a timeout after 100 ms", err, took)
		}
		if string(h.body) != "first\n" {
			t.Fatalf("body %q", h.body)
		}
	})
	t.Run("pooled timers time nothing else out", func(t *testing.T) {
		// The calls of timed-out requests are reused: their timers must
		// not fire for the next request, nor a fired one linger.
		for i := range 200 {
			h := &collect{}
			timeout := time.Minute
			if i%50 == 0 {
				timeout = time.Millisecond
			}
			path := "/quick"
			if timeout == time.Millisecond {
				path = "/"
			}
			_, err := c.Do(context.Background(), &Request{Raw: get(path, host), Handler: h, Timeout: timeout})
			if timeout == time.Millisecond {
				if !errors.Is(err, ErrTimeout) {
					t.Fatalf("request %d: error %v, want a timeout", i, err)
				}
				continue
			}
			if err != nil || string(h.body) != "ok" {
				t.Fatalf("request %d: error %v, body %q", i, err, h.body)
			}
		}
	})
	t.Run("writing", func(t *testing.T) {
		// A server that never reads: the request waits for room in the
		// socket's buffer until its time is over.
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		go func() {
			for {
				nc, err := ln.Accept()
				if err != nil {
					return
				}
				defer nc.Close()
			}
		}()
		addr := ln.Addr().String()
		c := newClient(t, "http://"+addr)
		body := strings.Repeat("x", 64<<20)
		raw := append(AppendHead(nil, "POST", "/", addr, len(body)), "\r\n"+body...)
		start := time.Now()
		_, err = c.Do(context.Background(), &Request{Raw: raw, Handler: &collect{}, Timeout: 200 * time.Millisecond})
		if took := time.Since(start); !errors.Is(err, ErrTimeout) || err.Error() != "writing request: request timed out" || took > 5*time.Second {
			t.Fatalf("error %v after %v, want writing request: request timed out", err, took)
		}
	})
	t.Run("dial", func(t *testing.T) {
		// A name whose lookup never answers: the dial ends with the
		// request's time, a timeout that keeps the dial's message.
		stuck := &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
			<-ctx.Done()
			return nil, ctx.Err()
		}}
		c, err := New(Config{Addr: "stuck.test:80", Resolver: stuck})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		start := time.Now()
		_, err = c.Do(context.Background(), &Request{Raw: get("/", "stuck.test"), Handler: &collect{}, Timeout: 100 * time.Millisecond})
		var op *net.OpError
		if took := time.Since(start); !errors.Is(err, ErrTimeout) || !errors.As(err, &op) || op.Op != "dial" || took > 5*time.Second {
			t.Fatalf("error %v after %v, want a dial error that is a timeout", err, took)
		}
	})
}

// TestContextWatch: requests that share a context wait on the reactor
// alone, the Client watching the context for them: its end ends them all,
// with its cause. A request with another context while that one is live
// waits on its own; once the watched one has ended, the next context is
// watched, and the old watch ends none of its requests.
func TestContextWatch(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/quick" {
			io.WriteString(w, "ok")
			return
		}
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer srv.Close()
	c, err := New(Config{Addr: strings.TrimPrefix(srv.URL, "http://"), WatchContext: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	do := func(ctx context.Context, path string) (string, error) {
		h := &collect{}
		_, err := c.Do(ctx, &Request{Raw: get(path, host), Handler: h})
		return string(h.body), err
	}
	if _, err := do(context.Background(), "/quick"); err != nil {
		t.Fatal(err) // a context that never ends is not watched
	}

	runA, endA := context.WithCancelCause(context.Background())
	errA := errors.New("run A is over")
	if _, err := do(runA, "/quick"); err != nil {
		t.Fatal(err) // A is watched from its first request
	}
	results := make(chan error, 8)
	for range 8 {
		go func() { _, err := do(runA, "/"); results <- err }()
	}
	// Another context while A is live: waited on by its request.
	ctxB, cancelB := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancelB()
	start := time.Now()
	if _, err := do(ctxB, "/"); !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 5*time.Second {
		t.Fatalf("request of an unwatched context: error %v after %v, want its deadline", err, time.Since(start))
	}
	if w := c.watched.Load(); w == nil || w.done != runA.Done() {
		t.Fatal("the shared context is not the one watched")
	}
	endA(errA)
	for range 8 {
		select {
		case err := <-results:
			if !errors.Is(err, errA) {
				t.Fatalf("request of the watched context: error %v, want its cause", err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("the watched context's end did not end its requests")
		}
	}

	// The next context is watched; A's watch, over, ends nothing of it.
	runC, endC := context.WithCancelCause(context.Background())
	if body, err := do(runC, "/quick"); err != nil || body != "ok" {
		t.Fatalf("after the watched context ended: error %v, body %q", err, body)
	}
	if w := c.watched.Load(); w == nil || w.done != runC.Done() || w.gen != 2 {
		t.Fatal("the next context is not watched")
	}
	got := make(chan error, 1)
	go func() { _, err := do(runC, "/"); got <- err }()
	time.Sleep(100 * time.Millisecond) // it waits on the server
	c.endCalls(1)                      // A's watch once more: C's request is not A's
	select {
	case err := <-got:
		t.Fatalf("A's watch ended C's request: %v", err)
	case <-time.After(100 * time.Millisecond):
	}
	errC := errors.New("run C is over")
	endC(errC)
	select {
	case err := <-got:
		if !errors.Is(err, errC) {
			t.Fatalf("request of the second watched context: error %v, want its cause", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the second watched context's end did not end its request")
	}

	// Contexts of one request each: watched once, not renewed.
	ctxD, cancelD := context.WithCancel(context.Background())
	if _, err := do(ctxD, "/quick"); err != nil {
		t.Fatal(err)
	}
	cancelD()
	ctxE, cancelE := context.WithCancel(context.Background())
	defer cancelE()
	if _, err := do(ctxE, "/quick"); err != nil {
		t.Fatal(err)
	}
	if w := c.watched.Load(); w == nil || w.done != ctxD.Done() {
		t.Fatal("a watch that saw one request was renewed")
	}

	// Without WatchContext, no context is watched.
	plain := newClient(t, srv.URL)
	h := &collect{}
	if _, err := plain.Do(ctxE, &Request{Raw: get("/quick", host), Handler: h}); err != nil || plain.watched.Load() != nil {
		t.Fatalf("error %v; watched %v, want none", err, plain.watched.Load())
	}
}

// TestDialErrorAfterDeadline: a dial that fails once the request's time is
// over is the request's timeout, keeping the dial's message, even when the
// dial's context has not yet been told (its timer late on a loaded machine:
// request 0 of "pooled timers time nothing else out" once failed as a plain
// dial error); before the deadline, or when the caller cancelled, the
// dial's error stays as it is.
func TestDialErrorAfterDeadline(t *testing.T) {
	now := time.Now()
	dialErr := &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("i/o timeout")}
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tc := range []struct {
		name     string
		ctx      context.Context
		deadline time.Time
		timeout  bool
	}{
		{"deadline passed", context.Background(), now.Add(-time.Millisecond), true},
		{"deadline now", context.Background(), now, true},
		{"deadline ahead", context.Background(), now.Add(time.Millisecond), false},
		{"no deadline", context.Background(), time.Time{}, false},
		{"caller cancelled", cancelled, now.Add(-time.Millisecond), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := dialError(tc.ctx, tc.deadline, dialErr, now)
			var op *net.OpError
			if errors.Is(err, ErrTimeout) != tc.timeout || !errors.As(err, &op) || op.Op != "dial" {
				t.Errorf("error %v: timeout %v, want %v, and the dial's error kept", err, errors.Is(err, ErrTimeout), tc.timeout)
			}
		})
	}
}
