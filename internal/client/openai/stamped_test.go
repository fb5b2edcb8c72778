package openai

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spate-dev/spate/internal/client/rawhttp"
	"github.com/spate-dev/spate/internal/workload"
)

// TestNetHTTPStreamStampedByItsReads: a stream read through net/http (an
// https:// target) is stamped with its reads' receive times, and what a
// late read may have moved is counted and bounded as on the reactor path.
// The server writes the first token, a second 3 ms later, then two more
// 60 ms apart; every read is held 40 ms after its wake-up, so the first
// two tokens come in one read. With the kernel's receive stamps, the
// first token's stamp is that read's (the second token's arrival): it is
// late, and its bound reaches back past its write, to the receive time of
// the read's first byte (no further: not to the request); the third token, alone
// in its read, is stamped when it arrived, within its write, not 40 ms
// later. Without them, every token's read is late by at least the hold
// and says so. Either way, each true time lies in its stamp's range. When
// the server writes the first two tokens at once (one TLS record), they
// arrived together: the shared stamp is exact, and nothing is late.
func TestNetHTTPStreamStampedByItsReads(t *testing.T) {
	if !rawhttp.Available() {
		t.Skip("reads are stamped on Linux only")
	}
	const hold = 40 * time.Millisecond
	at := []time.Duration{20 * time.Millisecond, 23 * time.Millisecond, 83 * time.Millisecond, 143 * time.Millisecond}
	var oneWrite atomic.Bool              // the first two tokens in one write, at at[0]
	wrote := make(chan [][2]time.Time, 1) // around each token's write
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		w.Header().Set("Content-Type", "text/event-stream")
		fl := w.(http.Flusher)
		ws := make([][2]time.Time, len(at))
		together := oneWrite.Load()
		for i, d := range at {
			if i == 1 && together {
				ws[1] = ws[0]
				continue
			}
			time.Sleep(time.Until(start.Add(d)))
			ws[i][0] = time.Now()
			fmt.Fprintf(w, "data: %s\n\n", chunk(" the"))
			if i == 0 && together {
				fmt.Fprintf(w, "data: %s\n\n", chunk(" the"))
			}
			fl.Flush()
			ws[i][1] = time.Now()
		}
		fmt.Fprint(w, "data: [DONE]\n\n")
		wrote <- ws
	}))
	defer srv.Close()
	// The last case holds the reads 80 ms, past the third token's write:
	// what a stalled machine did once to the 40 ms hold.
	for _, tc := range []struct {
		together, kernel bool
		hold             time.Duration
	}{{false, true, hold}, {false, false, hold}, {true, true, hold}, {true, true, 2 * hold}} {
		together, kernel, hold := tc.together, tc.kernel, tc.hold
		oneWrite.Store(together)
		t.Run(fmt.Sprintf("one write %v/kernel stamps %v/hold %v", together, kernel, hold), func(t *testing.T) {
			if !kernel {
				defer rawhttp.SetNoKernelStamps()()
			}
			c := newClient(t, srv.URL, func(cfg *Config) { cfg.HTTP = tlsClient(srv) })
			defer c.Close()
			req := &workload.Request{Prompt: "hi", MaxTokens: len(at)}
			prev := do(c, req) // the connection, unheld
			if prev.Failed() {
				t.Fatalf("%s %s", prev.Err, prev.ErrMsg)
			}
			<-wrote
			restore := rawhttp.SetWakeStall(hold)
			rec := do(c, req)
			restore()
			if rec.Failed() {
				t.Fatalf("%s %s", rec.Err, rec.ErrMsg)
			}
			ws := <-wrote
			if rec.Chunks != len(at) || len(rec.Gaps) != len(at)-1 {
				t.Fatalf("%d tokens, %d gaps; want %d, %d", rec.Chunks, len(rec.Gaps), len(at), len(at)-1)
			}
			if rec.ReadLag < hold/2 {
				t.Errorf("read lag %v, want about the %v hold", rec.ReadLag, hold)
			}
			// The first token's true time (its write) lies in its range.
			first := rec.FirstToken
			if together {
				if rec.Gaps[1] == 0 {
					// A stalled machine held the read past the third
					// token's write as well as the 40 ms hold (seen once,
					// three suites at once: the first stamped 84 ms after
					// its write): the first two carry the third's stamp,
					// both late, and their range holds their write.
					t.Logf("the third token came in the first two's read: the machine held it past the third write")
					if rec.LateEvents < 2 || !rec.LateFirst || first.Before(ws[0][0]) || first.Add(-rec.FirstBound).After(ws[0][1]) {
						t.Errorf("late events %d, late first %v (by %v), first stamped %v after its write: want the first two late, their range holding the write",
							rec.LateEvents, rec.LateFirst, rec.FirstBound, first.Sub(ws[0][0]))
					}
					return
				}
				if rec.LateEvents != 0 || rec.LateFirst || rec.Gaps[0] != 0 {
					t.Errorf("late events %d, late first %v, first gap %v; want none late and one stamp for the two tokens of one write", rec.LateEvents, rec.LateFirst, rec.Gaps[0])
				}
				if first.Before(ws[0][0]) || first.After(ws[0][1].Add(hold/4)) {
					t.Errorf("first token stamped %v after its write began (written in %v): want within it, or up to %v after (loopback's receive left to ksoftirqd), not the %v hold later", first.Sub(ws[0][0]), ws[0][1].Sub(ws[0][0]), hold/4, hold)
				}
				return
			}
			if !rec.LateFirst || first.Add(-rec.FirstBound).After(ws[0][1]) || first.Before(ws[0][0]) {
				t.Errorf("first token stamped %v after its write (bound %v, late %v): want a late stamp whose range holds the write",
					first.Sub(ws[0][0]), rec.FirstBound, rec.LateFirst)
			}
			third := first.Add(rec.Gaps[0] + rec.Gaps[1])
			if kernel {
				// The first two share a read, and so its stamp; the third
				// is stamped when it came.
				if rec.Gaps[0] != 0 {
					t.Errorf("first gap %v, want 0: the first two tokens came in one read held %v", rec.Gaps[0], hold)
				}
				if first.After(ws[1][1].Add(hold / 4)) {
					t.Errorf("first token stamped %v after the second's write: want the shared read's receive time (at most %v after: loopback's receive left to ksoftirqd), not the %v hold later", first.Sub(ws[1][1]), hold/4, hold)
				}
				// The range reaches back to when the socket was last seen
				// empty (the kernel may give merged segments the later
				// one's receive time: see rawhttp.StampedConn): after the
				// last response's last token was read, not before it
				// (how long before this request's send depends on the
				// machine: seen 1.07 ms, three suites at once).
				prevLast := prev.FirstToken
				for _, g := range prev.Gaps {
					prevLast = prevLast.Add(g)
				}
				if from := first.Add(-rec.FirstBound); from.Before(prevLast) {
					t.Errorf("first bound %v reaches %v before the last response's last token, want after it", rec.FirstBound, prevLast.Sub(from))
				}
				if rec.Gaps[2] == 0 {
					// The third and fourth, written 60 ms apart, came in
					// one read: a stalled machine held it past the fourth
					// write as well as the 40 ms hold. They share the
					// fourth's stamp; the counts are the first case's.
					t.Logf("the third and fourth tokens came in one read: the machine held it past the fourth write")
					return
				}
				if third.Before(ws[2][0]) || third.After(ws[2][1].Add(hold/4)) {
					t.Errorf("third token stamped %v after its write began (written in %v): want within its write (or up to %v after: loopback's receive left to ksoftirqd), not the %v hold later",
						third.Sub(ws[2][0]), ws[2][1].Sub(ws[2][0]), hold/4, hold)
				}
				if rec.LateEvents != 1 || rec.LateGaps != 1 {
					t.Errorf("late events %d, late gaps %d; want 1, 1 (the first token, the gap out of it)", rec.LateEvents, rec.LateGaps)
				}
				return
			}
			if rec.FirstBound < hold || rec.LateEvents != len(at) || rec.LateGaps != len(at)-1 {
				t.Errorf("first bound %v, late events %d, late gaps %d; want at least the %v hold, every token and gap late",
					rec.FirstBound, rec.LateEvents, rec.LateGaps, hold)
			}
			if third.Add(-rec.ReadLag).After(ws[2][1]) || third.Before(ws[2][0]) {
				t.Errorf("third token stamped %v after its write, read lag %v: want a range that holds the write", third.Sub(ws[2][0]), rec.ReadLag)
			}
		})
	}
}
