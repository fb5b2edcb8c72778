package workflow

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/spate-dev/spate/internal/client/rawhttp"
	"github.com/spate-dev/spate/internal/engine"
	"github.com/spate-dev/spate/internal/record"
	"github.com/spate-dev/spate/internal/workload"
	"github.com/spate-dev/spate/internal/workload/payload"
)

// Workflow runs a Spec's steps for every request. It is an engine.Client.
type Workflow struct {
	spec  *Spec
	steps []step
	hc    *http.Client
	// Vars are seen by every step's templates as {{.Vars.NAME}} (e.g.
	// target: the run's --target).
	vars  map[string]any
	seed  uint64
	trace bool
}

var _ engine.Client = (*Workflow)(nil)

// Config is what a Workflow needs besides its Spec.
type Config struct {
	// Vars are seen by every template as {{.Vars.NAME}}; spate run sets
	// target to --target.
	Vars map[string]any
	// Headers are sent with every step whose URL is on HeadersHost
	// (host:port) — e.g. Authorization for the LLM API, never leaked to
	// other services a workflow calls. Empty HeadersHost: no step.
	Headers     http.Header
	HeadersHost string
	// Seed fixes the templates' random functions.
	Seed uint64
	// TraceHeader sends a W3C traceparent on every step's request: the
	// record's trace (the logical request's), a new span per step.
	TraceHeader bool
}

// New compiles spec.
func New(spec *Spec, cfg Config) (*Workflow, error) {
	steps, err := compile(spec)
	if err == nil {
		err = ordered(steps, cfg.Vars)
	}
	if err != nil {
		return nil, err
	}
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = 256
	t.DialContext = rawhttp.StampDial(t.DialContext) // see stepReads
	w := &Workflow{spec: spec, steps: steps, hc: &http.Client{Transport: headerTransport{t, cfg.Headers, cfg.HeadersHost}}, vars: cfg.Vars, seed: cfg.Seed, trace: cfg.TraceHeader}
	return w, nil
}

// Spec returns the workflow's definition.
func (w *Workflow) Spec() *Spec { return w.spec }

// StepNames returns the steps' names in order.
func (w *Workflow) StepNames() []string {
	names := make([]string, len(w.steps))
	for i, s := range w.steps {
		names[i] = s.name
	}
	return names
}

type headerTransport struct {
	rt   http.RoundTripper
	h    http.Header
	host string
}

func (t headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if t.host == "" || r.URL.Host != t.host {
		return t.rt.RoundTrip(r)
	}
	r = r.Clone(r.Context())
	for k, vs := range t.h {
		if r.Header.Get(k) == "" {
			for _, v := range vs {
				r.Header.Add(k, v)
			}
		}
	}
	return t.rt.RoundTrip(r)
}

// Do implements engine.Client: it runs the steps in order, each seeing the
// request's variables (prompt, the dataset line's vars) and the values
// earlier steps extracted, and records each step's start, end and error.
// The first step that fails fails the workflow, with its name in the
// message; the steps after it do not run.
func (w *Workflow) Do(ctx context.Context, req *workload.Request, rec *record.Record) {
	vars := make(map[string]any, len(w.vars)+len(req.Vars)+len(w.steps)+2)
	for k, v := range w.vars {
		vars[k] = v
	}
	for k, v := range req.Vars {
		vars[k] = v
	}
	vars["prompt"] = req.Prompt
	vars["seq"] = rec.Seq
	data := payload.NewData(rec.Seq, vars, w.seed)
	rec.Steps = rec.Steps[:0]
	reads := make([]stepReads, len(w.steps))
	if w.trace {
		rec.NewTrace() // the logical request's trace; its span is the workflow's
	}
	for i := range w.steps {
		st := &w.steps[i]
		rs := record.Step{Name: st.name}
		if w.trace {
			for rs.SpanID == ([8]byte{}) {
				binary.BigEndian.PutUint64(rs.SpanID[:], rand.Uint64())
			}
		}
		rs.Start = time.Now()
		out, body, kind, err := w.run(ctx, st, data, rec.TraceID, &rs, &reads[i])
		rs.End, rs.Err = time.Now(), kind
		if err == nil {
			// (A failed step ends when it failed: its connection's last
			// read may be an earlier response's.)
			rs.End = reads[i].end(rs.End)
		}
		rs.ReadLag = reads[i].readLag()
		rec.ReadLag = max(rec.ReadLag, rs.ReadLag)
		end := rs.End
		rec.Steps = append(rec.Steps, rs)
		if err != nil {
			rec.Fail(kind, "step "+st.name+": "+err.Error(), end)
			return
		}
		vars[st.name] = out
		if i == len(w.steps)-1 && req.KeepAnswer {
			// The last step's answer is the workflow's, for answer checks.
			rec.Answer = append(rec.Answer[:0], body...)
		}
	}
	rec.End, rec.Status = time.Now(), 200
	n := len(rec.Steps)
	if n > 0 {
		rec.End = rec.Steps[n-1].End // the last step's last read
	}
	i := answer(rec)
	if n > 0 {
		var ans *stepReads // reads[i] is rec.Steps[i]'s
		if i >= 0 {
			ans = &reads[i]
		}
		lateInto(rec, ans, &reads[n-1])
	}
}

