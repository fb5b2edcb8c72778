package engine

import (
	"strconv"
	"time"

	"github.com/spate-dev/spate/internal/metrics/check"
	"github.com/spate-dev/spate/internal/record"
	"github.com/spate-dev/spate/internal/workload"
)

// send dispatches one request in its own goroutine; release, if not nil,
// is called when it is finished.
func (r *run) send(req *workload.Request, n uint64, intended time.Time, warm bool, slotWait time.Duration, release func()) {
	rec := r.pool.Get().(*record.Record)
	rec.Reset()
	rec.Seq, rec.Warmup, rec.Intended, rec.SlotWait, rec.Intent = r.seq(n), warm, intended, slotWait, req.Intent
	rec.PacedTokens = req.PacedTokens
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		r.do(req, rec, time.Time{})
		if release != nil {
			release()
		}
	}()
}

// do sends req and records it, in the calling goroutine; a conversation
// is sent turn by turn. ready, when set, is when a closed-loop worker was
// free to send (for Record.Turnaround). It reports false when the engine
// is no longer sending (see begin).
func (r *run) do(req *workload.Request, rec *record.Record, ready time.Time) bool {
	ok, _ := r.doKind(req, rec, ready)
	return ok
}

// doKind is do, also returning the request's error kind (OK for a
// conversation, whose turns each have their own).
func (r *run) doKind(req *workload.Request, rec *record.Record, ready time.Time) (bool, record.ErrorKind) {
	if len(req.Turns) > 0 {
		return r.converse(req, rec, ready), record.OK
	}
	f := r.exec(req, rec, ready, true)
	ok := f != nil && r.settle(f, rec)
	kind := rec.Err
	r.pool.Put(rec)
	return ok, kind
}

// exec sends req and fills rec: timings from the client, then the
// request's labels and the outcome of its answer checks. It returns the
// flight to settle, or nil when nothing was sent. scheduled is false for a
// conversation's later turns (see begin).
func (r *run) exec(req *workload.Request, rec *record.Record, ready time.Time, scheduled bool) *flight {
	f := r.begin(rec, scheduled)
	if f == nil {
		return nil
	}
	if !ready.IsZero() {
		rec.Turnaround = rec.Sent.Sub(ready)
	}
	r.cfg.Client.Do(r.reqCtx, req, rec)
	if rec.End.IsZero() {
		rec.End = time.Now()
	}
	rec.ReconcileChunkTokens() // the tokenizer's per-chunk counts, to the server's usage
	rec.Labels = append(rec.Labels, req.Labels...)
	rec.NormInput, rec.Complexity = req.NormTokens, req.Complexity
	if req.Checks != nil && !rec.Failed() {
		a := check.Answer{Text: rec.Answer, ToolCalls: rec.ToolCalls}
		for _, c := range req.Checks.Checks {
			rec.Checks = append(rec.Checks, record.CheckResult{Name: c.Name(), Pass: c.Pass(a)})
		}
	}
	return f
}

// turnLabels are the labels of conversation turns 1 to 32; later turns
// share the last.
var turnLabels = func() []record.Label {
	var l []record.Label
	for i := 1; i <= 32; i++ {
		v := strconv.Itoa(i)
		if i == 32 {
			v = "32+"
		}
		l = append(l, record.Label{Key: "turn", Value: v})
	}
	return l
}()

// converse sends a conversation's turns in order, each one record: the
// history grows with every user message and the answer the server gave
// (kept from the record), with the turn's think time before each later
// turn. A failed turn ends the conversation; so does the end of sending,
// before a new turn. The first turn is intended at the conversation's
// intended time, a later one when its think time after the answer before
// it is over (the answer's end plus the think time): a send the machine
// made late is the schedule's lag, not a longer think. It reports false
// when the engine is no longer sending.
func (r *run) converse(conv *workload.Request, rec *record.Record, ready time.Time) bool {
	history := append([]workload.Message(nil), conv.Messages...)
	seq, warm := rec.Seq, rec.Warmup
	var answered time.Time // the end of the turn before
	for t, turn := range conv.Turns {
		if t > 0 {
			intended := answered.Add(turn.Think)
			if wait := time.Until(intended); wait > 0 {
				timer := time.NewTimer(wait)
				select {
				case <-timer.C:
				case <-r.stopped:
					timer.Stop()
					return true
				case <-r.reqCtx.Done():
					timer.Stop()
					return true
				}
			}
			select {
			case <-r.stopped:
				return true
			case <-r.reqCtx.Done():
				return true
			default:
			}
			rec = r.pool.Get().(*record.Record)
			rec.Reset()
			rec.Seq, rec.Warmup, rec.Intent, rec.Intended = seq, warm, conv.Intent, intended
			ready = time.Time{}
		}
		history = append(history, workload.Message{Role: "user", Content: turn.Prompt})
		req := &workload.Request{
			Messages: history, MaxTokens: turn.MaxTokens, InputTokens: turn.InputTokens, KeepAnswer: true,
			Intent: conv.Intent, Session: conv.Session, Tools: conv.Tools, Checks: conv.Checks,
			Temperature: conv.Temperature, TopP: conv.TopP, Model: conv.Model, Logprobs: conv.Logprobs,
			Labels: append(append(make([]workload.Label, 0, len(conv.Labels)+1), conv.Labels...), turnLabels[min(t, len(turnLabels)-1)]),
			// No NormTokens: a turn also sends the history, whose answers
			// the workload could not weigh; normalised throughput is then
			// not reported (see metrics).
			Complexity: conv.Complexity,
		}
		f := r.exec(req, rec, ready, t == 0)
		if f == nil {
			r.pool.Put(rec)
			return false
		}
		failed, answer := rec.Failed(), string(rec.Answer)
		answered = rec.End
		ok := r.settle(f, rec)
		r.pool.Put(rec)
		if !ok {
			return false
		}
		if failed {
			return true
		}
		history = append(history, workload.Message{Role: "assistant", Content: answer})
	}
	return true
}
