package metrics

import (
	"fmt"
	"math"
	"strings"
	"sync"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/spate-dev/spate/internal/record"
	"github.com/spate-dev/spate/internal/verdict/resilience"
	"github.com/spate-dev/spate/result"
)

// Metric names, as keys of result.Scenario.Metrics.
const (
	TTFT           = "ttft_ms"
	ITL            = "itl_ms"
	TPOT           = "tpot_ms"
	E2E            = "e2e_ms"
	TTFTIntended   = "ttft_intended_ms"
	E2EIntended    = "e2e_intended_ms"
	FirstReasoning = "first_reasoning_ms"
	FirstAnswer    = "first_answer_ms"
	TokensPerChunk = "tokens_per_chunk"
	OutputTokens   = "output_tokens"
	InputTokens    = "input_tokens"
	// Complexity is the distribution of requests' complexity scores (0–100).
	Complexity  = "complexity"
	ScheduleLag = "schedule_lag_ms"
	SlotWait    = "slot_wait_ms"
	SendDelay   = "send_delay_ms"
	// ReadLag is the distribution of requests' read lag, kept among the
	// histograms for merging and summarised as result.Load.ReadLagMS.
	ReadLag = "read_lag_ms"
	// TTFTEarly is TTFT with each first token read late moved to the
	// earliest its bytes can have come (record.Record.FirstBound before
	// its stamp), kept among the histograms for merging: TTFT's figures
	// lie between its figures and TTFT's (see TTFTShift).
	TTFTEarly = "ttft_early_ms"
)

// DefaultLagBound is the floor of the validity rule's lag bound: a lag
// under it never makes a stage invalid (see validity.go).
const DefaultLagBound = 10 * time.Millisecond

// LateReadShares sets l's late shares (LateEvents, LateFirstTokens,
// LateGaps) from v's counts, for reading: late reads do not change the
// load the server saw, so they do not make a stage invalid; what they may
// have moved is the stage's measurement error (see error.go), and every
// verdict is judged at both ends of it. v without events (no read lag
// measured) sets nothing. Used by the recorder and by merge, on the
// shards' counts added up.
func LateReadShares(l *result.Load, v *result.Validity) {
	if v.Events <= 0 {
		return
	}
	share := func(k, n int) *float64 {
		f := float64(k) / float64(n)
		return &f
	}
	l.LateEvents = share(v.LateEvents, v.Events)
	if v.FirstTokens > 0 {
		l.LateFirstTokens = share(v.LateFirstTokens, v.FirstTokens)
	}
	if v.Gaps > 0 {
		l.LateGaps = share(v.LateGaps, v.Gaps)
	}
}

// TTFTShift is how much TTFT's figures (its percentiles p50 to p99.9 and its
// mean) can be higher than the truth, given early (the TTFTEarly
// histogram's summary): the largest difference, and the figure it is at.
// Each request's true TTFT lies between its TTFTEarly value and its TTFT,
// so each figure's true value lies between the two summaries' (up to the
// histograms' buckets).
func TTFTShift(ttft, early result.Dist) (ms float64, at string) {
	for _, f := range []struct {
		name string
		a, b float64
	}{{"p50", ttft.P50, early.P50}, {"p90", ttft.P90, early.P90}, {"p95", ttft.P95, early.P95}, {"p99", ttft.P99, early.P99}, {"p99.9", ttft.P999, early.P999}, {"mean", ttft.Mean, early.Mean}} {
		if d := f.a - f.b; d > ms {
			ms, at = d, f.name
		}
	}
	return ms, at
}

// Config describes the load a Recorder measures.
type Config struct {
	Start          time.Time
	SLO            SLO
	Mode           string // "open" or "closed"
	Arrival        string
	TargetRate     float64 // open loop only
	Concurrency    int     // closed loop only
	MaxConcurrency int
	LagBound       time.Duration // the lag bound's floor; 0: DefaultLagBound
	Tokenizer      string
	// Window, when positive, keeps that many recent seconds for
	// WindowLookup (thresholds evaluated during the run).
	Window time.Duration

	// TargetTokenRate is the tokens per second of a token-paced stage
	// (OutputBasis: output tokens only), 0 otherwise.
	TargetTokenRate float64
	OutputBasis     bool
	// GapCV is the coefficient of variation of the arrival process's gaps
	// (schedule.GapCV), for the spread of the offered token rate.
	GapCV float64
}

