// Package chaos injects faults between a load generator and the service it
// loads: a reverse proxy that adds latency, errors, resets, black-holes,
// bandwidth limits and SSE stalls, truncations and slow drips on a
// schedule; request-level faults from the workload side; and the figures
// that judge how the service and its clients held up (failover time, retry
// convergence, MSR, recovery time, error amplification).
//
// Across stages: a proxy before the target (beside the client stage),
// request-level chaos in the workload, and chaos figures in metrics.
// The data flow: experiment → workload → schedule → engine → client → record
// → metrics → verdict → outputs (docs/design.md).
package chaos

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/spate-dev/spate/internal/capread"
)

// Duration is a time.Duration written in JSON as a Go duration string
// ("250ms"), as the simulator's /admin/faults does.
type Duration time.Duration

// MarshalJSON writes the duration string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// UnmarshalJSON reads a duration string (or the number 0).
func (d *Duration) UnmarshalJSON(b []byte) error {
	if string(b) == "0" {
		*d = 0
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("want a duration string like \"250ms\", got %s", b)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

// Rule is one set of faults with their probabilities, active from From to
// Until after the fault set was applied (Until 0: until it is cleared).
// Rates are probabilities in [0, 1], drawn per request. Field names that
// the simulator's /admin/faults also has (error_rate, rate_limit_rate,
// retry_after, spike_rate, spike_delay, truncate_rate, stall_rate,
// stall_duration) mean the same here.
type Rule struct {
	From  Duration `json:"from,omitzero"`
	Until Duration `json:"until,omitzero"`

	// ErrorRate is the fraction of requests answered ErrorStatus (default
	// 500) with OpenAI's server_error JSON, without reaching the upstream.
	ErrorRate   float64 `json:"error_rate,omitzero"`
	ErrorStatus int     `json:"error_status,omitzero"`
	// RateLimitRate is the fraction answered 429 with retry-after and
	// x-ratelimit-* headers; RetryAfter is the advertised wait (default 1s).
	RateLimitRate float64  `json:"rate_limit_rate,omitzero"`
	RetryAfter    Duration `json:"retry_after,omitzero"`
	// ResetRate is the fraction whose connection is reset (TCP RST) before
	// any response.
	ResetRate float64 `json:"reset_rate,omitzero"`
	// BlackholeRate is the fraction accepted and never answered, until the
	// client gives up.
	BlackholeRate float64 `json:"blackhole_rate,omitzero"`

	// SpikeRate is the fraction delayed by SpikeDelay before forwarding.
	SpikeRate  float64  `json:"spike_rate,omitzero"`
	SpikeDelay Duration `json:"spike_delay,omitzero"`
	// Latency is added before forwarding to a LatencyRate fraction of
	// requests (default 1 when Latency is set).
	Latency     Latency `json:"latency,omitzero"`
	LatencyRate float64 `json:"latency_rate,omitzero"`
	// Bandwidth limits the response body to this many bytes per second,
	// on a BandwidthRate fraction of requests (default 1).
	Bandwidth     int64   `json:"bandwidth,omitzero"`
	BandwidthRate float64 `json:"bandwidth_rate,omitzero"`

	// TruncateRate is the fraction of SSE streams cut (connection aborted,
	// no [DONE]) after TruncateAfter events (default 3).
	TruncateRate  float64 `json:"truncate_rate,omitzero"`
	TruncateAfter int     `json:"truncate_after,omitzero"`
	// StallRate is the fraction of SSE streams that pause StallDuration
	// after StallAfter events (default 3).
	StallRate     float64  `json:"stall_rate,omitzero"`
	StallDuration Duration `json:"stall_duration,omitzero"`
	StallAfter    int      `json:"stall_after,omitzero"`
	// DripRate is the fraction of SSE streams whose every event is held
	// back DripDelay (a slow drip of tokens).
	DripRate  float64  `json:"drip_rate,omitzero"`
	DripDelay Duration `json:"drip_delay,omitzero"`
}

// Set is the fault set of the proxy: a rule that applies from the moment
// the set is applied, plus a schedule of rules with their own windows.
// Seed fixes every request's draws.
type Set struct {
	Rule
	Seed     int64  `json:"seed,omitzero"`
	Schedule []Rule `json:"schedule,omitempty"`
}

// Defaults of a Rule's optional fields.
const (
	DefaultErrorStatus   = 500
	DefaultRetryAfter    = time.Second
	DefaultTruncateAfter = 3
	DefaultStallAfter    = 3
)

// IsZero reports whether the rule injects nothing.
func (r Rule) IsZero() bool {
	r.From, r.Until = 0, 0
	return r == Rule{}
}

// Rules returns the set's rules: its own (when it injects anything) and
// its schedule's.
func (s Set) Rules() []Rule {
	var out []Rule
	if !s.Rule.IsZero() {
		out = append(out, s.Rule)
	}
	return append(out, s.Schedule...)
}

// withDefaults fills the optional fields.
func (r Rule) withDefaults() Rule {
	if r.ErrorStatus == 0 {
		r.ErrorStatus = DefaultErrorStatus
	}
	if r.RetryAfter == 0 {
		r.RetryAfter = Duration(DefaultRetryAfter)
	}
	if r.Latency.Kind != "" && r.LatencyRate == 0 {
		r.LatencyRate = 1
	}
	if r.Bandwidth > 0 && r.BandwidthRate == 0 {
		r.BandwidthRate = 1
	}
	if r.TruncateAfter == 0 {
		r.TruncateAfter = DefaultTruncateAfter
	}
	if r.StallAfter == 0 {
		r.StallAfter = DefaultStallAfter
	}
	return r
}

// Validate reports every invalid setting of the rule, naming its field.
func (r Rule) Validate() error {
	var errs []error
	rate := func(name string, v float64) {
		if math.IsNaN(v) || v < 0 || v > 1 {
			errs = append(errs, fmt.Errorf("%s must be in [0, 1], got %g", name, v))
		}
	}
	dur := func(name string, d Duration) {
		if d < 0 {
			errs = append(errs, fmt.Errorf("%s must be >= 0, got %v", name, time.Duration(d)))
		}
	}
	rate("error_rate", r.ErrorRate)
	rate("rate_limit_rate", r.RateLimitRate)
	rate("reset_rate", r.ResetRate)
	rate("blackhole_rate", r.BlackholeRate)
	if sum := r.ErrorRate + r.RateLimitRate + r.ResetRate + r.BlackholeRate; sum > 1+1e-12 {
		errs = append(errs, fmt.Errorf("error_rate + rate_limit_rate + reset_rate + blackhole_rate must be <= 1, got %g", sum))
	}
	switch r.ErrorStatus {
	case 0, 500, 502, 503, 504:
	default:
		errs = append(errs, fmt.Errorf("error_status must be 500, 502, 503 or 504, got %d", r.ErrorStatus))
	}
	rate("spike_rate", r.SpikeRate)
	rate("latency_rate", r.LatencyRate)
	rate("bandwidth_rate", r.BandwidthRate)
	rate("truncate_rate", r.TruncateRate)
	rate("stall_rate", r.StallRate)
	rate("drip_rate", r.DripRate)
	dur("from", r.From)
	dur("until", r.Until)
	dur("retry_after", r.RetryAfter)
	dur("spike_delay", r.SpikeDelay)
	dur("stall_duration", r.StallDuration)
	dur("drip_delay", r.DripDelay)
	if r.Until != 0 && r.Until <= r.From {
		errs = append(errs, fmt.Errorf("until (%v) must be after from (%v)", time.Duration(r.Until), time.Duration(r.From)))
	}
	if r.Bandwidth < 0 {
		errs = append(errs, fmt.Errorf("bandwidth must be >= 0 bytes/s, got %d", r.Bandwidth))
	}
	if r.TruncateAfter < 0 || r.StallAfter < 0 {
		errs = append(errs, fmt.Errorf("truncate_after and stall_after must be >= 0 events"))
	}
	return errors.Join(errs...)
}

// Validate reports every invalid setting, naming the rule and field.
func (s Set) Validate() error {
	errs := []error{s.Rule.Validate()}
	for i, r := range s.Schedule {
		if err := r.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("schedule[%d]: %w", i, err))
		}
	}
	return errors.Join(errs...)
}

