package sim

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/spate-dev/spate/internal/jitter"
	"github.com/spate-dev/spate/internal/longtest"
)

// writePaths returns the write paths to test here: the direct ones this
// machine has (io_uring only where the kernel allows it) and net/http's.
func writePaths(t *testing.T) []string {
	t.Helper()
	paths := []string{WritePathHTTP}
	if runtime.GOOS != "linux" {
		return paths
	}
	paths = append(paths, WritePathSend)
	if snd, err := newSender(WritePathURing); err == nil {
		snd.close()
		paths = append(paths, WritePathURing)
	} else {
		t.Logf("io_uring not available here (%v): its path is not tested", err)
	}
	return paths
}

// usesDirect reports whether streams of a server with write path p are
// written straight to the socket.
func usesDirect(p string) bool { return p == WritePathSend || p == WritePathURing }

// rawExchange sends one HTTP/1.1 request on a new connection and returns
// every byte of the answer, read until the server closes the connection.
func rawExchange(t *testing.T, addr, path, body string) []byte {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(20 * time.Second))
	fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s", path, addr, len(body), body)
	b, err := io.ReadAll(c)
	if err != nil && !isReset(err) {
		t.Fatalf("reading the answer: %v", err)
	}
	return b
}

// isReset reports whether err is a connection reset by the peer (how a
// server that aborts a connection with unread data may end it).
func isReset(err error) bool { return errors.Is(err, syscall.ECONNRESET) }

var (
	dateHeader = regexp.MustCompile(`(?m)^Date: .*\r\n`)
	created    = regexp.MustCompile(`"created":\d+`)
)

// normalise removes what differs between two servers answering the same
// request: the Date header and the created timestamps (same width).
func normalise(b []byte) []byte {
	b = dateHeader.ReplaceAll(b, []byte("Date: X\r\n"))
	return created.ReplaceAllFunc(b, func(m []byte) []byte { return bytes.Repeat([]byte("9"), len(m)) })
}

// TestWirePathsByteIdentical sends the same requests to servers that differ
// only in their write path and checks that every byte on the wire is the
// same, the chunked framing included: the direct paths frame each write as
// net/http frames one Write and Flush.
func TestWirePathsByteIdentical(t *testing.T) {
	type reqCase struct {
		name, path, body string
		cfg              func() Config
	}
	chat := func(extra string) string {
		return `{"model":"m","messages":[{"role":"user","content":"Tell me."}],"stream":true` + extra + `}`
	}
	cases := []reqCase{
		{"chat-usage", "/v1/chat/completions", chat(`,"stream_options":{"include_usage":true}`), func() Config { return Deterministic(2*time.Millisecond, time.Millisecond, 6) }},
		{"chat-itl0", "/v1/chat/completions", chat(``), func() Config { return Deterministic(0, 0, 40) }},
		{"chat-one-token", "/v1/chat/completions", chat(`,"max_tokens":1`), func() Config { return Deterministic(time.Millisecond, time.Millisecond, 0) }},
		{"completions", "/v1/completions", `{"prompt":"x","stream":true,"stream_options":{"include_usage":true}}`, func() Config { return Deterministic(time.Millisecond, time.Millisecond, 5) }},
		{"truncated", "/v1/chat/completions", chat(``), func() Config {
			c := Deterministic(time.Millisecond, time.Millisecond, 12)
			c.Faults.TruncateRate = 1
			return c
		}},
		{"stalled", "/v1/chat/completions", chat(``), func() Config {
			c := Deterministic(time.Millisecond, time.Millisecond, 8)
			c.Faults.StallRate, c.Faults.StallDuration = 1, 5*time.Millisecond
			return c
		}},
		{"long-itl0", "/v1/completions", `{"prompt":"x","stream":true,"max_tokens":2000}`, func() Config { return Deterministic(0, 0, 0) }},
	}
	paths := writePaths(t)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var want []byte
			for _, p := range paths {
				cfg := tc.cfg()
				cfg.Seed = 7
				cfg.WritePath = p
				_, url := startServer(t, cfg)
				got := normalise(rawExchange(t, url[len("http://"):], tc.path, tc.body))
				if !bytes.Contains(got, []byte("Transfer-Encoding: chunked")) {
					t.Fatalf("%s: not a chunked answer:\n%s", p, got)
				}
				if want == nil {
					want = got
					continue
				}
				if !bytes.Equal(got, want) {
					t.Errorf("%s: %d bytes on the wire differ from %s's %d:\n%s\n----\n%s", p, len(got), paths[0], len(want), clip(got), clip(want))
				}
			}
		})
	}
}