// Recorder aggregates the records of one scenario. It is safe for
// concurrent use; memory does not grow with the number of requests (only
// the per-second series grows, with the duration).
type Recorder struct {
	cfg Config

	mu    sync.Mutex
	hists map[string]*Hist
	// h are the histograms of hists that Record adds to, by field: no map
	// lookup by name per request.
	h recHists
	// phases are the HTTP phases' histograms among hists, by phase.
	phases [record.NumPhases]*Hist
	// readLag holds each request's read lag, when its client measures it;
	// events and lateEvents add up those requests' content events,
	// firsts and lateFirsts their first tokens, gaps and lateGaps their
	// inter-token gaps (see record.Record.LateEvents).
	readLag   *Hist
	ttftEarly *Hist // see TTFTEarly
	// twins says the early histograms (ttftEarly and errs') are still
	// their twins (TTFT, TTFT from the intended time, E2E, E2E from the
	// intended time), sample for sample: no success has been late. They
	// are recorded only from the first that is (see splitEarly).
	twins              bool
	events, lateEvents int64
	firsts, lateFirsts int64
	gaps, lateGaps     int64

	total, succeeded, failed, cancelled, warmup, good int
	goodIntended                                      int // good with TTFT and E2E from the intended time
	errors                                            map[string]int
	errorSamples                                      map[string]string
	inputTokens, outputTokens                         int64
	fromUsage, fromTokenizer                          int
	discAbs, discBase                                 int64
	discN                                             int
	// implausible counts the responses counted both ways whose usage
	// fails the usage check (usage.go), claimed and counted their usage
	// and local counts added up.
	implausible      int
	claimed, counted int64

	firstSent, lastSent         time.Time
	firstIntended, lastIntended time.Time
	sentN                       int
	lastEnd                     time.Time

	inFlight int
	model    string
	// outOfFiles counts the requests this machine could not make for want
	// of a file descriptor (record.LocalFileLimit): the stage is invalid.
	outOfFiles int
	// lags samples the measured sends for the validity rule.
	lags lagSample
	// From the engine, once the stage is over (see Outcome).
	missed, abandoned int
	grace             time.Duration
	win               *window
	winSecs           int
	series            result.Series
	secHist           *hdr.Histogram // TTFT of the current second
	secE2E            *hdr.Histogram // E2E of the current second's successes
	secCols           *secColumns    // ITL, TPOT, intended TTFT and E2E of the current second
	curSec            int

	normIn          float64 // normalised input tokens of successes
	documents       int64   // documents ranked by successes (rerank, score)
	normN           int     // successes whose normalised input was known
	groups          breakdown
	checked, passed int
	byCheck         map[string]*result.CheckCount
	// tasks counts the seed's semantic tasks done: successes that had no
	// checks or passed them all (sTPS).
	tasks int
	paced tokenPace
	out   *outputAgg
	ice   iceAgg
	errs  errorAgg // the measurement error (see error.go)
}

// recHists are the Recorder's histograms that Record adds to, as in
// Recorder.hists under their keys.
type recHists struct {
	ttft, itl, tpot, e2e, ttftIntended, e2eIntended *Hist
	firstReasoning, firstAnswer                     *Hist
	scheduleLag, slotWait, sendDelay                *Hist
	tokensPerChunk, outputTokens, inputTokens       *Hist
	complexity                                      *Hist
}

// New returns a Recorder for one scenario.
func New(cfg Config) *Recorder {
	if cfg.LagBound <= 0 {
		cfg.LagBound = DefaultLagBound
	}
	r := &Recorder{
		cfg:          cfg,
		hists:        map[string]*Hist{},
		errors:       map[string]int{},
		errorSamples: map[string]string{},
		secHist:      hdr.New(1, latencyMax, 2),
		secE2E:       hdr.New(1, latencyMax, 2),
		secCols:      newSecColumns(),
		groups:       breakdown{},
		byCheck:      map[string]*result.CheckCount{},
		readLag:      newLatencyHist(),
		ttftEarly:    newLatencyHist(),
		out:          newOutputAgg(),
		errs:         newErrorAgg(),
		twins:        true,
	}
	for _, k := range []string{TTFT, ITL, TPOT, E2E, TTFTIntended, E2EIntended, FirstReasoning, FirstAnswer, ScheduleLag, SlotWait, SendDelay} {
		r.hists[k] = newLatencyHist()
	}
	for p, k := range PhaseKeys {
		r.phases[p] = newLatencyHist()
		r.hists[k] = r.phases[p]
	}
	for _, k := range []string{TokensPerChunk, OutputTokens, InputTokens, Complexity} {
		r.hists[k] = newCountHist()
	}
	r.h = recHists{
		ttft: r.hists[TTFT], itl: r.hists[ITL], tpot: r.hists[TPOT], e2e: r.hists[E2E],
		ttftIntended: r.hists[TTFTIntended], e2eIntended: r.hists[E2EIntended],
		firstReasoning: r.hists[FirstReasoning], firstAnswer: r.hists[FirstAnswer],
		scheduleLag: r.hists[ScheduleLag], slotWait: r.hists[SlotWait], sendDelay: r.hists[SendDelay],
		tokensPerChunk: r.hists[TokensPerChunk], outputTokens: r.hists[OutputTokens],
		inputTokens: r.hists[InputTokens], complexity: r.hists[Complexity],
	}
	r.lags.x, r.lags.y, r.lags.head = make([]float64, 0, 1024), make([]float32, 0, 1024), make([]float64, 0, 1024)
	if cfg.Window > 0 {
		r.winSecs = max(int((cfg.Window+time.Second-1)/time.Second), 1)
		r.win = newWindow(r.winSecs)
	}
	return r
}

func (r *Recorder) sec(t time.Time) int {
	s := int(t.Sub(r.cfg.Start) / time.Second)
	if s < 0 {
		s = 0
	}
	return s
}