// active reports whether the rule applies at offset t since the set was
// applied.
func (r Rule) active(t time.Duration) bool {
	return t >= time.Duration(r.From) && (r.Until == 0 || t < time.Duration(r.Until))
}

// DecodeSet reads a fault set from JSON, rejecting unknown fields.
func DecodeSet(b []byte) (Set, error) {
	var s Set
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return Set{}, fmt.Errorf("reading fault set: %w", err)
	}
	if err := s.Validate(); err != nil {
		return Set{}, fmt.Errorf("fault set: %w", err)
	}
	return s, nil
}

// ParseRule parses the flag form of a rule: comma-separated key=value
// pairs with the JSON field names, e.g.
// "error_rate=0.1,latency=lognormal:3.2:0.5,from=10s,until=20s".
func ParseRule(s string) (Rule, error) {
	m := map[string]any{}
	for _, kv := range strings.Split(s, ",") {
		kv = strings.TrimSpace(kv)
		if kv == "" {
			continue
		}
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return Rule{}, fmt.Errorf("fault %q: want key=value", kv)
		}
		if _, dup := m[k]; dup {
			return Rule{}, fmt.Errorf("fault %q given twice", k)
		}
		if f, err := strconv.ParseFloat(v, 64); err == nil {
			m[k] = f
		} else {
			m[k] = v
		}
	}
	b, err := json.Marshal(m)
	if err != nil {
		return Rule{}, fmt.Errorf("faults %q: %w", s, err)
	}
	var r Rule
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return Rule{}, fmt.Errorf("faults %q: %w", s, err)
	}
	if err := r.Validate(); err != nil {
		return Rule{}, fmt.Errorf("faults %q: %w", s, err)
	}
	return r, nil
}