func clip(b []byte) []byte {
	if len(b) > 1500 {
		return append(b[:1500:1500], "…"...)
	}
	return b
}

// TestWritePathsStreams runs the stream behaviours on every write path (and
// on the portable alarm): timing within tolerance, the shape of the stream,
// truncation and stall faults, a client that goes away, and Close.
func TestWritePathsStreams(t *testing.T) {
	if testing.Short() {
		t.Skip("timing test")
	}
	type variant struct {
		path     string
		portable bool
		hold     int
		tick     time.Duration
	}
	var vs []variant
	for _, p := range writePaths(t) {
		vs = append(vs, variant{path: p})
	}
	vs = append(vs, variant{path: WritePathAuto, portable: true}, variant{path: WritePathAuto, tick: time.Millisecond},
		variant{path: WritePathAuto, hold: 1}, variant{path: WritePathAuto, hold: -1})
	for _, v := range vs {
		name := v.path
		if v.portable {
			name += "-portable-alarm"
		}
		if v.tick > 0 {
			name += "-tick-" + v.tick.String()
		}
		switch v.hold {
		case 1:
			name += "-held-clock"
		case -1:
			name += "-yielding-clock"
		}
		t.Run(name, func(t *testing.T) {
			mk := func(ttft, itl time.Duration, n int) Config {
				c := Deterministic(ttft, itl, n)
				c.WritePath, c.portableAlarm, c.Tick, c.holdClock = v.path, v.portable, v.tick, v.hold
				return c
			}
			t.Run("timing", func(t *testing.T) {
				const ttft, itl, n, streams = 20 * time.Millisecond, 5 * time.Millisecond, 25, 12
				_, url := startServer(t, mk(ttft, itl, n))
				c := newClient(streams)
				jitter.BestOf(t, func() []string {
					probe := jitter.Start(time.Millisecond)
					res := runStaggered(streams, streams, time.Millisecond, func(int) sseResult {
						return streamRequest(context.Background(), c, url+"/v1/chat/completions", chatBody("hi", `,"stream_options":{"include_usage":true}`))
					})
					late := probe.Stop()
					var ttfts, gaps []time.Duration
					for i, r := range res {
						if r.status != 200 || r.readErr != nil || !r.done || r.contents != n || !r.roleFirst || r.usage == nil || r.usage.CompletionTokens != n {
							t.Fatalf("stream %d: status %d err %v done %v contents %d role %v usage %+v", i, r.status, r.readErr, r.done, r.contents, r.roleFirst, r.usage)
						}
						ttfts = append(ttfts, r.ttft)
						gaps = append(gaps, r.gaps...)
					}
					mt, mi := median(ttfts), median(gaps)
					t.Logf("median TTFT %v (set %v), median ITL %v (set %v); %v", mt, ttft, mi, itl, late)
					// The bounds of TestDeterministicTiming; the grid makes
					// the first token late by less than a tick, never early.
					return streamTimingProblems(late, mt, ttft, mi, itl)
				})
			})
			// The variants of the auto path differ in their clock, which
			// "timing" judges; their writes are auto's, whose faults,
			// disconnects and closes the default suite checks once.
			clockOnly := v.path == WritePathAuto && (v.portable || v.tick > 0 || v.hold != 0)
			t.Run("faults", func(t *testing.T) {
				if clockOnly {
					longtest.Skip(t)
				}
				cfg := mk(time.Millisecond, time.Millisecond, 10)
				cfg.Faults = Faults{TruncateRate: 0.5, StallRate: 0.5, StallDuration: 30 * time.Millisecond}
				_, url := startServer(t, cfg)
				c := newClient(4)
				res := runConcurrent(40, 4, func(int) sseResult {
					return streamRequest(context.Background(), c, url+"/v1/chat/completions", chatBody("hi", ""))
				})
				truncated, stalled := 0, 0
				for i, r := range res {
					if r.status != 200 {
						t.Fatalf("request %d: status %d", i, r.status)
					}
					if !r.done {
						if r.contents < 1 || r.contents >= 10 {
							t.Errorf("request %d: cut after %d tokens, want 1..9", i, r.contents)
						}
						truncated++
						continue
					}
					if r.contents != 10 {
						t.Errorf("request %d: %d tokens, want 10", i, r.contents)
					}
					for _, g := range r.gaps {
						if g >= 28*time.Millisecond {
							stalled++
							break
						}
					}
				}
				if truncated == 0 || truncated == 40 || stalled == 0 {
					t.Errorf("%d truncated, %d stalled of 40: want some of each", truncated, stalled)
				}
			})
			t.Run("disconnect", func(t *testing.T) {
				if clockOnly {
					longtest.Skip(t)
				}
				_, url := startServer(t, mk(time.Millisecond, 2*time.Millisecond, 5000))
				c := newClient(2)
				ctx, cancel := context.WithCancel(context.Background())
				got := make(chan sseResult, 1)
				go func() {
					got <- streamRequest(ctx, c, url+"/v1/completions", `{"prompt":"x","stream":true}`)
				}()
				// Disconnect once the server has the request (a fixed sleep
				// can end before a busy machine delivers it).
				waitMetric(t, c, url, "vllm:num_requests_running", 1)
				cancel()
				<-got
				waitMetric(t, c, url, `vllm:request_success_total{finished_reason="abort"}`, 1)
				waitMetric(t, c, url, "vllm:num_requests_running", 0)
				// The connection pool is still usable afterwards.
				r := streamRequest(context.Background(), c, url+"/v1/completions", `{"prompt":"x","stream":true,"max_tokens":3}`)
				if !r.done || r.contents != 3 {
					t.Errorf("after a disconnect: %d tokens, done %v, err %v", r.contents, r.done, r.readErr)
				}
			})
			t.Run("close", func(t *testing.T) {
				if clockOnly {
					longtest.Skip(t)
				}
				s, url := startServer(t, mk(time.Millisecond, 2*time.Millisecond, 5000))
				got := make(chan sseResult, 4)
				for range 4 {
					go func() {
						got <- streamRequest(context.Background(), newClient(1), url+"/v1/completions", `{"prompt":"x","stream":true}`)
					}()
				}
				time.Sleep(60 * time.Millisecond)
				closed := make(chan struct{})
				go func() { _ = s.Close(); close(closed) }()
				select {
				case <-closed:
				case <-time.After(10 * time.Second):
					t.Fatal("Close hung with direct streams in flight")
				}
				for range 4 {
					if r := <-got; r.done {
						t.Errorf("a stream completed despite Close")
					}
				}
			})
		})
	}
}