// grow extends the series to hold second s.
func (r *Recorder) grow(s int) {
	for len(r.series.SentPerS) <= s {
		r.series.SentPerS = append(r.series.SentPerS, 0)
		r.series.CompletedPerS = append(r.series.CompletedPerS, 0)
		r.series.ErrorsPerS = append(r.series.ErrorsPerS, 0)
		r.series.InFlight = append(r.series.InFlight, r.inFlight)
		r.series.OutputTokens = append(r.series.OutputTokens, 0)
		r.series.TTFTp50ms = append(r.series.TTFTp50ms, 0)
		r.series.TTFTp99ms = append(r.series.TTFTp99ms, 0)
		r.series.TTFTMeanMS = append(r.series.TTFTMeanMS, 0)
		r.series.E2Ep50ms = append(r.series.E2Ep50ms, 0)
		r.series.E2Ep99ms = append(r.series.E2Ep99ms, 0)
		r.series.E2EMeanMS = append(r.series.E2EMeanMS, 0)
		r.secCols.grow(&r.series)
	}
}

// Sent notes that a request was sent at t (intended at intended); warm-up
// requests count in the series only.
func (r *Recorder) Sent(t, intended time.Time, warmup bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.sec(t)
	r.grow(s)
	r.series.SentPerS[s]++
	r.inFlight++
	if r.inFlight > r.series.InFlight[s] {
		r.series.InFlight[s] = r.inFlight
	}
	if warmup {
		return
	}
	if r.sentN == 0 || t.Before(r.firstSent) {
		r.firstSent = t
	}
	if t.After(r.lastSent) {
		r.lastSent = t
	}
	if r.sentN == 0 || intended.Before(r.firstIntended) {
		r.firstIntended = intended
	}
	if intended.After(r.lastIntended) {
		r.lastIntended = intended
	}
	r.sentN++
}

// flushSec closes the per-second latency figures of the current second.
func (r *Recorder) flushSec() {
	if r.secHist.TotalCount() > 0 && r.curSec < len(r.series.TTFTp50ms) {
		r.series.TTFTp50ms[r.curSec] = float64(r.secHist.ValueAtPercentile(50)) / 1000
		r.series.TTFTp99ms[r.curSec] = float64(r.secHist.ValueAtPercentile(99)) / 1000
		r.series.TTFTMeanMS[r.curSec] = r.secHist.Mean() / 1000
	}
	if r.secE2E.TotalCount() > 0 && r.curSec < len(r.series.E2Ep50ms) {
		r.series.E2Ep50ms[r.curSec] = float64(r.secE2E.ValueAtPercentile(50)) / 1000
		r.series.E2Ep99ms[r.curSec] = float64(r.secE2E.ValueAtPercentile(99)) / 1000
		r.series.E2EMeanMS[r.curSec] = r.secE2E.Mean() / 1000
	}
	r.secHist.Reset()
	r.secE2E.Reset()
	r.secCols.flush(&r.series, r.curSec)
}

