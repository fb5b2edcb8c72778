package sim

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"time"
)

// Faults are the failures the simulator injects. Each request draws its
// faults from a seeded generator indexed by the request's sequence number,
// so the same seed and request order give the same faults. Rates are
// probabilities in [0, 1].
type Faults struct {
	// ErrorRate is the fraction of generation and embedding requests
	// answered 500 with OpenAI's server_error JSON.
	ErrorRate float64
	// RateLimitRate is the fraction answered 429 with rate-limit headers
	// (x-ratelimit-remaining-requests, x-ratelimit-remaining-tokens,
	// retry-after). ErrorRate + RateLimitRate must not exceed 1.
	RateLimitRate float64
	// RetryAfter is the value of the retry-after header of a 429, rounded
	// up to whole seconds. Default 1s.
	RetryAfter time.Duration
	// SpikeRate is the fraction of requests delayed by SpikeDelay before
	// any work starts (it adds to their TTFT).
	SpikeRate float64
	// SpikeDelay is the extra delay of a latency spike.
	SpikeDelay time.Duration
	// TruncateRate is the fraction of streams cut mid-stream: after a
	// seeded number of content tokens (at least one, fewer than all) the
	// connection is closed, with no final chunk and no [DONE].
	TruncateRate float64
	// StallRate is the fraction of streams that pause for StallDuration
	// before a seeded content token (not the first). In deterministic mode
	// the later tokens shift by the stall; in engine mode the tokens the
	// engine made meanwhile arrive in a burst after it.
	StallRate float64
	// StallDuration is the length of a stall.
	StallDuration time.Duration
	// MaxContext, when > 0, is the model's context window: a request whose
	// prompt tokens plus max_tokens exceed it gets 400 with OpenAI's
	// context_length_exceeded error. Without max_tokens the response is cut
	// to fit the window.
	MaxContext int
	// LengthRate is the fraction of answers cut short with finish_reason
	// "length": a seeded number of tokens, at least one, fewer than the
	// answer would have had (see length.go).
	LengthRate float64
	// Vulnerability, when > 0, switches on the vulnerable behaviour (see
	// vulnerable.go): a prompt that looks like an attack is followed with
	// this probability (the answer repeats the system prompt and the
	// instructions given, decoding base64) and refused otherwise.
	Vulnerability float64
}

// Validate reports the first invalid fault setting, naming its field.
func (f *Faults) Validate() error {
	rate := func(name string, v float64) error {
		if math.IsNaN(v) || v < 0 || v > 1 {
			return fmt.Errorf("%s must be in [0, 1], got %g", name, v)
		}
		return nil
	}
	dur := func(name string, d time.Duration) error {
		if d < 0 {
			return fmt.Errorf("%s must be >= 0, got %v", name, d)
		}
		return nil
	}
	return errors.Join(
		rate("ErrorRate", f.ErrorRate),
		rate("RateLimitRate", f.RateLimitRate),
		func() error {
			if f.ErrorRate+f.RateLimitRate > 1 {
				return fmt.Errorf("ErrorRate + RateLimitRate must be <= 1, got %g", f.ErrorRate+f.RateLimitRate)
			}
			return nil
		}(),
		dur("RetryAfter", f.RetryAfter),
		rate("SpikeRate", f.SpikeRate),
		dur("SpikeDelay", f.SpikeDelay),
		rate("TruncateRate", f.TruncateRate),
		rate("LengthRate", f.LengthRate),
		rate("StallRate", f.StallRate),
		dur("StallDuration", f.StallDuration),
		rate("Vulnerability", f.Vulnerability),
		func() error {
			if f.MaxContext < 0 {
				return fmt.Errorf("MaxContext must be >= 0, got %d", f.MaxContext)
			}
			return nil
		}(),
	)
}

