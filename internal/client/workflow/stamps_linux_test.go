//go:build linux

package workflow

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spate-dev/spate/internal/client/rawhttp"
	"github.com/spate-dev/spate/internal/record"
	"github.com/spate-dev/spate/internal/workload"
)

// stampedSpec is a whole step (JSON) and then a streamed one, on the test
// server of TestStepsStampedByTheirReads.
const stampedSpec = `
name: stamped
steps:
  - name: retrieve
    url: "{{.Vars.target}}/whole"
    body: '{}'
    extract: {passage: passage}
  - name: generate
    url: "{{.Vars.target}}/stream"
    body: '{}'
`

// TestStepsStampedByTheirReads: a workflow's steps are stamped by the reads
// that brought their bytes, not by when the step's goroutine read them.
// With every read held 40 ms (a loaded machine's late reader), a whole
// step's end and a streamed step's events lie within the server's writes
// (the kernel's receive times), none late, and the record's read lag says
// how late the reads came; without kernel stamps each stamp is the read's
// own time, counted late (the answer's first event, its gaps, its end),
// and its range holds the write. When the first two events come 5 ms
// apart, one read brings both: with kernel stamps they share the second's
// time, and the first is late by the read's spread. Before, everything was
// stamped when read, 40 ms after the write, with nothing late and no read
// lag to say so.
func TestStepsStampedByTheirReads(t *testing.T) {
	if !rawhttp.Available() {
		t.Skip("reads are stamped on Linux only")
	}
	const hold = 40 * time.Millisecond
	apart := []time.Duration{20 * time.Millisecond, 80 * time.Millisecond, 140 * time.Millisecond}
	close := []time.Duration{20 * time.Millisecond, 25 * time.Millisecond, 140 * time.Millisecond}
	var closeNow atomic.Bool // the server writes the close schedule
	type window [2]time.Time // around a write
	wholeWrote := make(chan window, 1)
	streamWrote := make(chan []window, 1)
	mux := http.NewServeMux()
	mux.HandleFunc("/whole", func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		time.Sleep(30 * time.Millisecond)
		w.Header().Set("Content-Type", "application/json")
		var win window
		win[0] = time.Now()
		fmt.Fprint(w, `{"passage": "p"}`)
		w.(http.Flusher).Flush()
		win[1] = time.Now()
		wholeWrote <- win
	})
	mux.HandleFunc("/stream", func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		start := time.Now()
		w.Header().Set("Content-Type", "text/event-stream")
		fl := w.(http.Flusher)
		at := apart
		if closeNow.Load() {
			at = close
		}
		wins := make([]window, len(at))
		for i, d := range at {
			time.Sleep(time.Until(start.Add(d)))
			wins[i][0] = time.Now()
			fmt.Fprint(w, `data: {"choices":[{"delta":{"content":" the"}}]}`+"\n\n")
			fl.Flush()
			wins[i][1] = time.Now()
		}
		fmt.Fprint(w, "data: [DONE]\n\n")
		streamWrote <- wins
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	spec, err := Parse([]byte(stampedSpec))
	if err != nil {
		t.Fatal(err)
	}
	// The last case holds the reads 70 ms, past the second write 60 ms
	// after the first: what a stalled machine did to the 40 ms hold.
	for _, tc := range []struct {
		kernel, close bool
		hold          time.Duration
	}{{true, false, hold}, {false, false, hold}, {true, true, hold}, {true, false, 70 * time.Millisecond}} {
		kernel, hold := tc.kernel, tc.hold
		closeNow.Store(tc.close)
		t.Run(fmt.Sprintf("kernel stamps %v/close %v/hold %v", kernel, tc.close, hold), func(t *testing.T) {
			if !kernel {
				defer rawhttp.SetNoKernelStamps()()
			}
			w, err := New(spec, Config{Vars: map[string]any{"target": srv.URL}})
			if err != nil {
				t.Fatal(err)
			}
			do := func() *record.Record {
				rec := &record.Record{}
				rec.Reset()
				rec.Sent = time.Now()
				w.Do(context.Background(), &workload.Request{Prompt: "p"}, rec)
				if rec.Failed() || len(rec.Steps) != 2 {
					t.Fatalf("record: err %q %s, %d steps", rec.Err, rec.ErrMsg, len(rec.Steps))
				}
				return rec
			}
			do() // the connection, unheld
			<-wholeWrote
			<-streamWrote
			restore := rawhttp.SetWakeStall(hold)
			rec := do()
			restore()
			whole, wins := <-wholeWrote, <-streamWrote
			retrieve, generate := rec.Steps[0], rec.Steps[1]
			if generate.Chunks != len(wins) || len(generate.Gaps) != len(wins)-1 {
				t.Fatalf("%d events, %d gaps; want %d, %d", generate.Chunks, len(generate.Gaps), len(wins), len(wins)-1)
			}
			if rec.ReadLag < hold/2 || rec.ReadLag != max(retrieve.ReadLag, generate.ReadLag) {
				t.Errorf("read lag %v (steps %v, %v), want about the %v hold, the steps' largest", rec.ReadLag, retrieve.ReadLag, generate.ReadLag, hold)
			}
			if !rec.End.Equal(generate.End) {
				t.Errorf("the record ends %v after its last step", rec.End.Sub(generate.End))
			}
			// in checks that a stamp, or its range (bound wide, when
			// late), holds the write's time: within it, with the kernel's
			// receive times, unless late. A receive time may come a little
			// after the write returned: on a loaded machine loopback's
			// receive can be left to ksoftirqd (once 2.4 ms after a 0.6 ms
			// write); a stamp taken by the held read comes the whole hold
			// after, so a quarter of it still tells them apart.
			in := func(what string, stamp time.Time, late bool, bound time.Duration, win window) {
				t.Helper()
				if !late {
					if stamp.Before(win[0]) || stamp.After(win[1].Add(hold/4)) {
						t.Errorf("%s stamped %v after its write began (written in %v), not late: want within it, or at most %v after (the held read's stamp would be %v after)", what, stamp.Sub(win[0]), win[1].Sub(win[0]), hold/4, hold)
					}
					return
				}
				if stamp.Before(win[0]) || stamp.Add(-bound).After(win[1]) {
					t.Errorf("%s stamped %v after its write began (late by at most %v): want a range that holds the write", what, stamp.Sub(win[0]), bound)
				}
			}
			// With kernel stamps, an event shares the next one's stamp
			// when both came in one read (each is its own write here), and
			// is then late: the first two always when written 5 ms apart
			// (close), any two 60 ms apart only if a stalled machine held
			// a read past the next write as well as the 40 ms hold (seen
			// twice, three suites at once: the first two, the second and
			// third).
			lateAt := func(i int) bool { return kernel && i < len(generate.Gaps) && generate.Gaps[i] == 0 }
			wantLate, wantGaps := 0, 0
			for i := range wins {
				if lateAt(i) {
					wantLate++
				}
				if i > 0 && (lateAt(i-1) || lateAt(i)) {
					wantGaps++
				}
			}
			switch {
			case kernel && tc.close && !lateAt(0):
				t.Errorf("first gap %v: want 0, the two events written 5 ms apart brought by one read held %v", generate.Gaps[0], hold)
			case kernel && wantLate == 0:
				if rec.LateEvents != 0 || rec.LateFirst || rec.LateGaps != 0 || rec.EndBound != 0 {
					t.Errorf("late events %d, first %v, gaps %d, end bound %v: want none late", rec.LateEvents, rec.LateFirst, rec.LateGaps, rec.EndBound)
				}
			case kernel:
				// Those that share the next one's read are late, the rest
				// on time.
				if !tc.close || wantLate > 1 {
					t.Logf("gaps %v: events written 60 ms apart came in one read, the machine held it past the next write", generate.Gaps)
				}
				if rec.LateEvents != wantLate || rec.LateFirst != lateAt(0) || rec.LateGaps != wantGaps || lateAt(0) && rec.FirstBound < 3*time.Millisecond {
					t.Errorf("late events %d, first %v (by %v), gaps %d: want %d, %v (by the time between the writes), %d: those sharing the next one's read late",
						rec.LateEvents, rec.LateFirst, rec.FirstBound, rec.LateGaps, wantLate, lateAt(0), wantGaps)
				}
			default:
				if rec.LateEvents != len(wins) || !rec.LateFirst || rec.LateGaps != len(wins)-1 || rec.EndBound < hold/2 {
					t.Errorf("late events %d, first %v, gaps %d, end bound %v: want every event, gap and the end late", rec.LateEvents, rec.LateFirst, rec.LateGaps, rec.EndBound)
				}
			}
			in("the whole step's end", retrieve.End, !kernel, retrieve.ReadLag, whole)
			in("the record's end", rec.End, rec.EndBound > 0, rec.EndBound, wins[len(wins)-1])
			ev := generate.FirstToken
			for i, win := range wins {
				if i == 0 {
					in("the first event", ev, rec.LateFirst, rec.FirstBound, win)
					continue
				}
				ev = ev.Add(generate.Gaps[i-1])
				if lateAt(i) {
					// Late by how long it waited for the next write: the
					// record keeps no bound of its own for it, only that
					// it cannot come before its write.
					if ev.Before(win[0]) {
						t.Errorf("event %d stamped %v before its write began", i, win[0].Sub(ev))
					}
					continue
				}
				in(fmt.Sprintf("event %d", i), ev, !kernel, rec.ReadLag, win)
			}
		})
	}
}