// Record adds a finished request. Every request passed to Sent must be
// passed to Record exactly once.
func (r *Recorder) Record(rec *record.Record) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.inFlight--
	s := r.sec(rec.End)
	r.grow(s)
	r.paced.add(rec)
	if !rec.Warmup {
		r.sampleLag(rec)
	}
	if rec.Err == record.Cancelled {
		if !rec.Warmup {
			r.cancelled++
			r.total++
		}
		return
	}
	if rec.Err == record.LocalFileLimit {
		r.outOfFiles++
	}
	r.series.CompletedPerS[s]++
	if rec.Failed() {
		r.series.ErrorsPerS[s]++
	}
	r.series.OutputTokens[s] += int64(rec.OutputTokens)
	if s > r.curSec {
		r.flushSec()
		r.curSec = s
	}
	ttft, hasTTFT := rec.TTFT()
	if hasTTFT {
		r.secHist.RecordValue(int64(ttft / time.Microsecond))
	}
	if !rec.Failed() {
		r.secE2E.RecordValue(max(int64(rec.E2E()/time.Microsecond), 1))
		r.secondOK(rec, ttft, hasTTFT)
		if r.meetsSLO(rec, ttft, hasTTFT) {
			r.series.GoodPerS[s]++
		}
	}
	if rec.Warmup {
		r.warmup++
		return
	}
	r.total++
	r.out.add(rec)
	r.ice.add(rec)
	if rec.Model != "" && rec.Model != r.model {
		r.model = rec.Model
	}
	if rec.End.After(r.lastEnd) {
		r.lastEnd = rec.End
	}
	lag := rec.Lag()
	r.h.scheduleLag.recordDuration(lag)
	if rec.Complexity > 0 {
		r.h.complexity.recordCount(int64(math.Round(rec.Complexity)))
	}
	r.h.slotWait.recordDuration(rec.SlotWait)
	if !rec.Written.IsZero() {
		r.h.sendDelay.recordDuration(rec.Written.Sub(rec.Sent))
	}
	r.recordPhases(rec)
	if rec.ReadLag > 0 {
		r.readLag.recordDuration(rec.ReadLag)
		r.events += int64(rec.Chunks)
		r.lateEvents += int64(rec.LateEvents)
		if rec.Chunks > 0 {
			r.firsts++
			if rec.LateFirst {
				r.lateFirsts++
			}
		}
		r.gaps += int64(len(rec.Gaps))
		r.lateGaps += int64(rec.LateGaps)
	}
	if rec.Failed() {
		if r.win != nil {
			r.win.add(s, rec, false)
		}
		r.failed++
		r.groups.fail(rec)
		k := string(rec.Err)
		r.errors[k]++
		if _, ok := r.errorSamples[k]; !ok && rec.ErrMsg != "" {
			r.errorSamples[k] = rec.ErrMsg
		}
		return
	}
	r.succeeded++
	if rec.NormInput > 0 {
		r.normIn += rec.NormInput
		r.normN++
	}
	r.documents += int64(rec.Documents)
	r.inputTokens += int64(rec.InputTokens)
	r.outputTokens += int64(rec.OutputTokens)
	switch rec.OutputSource {
	case record.TokensUsage:
		r.fromUsage++
	case record.TokensTokenizer:
		r.fromTokenizer++
	}
	if rec.UsageTokens >= 0 && rec.TokenizerTokens >= 0 {
		d := rec.UsageTokens - rec.TokenizerTokens
		if d < 0 {
			d = -d
		}
		r.discAbs += int64(d)
		r.discBase += int64(rec.UsageTokens)
		r.discN++
		// Reasoning the server says it did not stream is not held
		// against it (usage.go).
		if claim := rec.UsageTokens - rec.UsageReasoning; ImplausibleUsage(claim, rec.TokenizerTokens, rec.ToolCalls) {
			r.implausible++
			r.claimed += int64(claim)
			r.counted += int64(rec.TokenizerTokens)
		}
	}
	r.h.outputTokens.recordCount(int64(rec.OutputTokens))
	r.h.inputTokens.recordCount(int64(rec.InputTokens))
	if r.twins && (rec.LateFirst && rec.FirstBound > 0 || rec.ReadLag > 0 && rec.EndBound > 0) {
		r.splitEarly() // this success's lowest latencies are not its measured ones
	}
	e2e := rec.E2E()
	r.h.e2e.recordDuration(e2e)
	r.h.e2eIntended.recordDuration(e2e + lag)
	if hasTTFT {
		r.h.ttft.recordDuration(ttft)
		r.h.ttftIntended.recordDuration(ttft + lag)
		if !r.twins {
			early := ttft
			if rec.LateFirst {
				early = max(ttft-rec.FirstBound, 0)
			}
			r.ttftEarly.recordDuration(early)
		}
	}
	if !rec.FirstReasoning.IsZero() {
		r.h.firstReasoning.recordDuration(rec.FirstReasoning.Sub(rec.Sent))
	}
	if !rec.FirstAnswer.IsZero() {
		r.h.firstAnswer.recordDuration(rec.FirstAnswer.Sub(rec.Sent))
	}
	for _, g := range rec.Gaps {
		r.h.itl.recordDuration(g)
	}
	switch {
	case len(rec.ChunkTokens) > 0:
		for _, n := range rec.ChunkTokens {
			r.h.tokensPerChunk.recordCount(int64(n))
		}
	case rec.Chunks > 0 && rec.OutputTokens == rec.Chunks:
		r.h.tokensPerChunk.h.RecordValues(1, int64(rec.Chunks))
	}
	tpot, hasTPOT := rec.TPOT()
	if hasTPOT {
		r.h.tpot.recordDuration(tpot)
	}
	m := measured(rec, ttft, hasTTFT)
	good := m.met(r.cfg.SLO, 0)
	if good {
		r.good++
		// From the intended time, TTFT and E2E grow by the lag.
		if m.met(r.cfg.SLO, lag) {
			r.goodIntended++
		}
	}
	r.errs.add(rec, m, lag, r.cfg.SLO, !r.twins)
	r.groups.ok(rec, ttft, hasTTFT, tpot, hasTPOT, good)
	if TaskDone(rec) {
		r.tasks++
	}
	if len(rec.Checks) > 0 {
		r.checked++
		if rec.ChecksPassed() {
			r.passed++
		}
		for _, c := range rec.Checks {
			cc := r.byCheck[c.Name]
			if cc == nil {
				cc = &result.CheckCount{}
				r.byCheck[c.Name] = cc
			}
			cc.Evaluated++
			if c.Pass {
				cc.Passed++
			}
		}
	}
	if r.win != nil {
		r.win.add(s, rec, good)
	}
}

// splitEarly gives the early histograms their own samples from now on:
// copies of their twins, which they equal while no success was late.
// Recording them only from then on saves four histogram records per
// request while reads are on time.
func (r *Recorder) splitEarly() {
	r.twins = false
	r.ttftEarly.h = r.h.ttft.h.Clone()
	r.errs.ttftIntEarly.h = r.h.ttftIntended.h.Clone()
	r.errs.e2eEarly.h = r.h.e2e.h.Clone()
	r.errs.e2eIntEarly.h = r.h.e2eIntended.h.Clone()
}