// clamped returns f with every value forced into its valid range.
func (f Faults) clamped() Faults {
	rate := func(v float64) float64 {
		if math.IsNaN(v) || v < 0 {
			return 0
		}
		return min(v, 1)
	}
	f.ErrorRate = rate(f.ErrorRate)
	f.RateLimitRate = min(rate(f.RateLimitRate), 1-f.ErrorRate)
	f.SpikeRate = rate(f.SpikeRate)
	f.TruncateRate = rate(f.TruncateRate)
	f.LengthRate = rate(f.LengthRate)
	f.StallRate = rate(f.StallRate)
	f.Vulnerability = rate(f.Vulnerability)
	f.RetryAfter = max(f.RetryAfter, 0)
	f.SpikeDelay = max(f.SpikeDelay, 0)
	f.StallDuration = max(f.StallDuration, 0)
	f.MaxContext = max(f.MaxContext, 0)
	return f
}

// faultKind names an injected fault in the spate_sim_faults_total metric.
type faultKind int

const (
	faultError faultKind = iota
	faultRateLimit
	faultSpike
	faultTruncate
	faultStall
	faultContextLength
	faultLength
	numFaultKinds
)

// String returns the kind's label value in spate_sim_faults_total.
func (k faultKind) String() string {
	switch k {
	case faultError:
		return "error"
	case faultRateLimit:
		return "rate_limit"
	case faultSpike:
		return "spike"
	case faultTruncate:
		return "truncate"
	case faultStall:
		return "stall"
	case faultContextLength:
		return "context_length"
	case faultLength:
		return "length"
	}
	return "unknown"
}

// reject is the outcome of the first draw: answer normally, 500 or 429.
type reject int

const (
	rejectNone reject = iota
	rejectError
	rejectRateLimit
)

// faultDraws are the uniform draws of one request, from its sequence number.
type faultDraws struct{ u [6]float64 }

func drawFaults(seed int64, reqSeq uint64) faultDraws {
	var d faultDraws
	base := mix64(uint64(seed) ^ 0x6661756c74730000) // "faults"
	for i := range d.u {
		d.u[i] = unitFloat(mix64(base ^ mix64(reqSeq*8+uint64(i)+1)))
	}
	return d
}

// reject decides between a normal answer, a 500 and a 429 with one draw, so
// each happens at exactly its configured rate.
func (d faultDraws) reject(f *Faults) reject {
	switch u := d.u[0]; {
	case u < f.ErrorRate:
		return rejectError
	case u < f.ErrorRate+f.RateLimitRate:
		return rejectRateLimit
	}
	return rejectNone
}

// spike returns the extra delay before the request starts.
func (d faultDraws) spike(f *Faults) time.Duration {
	if d.u[1] < f.SpikeRate {
		return f.SpikeDelay
	}
	return 0
}

// truncateAfter returns after how many content tokens a stream of n tokens
// is cut, or -1.
func (d faultDraws) truncateAfter(f *Faults, n int) int {
	if d.u[2] >= f.TruncateRate {
		return -1
	}
	if n < 2 {
		return 0
	}
	return 1 + int(d.u[3]*float64(n-1)) // in [1, n-1]
}

// stallBefore returns before which content token (index from 0) a stream of
// n tokens stalls, or -1.
func (d faultDraws) stallBefore(f *Faults, n int) int {
	if d.u[4] >= f.StallRate || f.StallDuration <= 0 || n < 2 {
		return -1
	}
	return 1 + int(d.u[5]*float64(n-1)) // in [1, n-1]
}

// faultsWire is the JSON form of Faults used by /admin/faults. Durations are
// Go duration strings ("250ms").
type faultsWire struct {
	ErrorRate     float64 `json:"error_rate"`
	RateLimitRate float64 `json:"rate_limit_rate"`
	RetryAfter    string  `json:"retry_after"`
	SpikeRate     float64 `json:"spike_rate"`
	SpikeDelay    string  `json:"spike_delay"`
	TruncateRate  float64 `json:"truncate_rate"`
	LengthRate    float64 `json:"length_rate"`
	StallRate     float64 `json:"stall_rate"`
	StallDuration string  `json:"stall_duration"`
	MaxContext    int     `json:"max_context"`
	Vulnerability float64 `json:"vulnerability"`
}

