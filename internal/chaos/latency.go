package chaos

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Latency is a distribution of added latency. Its text form is one of
//
//	fixed:50ms            always 50 ms
//	uniform:10ms:50ms     uniform between 10 and 50 ms
//	lognormal:3.2:0.5     exp(N(μ=3.2, σ=0.5)) milliseconds, as in the seeds
//	                      (median e^3.2 ≈ 24.5 ms)
//
// The zero Latency adds nothing.
type Latency struct {
	// Kind is "fixed", "uniform" or "lognormal" ("" adds nothing).
	Kind string
	// Min and Max bound a uniform latency; Min is a fixed latency.
	Min, Max time.Duration
	// Mu and Sigma are the mean and standard deviation of the natural
	// logarithm of a lognormal latency in milliseconds.
	Mu, Sigma float64
}

// ParseLatency parses the text form of a Latency.
func ParseLatency(s string) (Latency, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return Latency{}, nil
	}
	parts := strings.Split(s, ":")
	bad := func(err error) (Latency, error) {
		return Latency{}, fmt.Errorf("latency %q: %w (want fixed:D, uniform:D1:D2 or lognormal:MU:SIGMA)", s, err)
	}
	switch parts[0] {
	case "fixed":
		if len(parts) != 2 {
			return bad(fmt.Errorf("fixed takes one duration"))
		}
		d, err := time.ParseDuration(parts[1])
		if err != nil {
			return bad(err)
		}
		if d < 0 || d > maxLatency {
			return bad(fmt.Errorf("want 0 <= D <= %v", maxLatency))
		}
		return Latency{Kind: "fixed", Min: d, Max: d}, nil
	case "uniform":
		if len(parts) != 3 {
			return bad(fmt.Errorf("uniform takes two durations"))
		}
		lo, err := time.ParseDuration(parts[1])
		if err != nil {
			return bad(err)
		}
		hi, err := time.ParseDuration(parts[2])
		if err != nil {
			return bad(err)
		}
		if lo < 0 || hi < lo || hi > maxLatency {
			return bad(fmt.Errorf("want 0 <= D1 <= D2 <= %v", maxLatency))
		}
		return Latency{Kind: "uniform", Min: lo, Max: hi}, nil
	case "lognormal":
		if len(parts) != 3 {
			return bad(fmt.Errorf("lognormal takes MU and SIGMA"))
		}
		mu, err := strconv.ParseFloat(parts[1], 64)
		if err != nil {
			return bad(err)
		}
		sigma, err := strconv.ParseFloat(parts[2], 64)
		if err != nil {
			return bad(err)
		}
		if math.IsNaN(mu) || math.IsInf(mu, 0) || mu > 20 || math.IsNaN(sigma) || sigma < 0 || sigma > 5 {
			return bad(fmt.Errorf("want MU <= 20 and 0 <= SIGMA <= 5"))
		}
		return Latency{Kind: "lognormal", Mu: mu, Sigma: sigma}, nil
	}
	return bad(fmt.Errorf("unknown distribution %q", parts[0]))
}

// String returns the text form ParseLatency reads.
func (l Latency) String() string {
	switch l.Kind {
	case "fixed":
		return "fixed:" + l.Min.String()
	case "uniform":
		return "uniform:" + l.Min.String() + ":" + l.Max.String()
	case "lognormal":
		return "lognormal:" + strconv.FormatFloat(l.Mu, 'g', -1, 64) + ":" + strconv.FormatFloat(l.Sigma, 'g', -1, 64)
	}
	return ""
}

// MarshalJSON writes the text form.
func (l Latency) MarshalJSON() ([]byte, error) { return json.Marshal(l.String()) }

// UnmarshalJSON reads the text form.
func (l *Latency) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("latency: want a string like \"lognormal:3.2:0.5\": %w", err)
	}
	v, err := ParseLatency(s)
	if err != nil {
		return err
	}
	*l = v
	return nil
}

// maxLatency bounds one latency, so that a heavy tail cannot hang a run:
// a lognormal draw is clipped to it, a fixed or uniform latency over it
// is refused.
const maxLatency = 10 * time.Minute

// draw returns one latency from the distribution.
func (l Latency) draw(d *draws) time.Duration {
	switch l.Kind {
	case "fixed":
		return l.Min
	case "uniform":
		return l.Min + time.Duration(d.u()*float64(l.Max-l.Min))
	case "lognormal":
		ms := math.Exp(l.Mu + l.Sigma*d.normal())
		return min(time.Duration(ms*float64(time.Millisecond)), maxLatency)
	}
	return 0
}