// Scenario computes the scenario's figures, and its histograms encoded for
// the result file. end is when the scenario stopped.
func (r *Recorder) Scenario(name string, end time.Time) (result.Scenario, map[string]string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.flushSec()
	if r.twins {
		r.splitEarly() // the early histograms are read below
	}
	sc := result.Scenario{
		Name:      name,
		StartedAt: r.cfg.Start,
		DurationS: end.Sub(r.cfg.Start).Seconds(),
		Requests: result.Requests{
			Total: r.total, Succeeded: r.succeeded, Failed: r.failed, Cancelled: r.cancelled,
			Abandoned: r.abandoned, Warmup: r.warmup, Errors: r.errors, ErrorSamples: r.errorSamples,
		},
		Metrics: map[string]result.Dist{},
		Series:  r.series,
	}
	enc := map[string]string{}
	for k, h := range r.hists {
		if h.h.TotalCount() == 0 {
			continue
		}
		switch {
		case k == ScheduleLag, k == SlotWait, k == SendDelay:
		case IsPhase(k): // in load()
		default:
			sc.Metrics[k] = h.Summary()
		}
		e, err := h.Encode()
		if err != nil {
			return sc, nil, err
		}
		enc[k] = e
	}
	if r.readLag.h.TotalCount() > 0 {
		e, err := r.readLag.Encode()
		if err != nil {
			return sc, nil, err
		}
		enc[ReadLag] = e
		if e, err = r.ttftEarly.Encode(); err != nil {
			return sc, nil, err
		}
		enc[TTFTEarly] = e
		for k, h := range r.errs.early {
			if h.h.TotalCount() == 0 {
				continue
			}
			if e, err = h.Encode(); err != nil {
				return sc, nil, err
			}
			enc[k] = e
		}
	}
	// The measurement window runs from the first measured send to the last
	// measured completion.
	window := r.lastEnd.Sub(r.firstSent).Seconds()
	if window > 0 {
		sc.Throughput = result.Throughput{
			RequestsPerS:     float64(r.succeeded) / window,
			InputTokensPerS:  float64(r.inputTokens) / window,
			OutputTokensPerS: float64(r.outputTokens) / window,
			TotalTokensPerS:  float64(r.inputTokens+r.outputTokens) / window,
			STPS:             float64(r.tasks) / window,
		}
		sc.Goodput.RequestsPerS = float64(r.good) / window
		sc.Goodput.IntendedRequestsPerS = float64(r.goodIntended) / window
		if r.normN > 0 && r.normN == r.succeeded {
			sc.Throughput.NormalizedTokensPerS = (r.normIn + float64(r.outputTokens)) / window
		}
		sc.Throughput.DocumentsPerS = float64(r.documents) / window
	}
	if done := r.succeeded + r.failed; done > 0 {
		sc.Goodput.Fraction = float64(r.good) / float64(done)
		sc.Goodput.IntendedFraction = float64(r.goodIntended) / float64(done)
	}
	sc.MeasurementError = r.errs.result(r.succeeded+r.failed, &sc, enc)
	FillIntervals(&sc, enc)
	sc.Breakdown = r.groups.result(window)
	if r.checked > 0 {
		sc.Checks = &result.Checks{CheckFigures: *checkFigures(r.checked, r.passed, window), ByCheck: map[string]result.CheckCount{}}
		for name, c := range r.byCheck {
			sc.Checks.ByCheck[name] = *c
		}
	}
	var err error
	if sc.Output, err = r.out.result(enc); err != nil {
		return sc, nil, err
	}
	sc.ICE = r.ice.result()
	sc.Goodput.SLOms = r.cfg.SLO.Millis()
	sc.Tokens = r.tokens()
	if w := JudgeUsage(&sc.Tokens, r.discN); w != "" {
		sc.Warnings = append(sc.Warnings, w)
	}
	sc.Load = r.load()
	sc.Warnings = append(sc.Warnings, r.paced.fill(&sc.Load, r.cfg.TargetTokenRate, r.cfg.OutputBasis, r.cfg.GapCV)...)
	if r.succeeded+r.failed == 0 {
		sc.Warnings = append(sc.Warnings, "no request completed: there are no figures")
	}
	if rl := r.errors[string(record.RateLimited)]; rl > 0 && r.total > 0 && float64(rl)/float64(r.total) > 0.05 {
		sc.Warnings = append(sc.Warnings, fmt.Sprintf("%d of %d requests were rate-limited (HTTP 429): the server pushed back on the load", rl, r.total))
	}
	return sc, enc, nil
}

func (r *Recorder) tokens() result.Tokens {
	t := result.Tokens{
		Input: r.inputTokens, Output: r.outputTokens,
		FromUsage: r.fromUsage, FromTokenizer: r.fromTokenizer, Tokenizer: r.cfg.Tokenizer,
	}
	switch {
	case r.fromUsage > 0 && r.fromTokenizer > 0:
		t.OutputSource = "mixed"
	case r.fromUsage > 0:
		t.OutputSource = "usage"
	case r.fromTokenizer > 0:
		t.OutputSource = "tokenizer"
	default:
		t.OutputSource = "none"
	}
	if r.discN > 0 && r.discBase > 0 {
		d := float64(r.discAbs) / float64(r.discBase)
		t.Discrepancy = &d
		t.DiscrepancySampled = r.discN
	}
	t.UsageImplausible, t.UsageClaimed, t.UsageCounted = r.implausible, r.claimed, r.counted
	return t
}

