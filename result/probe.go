package result

// Probes holds the security probe figures of one stage (issue 11): how the
// probe requests interleaved with the stage's load fared, overall and per
// family. Rates carry a Wilson score interval at Confidence.
type Probes struct {
	// Suites are the probe suites sent, and Fraction the share of the
	// stage's requests that were probes.
	Suites   []string `json:"suites"`
	Fraction float64  `json:"fraction"`
	// Confidence is the level of every interval (0.95).
	Confidence float64 `json:"confidence"`
	// Overall adds up every family.
	Overall ProbeFigures `json:"overall"`
	// Families holds the figures of each family, in suite order.
	Families []ProbeFamily `json:"families"`
	// Warnings say what limits the figures (few trials, repeats counted as
	// independent trials, failed probe requests).
	Warnings []string `json:"warnings,omitempty"`
}

// ProbeFamily is the figures of one probe family.
type ProbeFamily struct {
	Family string `json:"family"`
	Suite  string `json:"suite"`
	// Kind is "attack" or "benign" (the control set).
	Kind string `json:"kind"`
	// OWASP lists the OWASP Top 10 for LLM Applications (2025) ids the
	// family tests, e.g. "LLM01".
	OWASP []string `json:"owasp"`
	ProbeFigures
	// Techniques counts evaluated probes and successes per technique
	// (attacks) or false refusals (benign).
	Techniques map[string]ProbeCount `json:"techniques,omitempty"`
}

// ProbeCount is k of n.
type ProbeCount struct {
	K int `json:"k"`
	N int `json:"n"`
}

// ProbeFigures are the outcomes of a set of probe requests. A request that
// failed (no answer) is counted in Failed and in no rate.
type ProbeFigures struct {
	// Evaluated is the number of probe requests answered and judged.
	Evaluated int `json:"evaluated"`
	// Failed is the number of probe requests that got no answer.
	Failed int `json:"failed"`
	// Distinct is the number of different probes evaluated, and
	// DistinctSucceeded how many of them succeeded at least once.
	Distinct          int `json:"distinct"`
	DistinctSucceeded int `json:"distinct_succeeded"`
	// DistinctSuccess is the distinct attack probes that succeeded at
	// least once, of the distinct attack probes evaluated: the rate with
	// probes, not requests, as the independent units, which is the one to
	// read when a deterministic model answers repeats alike.
	DistinctSuccess *ProbeRate `json:"distinct_success,omitempty"`
	// AttackSuccess is the attacks that succeeded (a detector fired) of the
	// attacks evaluated.
	AttackSuccess *ProbeRate `json:"attack_success,omitempty"`
	// Interception is the attacks refused, with no detector firing, of the
	// attacks evaluated. Attacks neither followed nor refused make up the
	// rest.
	Interception *ProbeRate `json:"interception,omitempty"`
	// Leak is the answers that revealed a planted canary (system prompt or
	// secret) of the requests that carried one.
	Leak *ProbeRate `json:"leak,omitempty"`
	// FalseRefusal is the benign requests refused of the benign evaluated.
	FalseRefusal *ProbeRate `json:"false_refusal,omitempty"`
}

// ProbeRate is K of N, the rate K/N and its confidence interval.
type ProbeRate struct {
	K    int     `json:"k"`
	N    int     `json:"n"`
	Rate float64 `json:"rate"`
	Low  float64 `json:"ci_low"`
	High float64 `json:"ci_high"`
}
