package probe

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/spate-dev/spate/internal/workload"
)

// IntentPrefix begins the intent label of every probe request; the family
// follows ("probe:direct-injection"), so the result's per-intent breakdown
// splits latency by family too.
const IntentPrefix = "probe:"

// Set is the probes of the selected suites in the order they are sent:
// round robin over the suites, so that every family is reached early in a
// stage.
type Set struct {
	Suites []*Suite
	order  []ref
	reqs   []*workload.Request
	digest string
}

// ref is one probe of a Set.
type ref struct {
	suite int
	probe *Probe
}

// NewSet orders the probes of suites and builds their requests.
func NewSet(suites []*Suite) (*Set, error) {
	if len(suites) == 0 {
		return nil, errors.New("probe set: no suites")
	}
	s := &Set{Suites: suites}
	h := sha256.New()
	for r := 0; ; r++ {
		added := false
		for i, su := range suites {
			if r >= len(su.Probes) {
				continue
			}
			added = true
			p := &su.Probes[r]
			s.order = append(s.order, ref{suite: i, probe: p})
			req := &workload.Request{
				Messages:   p.messages(),
				MaxTokens:  su.MaxTokens,
				StopFree:   true, // an answer the model may end: judged on what it says
				KeepAnswer: true,
				Intent:     IntentPrefix + su.Family,
			}
			s.reqs = append(s.reqs, req)
			fmt.Fprintf(h, "%s/%s/%d\x00", su.Name, p.ID, su.MaxTokens)
			for _, m := range req.Messages {
				fmt.Fprintf(h, "%s\x00%s\x00", m.Role, m.Content)
			}
			for _, d := range append(append([]Detector(nil), p.planted...), p.detectors...) {
				fmt.Fprintf(h, "%s\x00", d)
			}
		}
		if !added {
			break
		}
	}
	s.digest = hex.EncodeToString(h.Sum(nil))
	return s, nil
}

// Len is the number of probes.
func (s *Set) Len() int { return len(s.order) }

// At returns probe i (0 ≤ i < Len) and its suite.
func (s *Set) At(i int) (*Suite, *Probe) {
	r := s.order[i]
	return s.Suites[r.suite], r.probe
}

// Names returns the suite names.
func (s *Set) Names() []string {
	out := make([]string, len(s.Suites))
	for i, su := range s.Suites {
		out[i] = su.Name
	}
	return out
}

// Schedule says which requests of a run are probes: with fraction f,
// request n is a probe when ⌊(n+1)·f⌋ > ⌊n·f⌋, so probes are spread evenly
// (every 10th request at 0.1), and it is probe number ⌊(n+1)·f⌋ − 1 of the
// run, cycling through the set. It depends on n alone, so an observer can
// tell from a record's index which probe it was.
type Schedule struct {
	Set      *Set
	Fraction float64
}

// ProbeAt returns the index in the set of the probe sent as request n, or
// false when request n is not a probe.
func (sc Schedule) ProbeAt(n uint64) (int, bool) {
	f := sc.Fraction
	if f >= 1 {
		return int(n % uint64(sc.Set.Len())), true
	}
	hi := math.Floor(float64(n+1) * f)
	if hi <= math.Floor(float64(n)*f) {
		return 0, false
	}
	return int(uint64(hi-1) % uint64(sc.Set.Len())), true
}

// Mix returns a Source whose requests are base's, except the requests the
// schedule makes probes. base may be nil when the fraction is 1.
func Mix(base workload.Source, sc Schedule) (workload.Source, error) {
	if sc.Set == nil || sc.Set.Len() == 0 {
		return nil, errors.New("probe mix: no probes")
	}
	if math.IsNaN(sc.Fraction) || sc.Fraction <= 0 || sc.Fraction > 1 {
		return nil, fmt.Errorf("probe fraction %g: want a share of requests in (0, 1]", sc.Fraction)
	}
	if base == nil && sc.Fraction < 1 {
		return nil, errors.New("probe mix: a fraction below 1 needs a workload to mix with")
	}
	var parts []string
	if base != nil {
		parts = append(parts, base.Digest())
	}
	parts = append(parts, fmt.Sprintf("probes/v1 fraction=%g", sc.Fraction), sc.Set.digest)
	sum := sha256.Sum256([]byte(strings.Join(parts, "\x00")))
	return workload.SourceFunc{
		Sha256: hex.EncodeToString(sum[:]),
		F: func(n uint64) (*workload.Request, error) {
			if i, ok := sc.ProbeAt(n); ok {
				return sc.Set.reqs[i], nil
			}
			return base.Request(n)
		},
	}, nil
}