// sampleLag adds a measured request's send to the validity rule's sample:
// in an open loop its arrival lag (intended time to the request written,
// or sent when it never was), in a closed loop its turnaround.
func (r *Recorder) sampleLag(rec *record.Record) {
	if rec.Sent.IsZero() {
		return
	}
	if r.cfg.Mode != "open" {
		if rec.Turnaround > 0 {
			r.lags.add(rec.Sent.Sub(r.cfg.Start).Seconds(), float64(rec.Turnaround)/float64(time.Millisecond))
		}
		return
	}
	arrived := rec.Sent
	if !rec.Written.IsZero() {
		arrived = rec.Written
	}
	r.lags.add(rec.Intended.Sub(r.cfg.Start).Seconds(), float64(arrived.Sub(rec.Intended))/float64(time.Millisecond))
}

// Outcome records what the engine says of the stage once it is over: the
// scheduled requests it missed, the requests it abandoned, and the grace
// past the schedule's end.
func (r *Recorder) Outcome(missed, abandoned int, grace time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.missed, r.abandoned, r.grace = missed, abandoned, grace
}

// Invalid causes (result.Load.InvalidCause).
const (
	CauseCap          = "concurrency_cap"
	CauseBackpressure = "server_backpressure"
	CauseMissed       = "missed_sends"
	CauseGenerator    = "generator_saturated"
	// CauseFileLimit: this machine ran out of file descriptors (EMFILE).
	CauseFileLimit = "generator_file_limit"
)

// load works out whether the generator delivered the load it was asked
// for (the validity rule of validity.go) and, when not, who is to blame.
func (r *Recorder) load() result.Load {
	l := result.Load{
		Mode: r.cfg.Mode, Arrival: r.cfg.Arrival, TargetRate: r.cfg.TargetRate,
		Concurrency: r.cfg.Concurrency, MaxConcurrency: r.cfg.MaxConcurrency,
		ScheduleLagMS: r.hists[ScheduleLag].Summary(),
		SlotWaitMS:    r.hists[SlotWait].Summary(),
		SendDelayMS:   r.hists[SendDelay].Summary(),
		Missed:        r.missed,
		GraceMS:       float64(r.grace) / float64(time.Millisecond),
		Valid:         true,
	}
	for _, k := range PhaseKeys {
		SetPhase(&l, k, r.hists[k].Summary())
	}
	if span := r.lastSent.Sub(r.firstSent).Seconds(); r.sentN > 1 && span > 0 {
		l.AchievedRate = float64(r.sentN-1) / span
	}
	open := r.cfg.Mode == "open"
	if span := r.lastIntended.Sub(r.firstIntended).Seconds(); open && r.sentN > 1 && span > 0 {
		l.ScheduledRate = float64(r.sentN-1) / span
	}
	lat := r.hists[TTFT].Summary().P50
	if lat == 0 {
		lat = r.hists[E2E].Summary().P50
	}
	j := judge(&r.lags, judgeFacts{open: open, floorMS: float64(r.cfg.LagBound) / float64(time.Millisecond), missed: r.missed, latencyP50MS: lat})
	if r.readLag.h.TotalCount() > 0 && r.events > 0 {
		d := r.readLag.Summary()
		l.ReadLagMS = &d
		v := &j.validity
		v.Events, v.LateEvents = int(r.events), int(r.lateEvents)
		v.FirstTokens, v.LateFirstTokens = int(r.firsts), int(r.lateFirsts)
		v.Gaps, v.LateGaps = int(r.gaps), int(r.lateGaps)
		if r.lateFirsts > 0 {
			v.TTFTShiftMS, v.TTFTShiftAt = TTFTShift(r.hists[TTFT].Summary(), r.ttftEarly.Summary())
		}
		LateReadShares(&l, v)
	}
	l.Validity, l.LagBoundMS = &j.validity, j.validity.BoundMS
	if r.outOfFiles > 0 {
		// Requests that never left this machine are the generator's
		// failure, whatever the lag says: the load was not offered.
		l.Valid, l.InvalidCause = false, CauseFileLimit
		l.InvalidReason = fmt.Sprintf("%d requests failed on this machine, which ran out of file descriptors (EMFILE, RLIMIT_NOFILE): the limit is the load generator's, not the target's, so the load was not offered: lower the concurrency or the rate, raise the limit with ulimit -n, or shard the load", r.outOfFiles)
		return l
	}
	if j.valid {
		return l
	}
	l.Valid = false
	slot, send := l.SlotWaitMS.P99, l.SendDelayMS.P99
	gen := l.ScheduleLagMS.P99 - slot
	var lead string
	switch {
	case !open:
		l.InvalidCause = CauseGenerator
		lead = "the load generator was slow to send each worker's next request (CPU or scheduler bound), so the concurrency was not held: lower it or shard the load; "
	case r.cfg.MaxConcurrency > 0 && slot > 0 && slot >= send && slot >= gen:
		l.InvalidCause = CauseCap
		lead = fmt.Sprintf("requests waited for one of --max-concurrency %d slots (p99 wait %s), so the target rate was not offered: raise the cap or lower the rate; ", r.cfg.MaxConcurrency, ms(slot))
	case r.missed > 0:
		// Without a cap only the sending loop misses sends: a slow server
		// holds a request's own goroutine, not the loop.
		l.InvalidCause = CauseMissed
		lead = "the load generator could not send every scheduled request by the stage's deadline (CPU or scheduler bound): lower the rate, use fewer tokens per request, or shard the load; "
	case send > 0 && send >= slot && send >= gen:
		l.InvalidCause = CauseBackpressure
		lead = fmt.Sprintf("the server was slow to accept connections or read requests (p99 %s to write one), so requests arrived late: ", ms(send))
	default:
		l.InvalidCause = CauseGenerator
		lead = "the load generator could not send on schedule (CPU or scheduler bound): lower the rate, use fewer tokens per request, or shard the load; "
	}
	l.InvalidReason = reason(lead, j.problems)
	return l
}