// answer sets a finished workflow's run-level figures from its answer:
// the last step that streamed content is what its user sees come, so the
// run's TTFT is the time to that step's first token, and its gaps and
// output tokens (its usage) are that step's: the answer's ITL and TPOT.
// With no streamed step the answer comes whole: TTFT is the time to the
// end (E2E) and there are no tokens (docs/vector.md). It returns the
// answer step's index, -1 with none.
func answer(rec *record.Record) int {
	rec.FirstToken = rec.End
	for i := len(rec.Steps) - 1; i >= 0; i-- {
		s := &rec.Steps[i]
		if s.FirstToken.IsZero() {
			continue
		}
		rec.FirstToken, rec.Chunks = s.FirstToken, s.Chunks
		rec.Gaps = append(rec.Gaps[:0], s.Gaps...)
		if s.TokensFromUsage {
			// Counted by the server; a count of events is no count of
			// tokens, so without usage the answer has none (no TPOT).
			rec.OutputTokens, rec.OutputSource = s.Tokens, record.TokensUsage
		}
		return i
	}
	return -1
}

// run sends one step and returns its extracted values and its response
// body.
func (w *Workflow) run(ctx context.Context, st *step, data *payload.Data, trace [16]byte, rs *record.Step, reads *stepReads) (map[string]any, []byte, record.ErrorKind, error) {
	url, err := st.url.Execute(data)
	if err != nil {
		return nil, nil, record.RequestFailed, err
	}
	var body io.Reader
	if st.body != nil {
		b, err := st.body.Execute(data)
		if err != nil {
			return nil, nil, record.RequestFailed, err
		}
		body = strings.NewReader(b)
	}
	ctx, cancel := context.WithTimeout(ctx, st.timeout)
	defer cancel()
	hr, err := http.NewRequestWithContext(reads.trace(ctx), st.method, url, body)
	if err != nil {
		return nil, nil, record.RequestFailed, fmt.Errorf("building %s %s: %w", st.method, url, err)
	}
	if body != nil {
		hr.Header.Set("Content-Type", "application/json")
	}
	for k, t := range st.headers {
		v, err := t.Execute(data)
		if err != nil {
			return nil, nil, record.RequestFailed, err
		}
		hr.Header.Set(k, v)
	}
	if rs.SpanID != ([8]byte{}) {
		hr.Header.Set("traceparent", record.TraceParent(trace, rs.SpanID))
	}
	resp, err := w.hc.Do(hr)
	if err != nil {
		return nil, nil, classify(ctx, err), err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 == 2 && strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		// A streamed step: timed event by event; its answer is the text
		// it streamed, {{.Vars.STEP.text}} to later steps.
		text, err := readStream(resp.Body, rs, reads)
		if err != nil {
			return nil, nil, classify(ctx, err), fmt.Errorf("reading the stream: %w", err)
		}
		if rs.Chunks == 0 {
			return nil, nil, record.EmptyOutput, errors.New("the stream carried no generated content")
		}
		if len(st.extract) > 0 {
			return nil, nil, record.BadResponse, errors.New("extract reads a JSON response; this step's response is streamed: use {{.Vars." + st.name + ".text}}")
		}
		return map[string]any{"text": string(text)}, text, record.OK, nil
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, nil, classify(ctx, err), fmt.Errorf("reading the response: %w", err)
	}
	if resp.StatusCode/100 != 2 {
		return nil, nil, record.HTTPStatus(resp.StatusCode), fmt.Errorf("HTTP %d: %s", resp.StatusCode, trimBody(b))
	}
	if len(st.extract) == 0 {
		return nil, b, record.OK, nil
	}
	var v any
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&v); err != nil {
		return nil, nil, record.BadResponse, fmt.Errorf("the response is not JSON (%v): %s", err, trimBody(b))
	}
	out := make(map[string]any, len(st.extract))
	for _, x := range st.extract {
		got, err := lookup(v, x.path)
		if err != nil {
			return nil, nil, record.BadResponse, fmt.Errorf("extract %s: %w", x.name, err)
		}
		out[x.name] = got
	}
	return out, b, record.OK, nil
}

func classify(ctx context.Context, err error) record.ErrorKind {
	if errors.Is(err, context.DeadlineExceeded) {
		return record.Timeout
	}
	if ctx.Err() != nil {
		return record.Cancelled
	}
	if record.OutOfFiles(err) {
		return record.LocalFileLimit // this machine's limit, not the target's
	}
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return record.Connect
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return record.Timeout
	}
	return record.RequestFailed
}