// waitMetric waits up to 5 s for a metric to reach want.
func waitMetric(t *testing.T, c *http.Client, url, name string, want float64) {
	t.Helper()
	// Generous: the wait ends as soon as the metric is right; only a
	// failure waits this long.
	deadline := time.Now().Add(30 * time.Second)
	for {
		if got := getMetrics(t, c, url)[name]; got == want {
			return
		} else if time.Now().After(deadline) {
			t.Fatalf("%s = %v, want %v", name, got, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestStuckClient checks that a client that sends a request and never reads
// costs the server at most writeStallLimit: the stream fails, the connection
// is dropped, the request leaves, and other streams keep their pace. The
// write paths wait out their stalls side by side, each on its own server
// (the bound, 3 × writeStallLimit + 2 s, is far from what they share).
func TestStuckClient(t *testing.T) {
	if testing.Short() {
		t.Skip("takes a few seconds")
	}
	for _, p := range writePaths(t) {
		t.Run(p, func(t *testing.T) {
			t.Parallel()
			cfg := Deterministic(0, 0, 0)
			cfg.WritePath = p
			_, url := startServer(t, cfg)
			addr := url[len("http://"):]
			conn, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			body := `{"prompt":"x","stream":true,"max_tokens":1000000}`
			fmt.Fprintf(conn, "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
			// A healthy stream alongside keeps its timing.
			c := newClient(1)
			r := streamRequest(context.Background(), c, url+"/v1/completions", `{"prompt":"x","stream":true,"max_tokens":50}`)
			if !r.done || r.contents != 50 {
				t.Errorf("healthy stream beside a stuck one: %d tokens, done %v, err %v", r.contents, r.done, r.readErr)
			}
			waitMetricWithin(t, c, url, `vllm:request_success_total{finished_reason="abort"}`, 1, 3*writeStallLimit+2*time.Second)
			waitMetric(t, c, url, "vllm:num_requests_running", 0)
			// The server dropped the connection: reading it now ends.
			_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
			n, err := io.Copy(io.Discard, bufio.NewReader(conn))
			if err != nil && !isReset(err) {
				t.Errorf("reading the stuck connection after the stall: %d bytes, %v", n, err)
			}
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				t.Errorf("the stuck connection stayed open")
			}
		})
	}
}

func waitMetricWithin(t *testing.T, c *http.Client, url, name string, want float64, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		if got := getMetrics(t, c, url)[name]; got == want {
			return
		} else if time.Now().After(deadline) {
			t.Fatalf("%s = %v after %v, want %v", name, got, within, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestDirectNeedsPlainHTTP11 checks that the direct path is only taken where
// the bytes it frames are right: not behind a wrapping ResponseWriter, and
// not without the connection in the context.
func TestDirectNeedsPlainHTTP11(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("direct writes are Linux-only")
	}
	seen := make(chan int, 4)
	probe := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Hold by the descriptor itself: the probe only looks.
		seen <- directSocket(r, w, func(fd int) (int, error) { return fd, nil })
	})
	wrapped := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		probe.ServeHTTP(struct{ http.ResponseWriter }{w}, r)
	})
	for _, tc := range []struct {
		name   string
		h      http.Handler
		withCC bool
		want   bool
	}{
		{"plain", probe, true, true},
		{"no-conn-context", probe, false, false},
		{"wrapped-writer", wrapped, true, false},
	} {
		hs := httptest.NewUnstartedServer(tc.h)
		if tc.withCC {
			hs.Config.ConnContext = ConnContext
		}
		hs.Start()
		resp, err := http.Post(hs.URL, "application/json", bytes.NewReader(nil))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		hs.Close()
		if got := <-seen >= 0; got != tc.want {
			t.Errorf("%s: direct %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestPacerGrid checks the due times on the tick grid: never before the
// exact time, less than a tick after it, gaps exact when the ITL is a
// multiple of the tick, and exact times without a grid.
func TestPacerGrid(t *testing.T) {
	for _, tc := range []struct {
		name            string
		tick, ttft, itl time.Duration
		start           time.Duration
	}{
		{"multiple", time.Millisecond, 50 * time.Millisecond, 10 * time.Millisecond, 300 * time.Microsecond},
		{"on-grid-start", time.Millisecond, 50 * time.Millisecond, 10 * time.Millisecond, 7 * time.Millisecond},
		{"not-multiple", time.Millisecond, 20 * time.Millisecond, 1500 * time.Microsecond, 250 * time.Microsecond},
		{"no-grid", 1, 20 * time.Millisecond, 1500 * time.Microsecond, 250 * time.Microsecond},
		{"stall", 100 * time.Microsecond, 5 * time.Millisecond, 2 * time.Millisecond, 33 * time.Microsecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newPacer(tc.ttft, tc.itl, tc.tick, nil, true, false)
			defer p.shutdown()
			e := &paced{start: tc.start, total: 50, stallAt: -1}
			if tc.name == "stall" {
				e.stallAt, e.stall = 10, 7*time.Millisecond
			}
			var prev time.Duration
			for k := range e.total {
				exact := tc.start + tc.ttft + time.Duration(k)*tc.itl
				if e.stallAt >= 0 && k >= e.stallAt {
					exact += e.stall
				}
				got := p.dueOf(e, k)
				if got < exact || got-exact >= max(tc.tick, 1) {
					t.Fatalf("token %d due at %v, exact %v: want within [0, %v) after", k, got, exact, tc.tick)
				}
				if tc.tick > 1 && got%tc.tick != 0 {
					t.Fatalf("token %d due at %v, not on the %v grid", k, got, tc.tick)
				}
				if k > 0 && tc.itl%max(tc.tick, 1) == 0 && !(e.stallAt == k) && got-prev != tc.itl {
					t.Fatalf("gap before token %d is %v, want %v", k, got-prev, tc.itl)
				}
				prev = got
			}
		})
	}
}