// Lookup returns a figure for threshold evaluation: agg is "" for scalars,
// else mean, min, max, stddev, count or p (with percentile).
func Lookup(sc *result.Scenario, hist map[string]string, agg string, percentile float64, metric string) (float64, bool) {
	metric, bucket, inBucket := strings.Cut(metric, "@input:")
	if agg == "" {
		if v, ok := outputLookup(sc, metric, bucket); ok || inBucket {
			return v, ok
		}
		if metric == "ice" {
			if sc.ICE == nil || sc.ICE.Conversations == 0 {
				return math.NaN(), true // no conversation with two turns of logprobs
			}
			return sc.ICE.Mean, true
		}
		total := float64(sc.Requests.Succeeded + sc.Requests.Failed)
		switch metric {
		case "error_rate":
			if total == 0 {
				return math.NaN(), true
			}
			return float64(sc.Requests.Failed) / total, true
		case "goodput", "goodput_sent":
			return sc.Goodput.Fraction, true
		case "goodput_rps", "goodput_sent_rps":
			return sc.Goodput.RequestsPerS, true
		case "goodput_intended":
			return sc.Goodput.IntendedFraction, true
		case "goodput_intended_rps":
			return sc.Goodput.IntendedRequestsPerS, true
		case "rps":
			return sc.Throughput.RequestsPerS, true
		case "achieved_rate":
			return sc.Load.AchievedRate, true
		case "input_tps":
			return sc.Throughput.InputTokensPerS, true
		case "output_tps":
			return sc.Throughput.OutputTokensPerS, true
		case "total_tps":
			return sc.Throughput.TotalTokensPerS, true
		case "stps":
			return sc.Throughput.STPS, true
		case "stps_checked":
			if sc.Checks == nil {
				return math.NaN(), true // no request had checks: nothing to compare
			}
			return sc.Checks.STPSChecked, true
		case "recall", "recall_p5", "hit_rate":
			if sc.Vector == nil || sc.Vector.Recall.Count == 0 {
				return math.NaN(), true // not a vector search stage
			}
			switch metric {
			case "recall_p5":
				return sc.Vector.Recall.P5, true
			case "hit_rate":
				return sc.Vector.HitRate, true
			}
			return sc.Vector.Recall.Mean, true
		case "attack_success_rate", "interception_rate", "leak_rate", "false_refusal_rate":
			return probeRate(sc.Probes, metric), true
		case resilience.MSR, resilience.SlopeName, resilience.RecoveryName, resilience.ErrorSlopeName:
			// A figure the stage does not have (no chaos, no fault, too
			// short) is not measured: the threshold fails saying so.
			return resilience.Scalar(sc, metric)
		}
		return 0, false
	}
	key := distKey(metric)
	if inBucket {
		key = bucketHistKey(bucket, key)
	}
	enc, ok := hist[key]
	if !ok {
		// A known distribution with no samples: no value to compare.
		return math.NaN(), true
	}
	h, err := Decode(enc)
	if err != nil {
		return 0, false
	}
	scale := 1000.0
	if metric == "tokens_per_chunk" {
		scale = 1
	}
	d := Summarize(h, scale)
	switch agg {
	case "mean":
		return d.Mean, true
	case "min":
		return d.Min, true
	case "max":
		return d.Max, true
	case "stddev":
		return d.Stddev, true
	case "count":
		return float64(d.Count), true
	}
	return float64(h.ValueAtPercentile(percentile)) / scale, true
}

// distKey is the histogram key of a distribution a threshold names:
// ttft → ttft_ms, ttft_sent → ttft_ms (the send-time figure),
// tokens_per_chunk as it is.
func distKey(metric string) string {
	switch metric {
	case TokensPerChunk:
		return metric
	case "ttft_sent", "e2e_sent":
		return strings.TrimSuffix(metric, "_sent") + "_ms"
	}
	return metric + "_ms"
}

// TaskDone reports whether a finished request is a semantic task done, as
// the seed counts sTPS: it succeeded and, when it had answer checks, passed
// them all.
func TaskDone(rec *record.Record) bool {
	return !rec.Failed() && (len(rec.Checks) == 0 || rec.ChecksPassed())
}

// Progress is a running count, for live display.
type Progress struct {
	Sent, Completed, Failed, InFlight int
	OutputTokens                      int64
	TTFTp50ms, TTFTp99ms              float64 // of the last complete second
}