// TestFailedStepEndsWhenItFailed: a step that times out on a connection an
// earlier response used ends when it failed, after it began — not at that
// connection's last read, the earlier response's (its end came before its
// start).
func TestFailedStepEndsWhenItFailed(t *testing.T) {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		if n.Add(1) > 1 {
			select {
			case <-r.Context().Done():
			case <-time.After(2 * time.Second):
			}
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"passage": "p"}`)
	}))
	defer srv.Close()
	spec, err := Parse([]byte(`
name: slow
steps:
  - name: retrieve
    url: "{{.Vars.target}}/"
    body: '{}'
    timeout: 100ms
`))
	if err != nil {
		t.Fatal(err)
	}
	w, err := New(spec, Config{Vars: map[string]any{"target": srv.URL}})
	if err != nil {
		t.Fatal(err)
	}
	for i, wantFailed := range []bool{false, true} {
		rec := &record.Record{}
		rec.Reset()
		rec.Sent = time.Now()
		w.Do(context.Background(), &workload.Request{Prompt: "p"}, rec)
		if rec.Failed() != wantFailed || len(rec.Steps) != 1 {
			t.Fatalf("request %d: failed %v (%s %s), %d steps; want failed %v", i, rec.Failed(), rec.Err, rec.ErrMsg, len(rec.Steps), wantFailed)
		}
		if s := rec.Steps[0]; s.End.Before(s.Start) || wantFailed && s.End.Sub(s.Start) < 50*time.Millisecond {
			t.Errorf("request %d: step ends %v after it starts, want after it (and the 100 ms timeout when it failed)", i, s.End.Sub(s.Start))
		}
	}
}