func (f Faults) wire() faultsWire {
	return faultsWire{
		ErrorRate:     f.ErrorRate,
		RateLimitRate: f.RateLimitRate,
		RetryAfter:    f.RetryAfter.String(),
		SpikeRate:     f.SpikeRate,
		SpikeDelay:    f.SpikeDelay.String(),
		TruncateRate:  f.TruncateRate,
		LengthRate:    f.LengthRate,
		StallRate:     f.StallRate,
		StallDuration: f.StallDuration.String(),
		MaxContext:    f.MaxContext,
		Vulnerability: f.Vulnerability,
	}
}

func (w faultsWire) faults() (Faults, error) {
	f := Faults{
		ErrorRate:     w.ErrorRate,
		RateLimitRate: w.RateLimitRate,
		SpikeRate:     w.SpikeRate,
		TruncateRate:  w.TruncateRate,
		LengthRate:    w.LengthRate,
		StallRate:     w.StallRate,
		MaxContext:    w.MaxContext,
		Vulnerability: w.Vulnerability,
	}
	for _, d := range []struct {
		name string
		s    string
		to   *time.Duration
	}{
		{"retry_after", w.RetryAfter, &f.RetryAfter},
		{"spike_delay", w.SpikeDelay, &f.SpikeDelay},
		{"stall_duration", w.StallDuration, &f.StallDuration},
	} {
		if d.s == "" {
			continue
		}
		v, err := time.ParseDuration(d.s)
		if err != nil {
			return Faults{}, fmt.Errorf("%s: %w", d.name, err)
		}
		*d.to = v
	}
	if err := f.Validate(); err != nil {
		return Faults{}, err
	}
	return f, nil
}

// MaxFaultsBody bounds the JSON /admin/faults reads.
const MaxFaultsBody = 1 << 16

// DecodeFaults reads faults as /admin/faults takes them: JSON with the
// snake_case field names (error_rate, spike_delay: "300ms", ...), unknown
// fields refused, values checked (Validate). spate validate checks a
// stage's faults.set with it.
func DecodeFaults(b []byte) (Faults, error) {
	var in faultsWire
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil {
		return Faults{}, fmt.Errorf("invalid faults JSON: %w", err)
	}
	f, err := in.faults()
	if err != nil {
		return Faults{}, fmt.Errorf("invalid faults: %w", err)
	}
	return f, nil
}

// handleAdminFaults serves GET (current faults), PUT/POST (replace them; an
// omitted field is zero) and DELETE (clear them) on /admin/faults.
func (s *Server) handleAdminFaults(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodGet:
	case http.MethodPut, http.MethodPost:
		b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxFaultsBody))
		if err != nil {
			writeError(w, http.StatusBadRequest, "invalid faults JSON: "+err.Error(), "invalid_request_error", "", "")
			return
		}
		f, err := DecodeFaults(b)
		if err != nil {
			writeError(w, http.StatusBadRequest, err.Error(), "invalid_request_error", "", "")
			return
		}
		s.SetFaults(f)
	case http.MethodDelete:
		s.SetFaults(Faults{})
	default:
		w.Header().Set("Allow", "GET, PUT, POST, DELETE")
		writeError(w, http.StatusMethodNotAllowed, "method not allowed", "invalid_request_error", "", "")
		return
	}
	writeJSON(w, http.StatusOK, s.faults.Load().wire())
}

// writeRateLimited answers 429 the way OpenAI does.
func writeRateLimited(w http.ResponseWriter, f *Faults) {
	ra := f.RetryAfter
	if ra <= 0 {
		ra = time.Second
	}
	secs := int((ra + time.Second - 1) / time.Second)
	h := w.Header()
	h.Set("retry-after", strconv.Itoa(secs))
	h.Set("retry-after-ms", strconv.FormatInt(ra.Milliseconds(), 10))
	h.Set("x-ratelimit-limit-requests", "10000")
	h.Set("x-ratelimit-limit-tokens", "2000000")
	h.Set("x-ratelimit-remaining-requests", "0")
	h.Set("x-ratelimit-remaining-tokens", "0")
	h.Set("x-ratelimit-reset-requests", ra.String())
	h.Set("x-ratelimit-reset-tokens", ra.String())
	writeError(w, http.StatusTooManyRequests,
		"Rate limit reached for requests (simulated by spate sim). Please try again in "+ra.String()+".",
		"requests", "", "rate_limit_exceeded")
}