// Progress returns the counts so far.
func (r *Recorder) Progress() Progress {
	r.mu.Lock()
	defer r.mu.Unlock()
	p := Progress{InFlight: r.inFlight}
	for i := range r.series.SentPerS {
		p.Sent += r.series.SentPerS[i]
		p.Completed += r.series.CompletedPerS[i]
		p.Failed += r.series.ErrorsPerS[i]
		p.OutputTokens += r.series.OutputTokens[i]
	}
	for i := r.curSec - 1; i >= 0 && i < len(r.series.TTFTp50ms); i-- {
		if r.series.TTFTp50ms[i] > 0 {
			p.TTFTp50ms, p.TTFTp99ms = r.series.TTFTp50ms[i], r.series.TTFTp99ms[i]
			break
		}
	}
	return p
}

// Model returns the model id the server reported most recently ("" if none).
func (r *Recorder) Model() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.model
}

// WindowLookup evaluates a figure over the last window of complete seconds
// before now (whole seconds, rounded up, at most Config.Window; see
// Lookup); it reports false when no window is kept.
func (r *Recorder) WindowLookup(now time.Time, window time.Duration, agg string, percentile float64, metric string) (float64, bool) {
	r.mu.Lock()
	if r.win == nil {
		r.mu.Unlock()
		return 0, false
	}
	n := min(max(int((window+time.Second-1)/time.Second), 1), r.winSecs)
	sc, hist := r.win.view(r.sec(now), n)
	r.mu.Unlock()
	return Lookup(&sc, hist, agg, percentile, metric)
}

// WindowSpan is the view of the complete seconds [from, to) of the stage
// (counted from Config.Start) that the window still holds, for figures
// over a span of the run (triggers and their baselines); ok is false when
// no window is kept or the span is not all in it at now.
func (r *Recorder) WindowSpan(now time.Time, from, to int) (result.Scenario, map[string]string, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.win == nil || from < 0 || to <= from || to-from > r.winSecs || from <= r.sec(now)-len(r.win.secs) || to > r.sec(now) {
		return result.Scenario{}, nil, false
	}
	sc, hist := r.win.view(to, to-from)
	// The usage check so far, so that figures resting on usage it does
	// not trust are not judged on the window either (Source.Doubt).
	sc.Tokens, sc.Goodput.SLOms = r.usageSoFar(), r.cfg.SLO.Millis()
	// The stage's measurement error so far, bounding the window's
	// (Source.Bounds): a trigger is judged at both ends of it.
	sc.MeasurementError = r.errs.window(&sc)
	return sc, hist, true
}

// usageSoFar is the stage's tokens with the usage check's verdict on the
// responses recorded so far (JudgeUsage). Called with r.mu held.
func (r *Recorder) usageSoFar() result.Tokens {
	t := r.tokens()
	JudgeUsage(&t, r.discN)
	return t
}

// Doubt says why a figure judged during the run (asked as Lookup is)
// cannot be judged on the responses recorded so far, "" when it can: it
// rests on usage the stage does not trust (UsageDoubt).
func (r *Recorder) Doubt(agg, metric string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	sc := result.Scenario{Tokens: r.usageSoFar()}
	sc.Goodput.SLOms = r.cfg.SLO.Millis()
	return UsageDoubt(&sc, agg, metric)
}

// probeRate is an overall probe rate of a stage, NaN when the stage had no
// probes of that kind.
func probeRate(p *result.Probes, metric string) float64 {
	if p == nil {
		return math.NaN()
	}
	var r *result.ProbeRate
	switch metric {
	case "attack_success_rate":
		r = p.Overall.AttackSuccess
	case "interception_rate":
		r = p.Overall.Interception
	case "leak_rate":
		r = p.Overall.Leak
	case "false_refusal_rate":
		r = p.Overall.FalseRefusal
	}
	if r == nil || r.N == 0 {
		return math.NaN()
	}
	return float64(r.K) / float64(r.N)
}

// secondOK adds a successful request to the current second's ITL, TPOT
// and intended-time columns.
func (r *Recorder) secondOK(rec *record.Record, ttft time.Duration, hasTTFT bool) {
	lag := rec.Lag()
	for _, g := range rec.Gaps {
		r.secCols.itl.record(g)
	}
	if tpot, ok := rec.TPOT(); ok {
		r.secCols.tpot.record(tpot)
	}
	if hasTTFT {
		r.secCols.ttftIntended.record(ttft + lag)
	}
	r.secCols.e2eIntended.record(rec.E2E() + lag)
}

// meetsSLO says whether a successful request met every SLO.
func (r *Recorder) meetsSLO(rec *record.Record, ttft time.Duration, hasTTFT bool) bool {
	return measured(rec, ttft, hasTTFT).met(r.cfg.SLO, 0)
}

// measured are a successful request's latencies as measured.
func measured(rec *record.Record, ttft time.Duration, hasTTFT bool) latencies {
	m := latencies{ttft: ttft, hasTTFT: hasTTFT, e2e: rec.E2E()}
	for _, g := range rec.Gaps {
		m.maxGap = max(m.maxGap, g)
	}
	m.tpot, m.hasTPOT = rec.TPOT()
	return m
}