// MarshalJSONString returns the rule's JSON as a string, for display.
func (r Rule) MarshalJSONString() (string, error) {
	b, err := json.Marshal(r)
	return string(b), err
}

// LoadSet builds a fault set from a JSON file, as PUT to /admin/faults
// ("" for none), and rules as ParseRule reads them, added to the file's
// schedule; seed is the set's seed when the file gives none. An error
// reading the file is an *fs.PathError; the others say which part is
// malformed. The file's read stops when ctx is done.
func LoadSet(ctx context.Context, file string, rules []string, seed int64) (Set, error) {
	var set Set
	if file != "" {
		b, err := capread.ReadFile(ctx, file, capread.SettingsLimit, "")
		if err != nil {
			return set, fmt.Errorf("reading --faults file: %w", err)
		}
		if set, err = DecodeSet(b); err != nil {
			return set, fmt.Errorf("--faults %s: %v", file, err)
		}
	}
	for _, r := range rules {
		rule, err := ParseRule(r)
		if err != nil {
			return set, fmt.Errorf("--chaos: %v", err)
		}
		set.Schedule = append(set.Schedule, rule)
	}
	if set.Seed == 0 {
		set.Seed = seed
	}
	return set, nil
}

// Describe lists the set's rules as JSON, space-separated, or says "no
// faults".
func (s Set) Describe() string {
	var desc []string
	for _, r := range s.Rules() {
		b, _ := r.MarshalJSONString()
		desc = append(desc, b)
	}
	if len(desc) == 0 {
		return "no faults"
	}
	return strings.Join(desc, " ")
}
