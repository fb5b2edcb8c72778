package result

// MeasurementError is how far the load generator's own lateness may have
// moved a stage's figures (docs/figures.md, "Measurement error"). A stamp
// taken when a read returned, rather than when its bytes came, is late by
// up to that read's lag: a busy machine makes TTFT and E2E look higher and
// gaps look longer or shorter than they were, but by no more than the
// bound the client measured. Each figure's true value lies in a range
// worked out from these counts (metrics.Bounds); a verdict stands when it
// is the same at both ends of its figure's range.
type MeasurementError struct {
	// Figures holds what may be off in each distribution, keyed like
	// Scenario.Metrics (ttft_ms, ttft_intended_ms, itl_ms, tpot_ms, e2e_ms,
	// e2e_intended_ms); a distribution that is not listed is exact to 1 ms.
	Figures map[string]FigureError `json:"figures"`
	// Goodput and GoodputIntended are the ranges the true goodput
	// fractions lie in (Goodput.Fraction and Goodput.IntendedFraction):
	// requests whose SLO verdict late stamps could have turned.
	Goodput         Range `json:"goodput"`
	GoodputIntended Range `json:"goodput_intended"`
}

// FigureError is what may be off in one distribution.
type FigureError struct {
	// Late counts the samples whose stamps may be off by over 1 ms, of
	// Count samples.
	Late  int64 `json:"late"`
	Count int64 `json:"count"`
	// BoundMS bounds how far any one sample may be off.
	BoundMS float64 `json:"bound_ms"`
	// HighOnly says a late stamp can only have made a sample higher (TTFT,
	// E2E: the span ends at the late stamp), so the true figure is at most
	// the measured one.
	HighOnly bool `json:"high_only,omitempty"`
	// P50 and P99 are the ranges the true p50 and p99 lie in, for
	// reading; any other figure's range is worked out when it is judged.
	P50 Range `json:"p50"`
	P99 Range `json:"p99"`
}

// Range is a closed interval [Low, High].
type Range struct {
	Low  float64 `json:"low"`
	High float64 `json:"high"`
}

// Intervals are the sampling intervals of a stage's figures: the range
// each figure's true value (the server's, over many such runs) lies in at
// Level confidence, from the samples this run drew (docs/figures.md,
// "Sampling intervals"). Kept apart from the measurement error, which is
// what the load generator itself may have added.
type Intervals struct {
	// Level is the confidence, 0.95.
	Level float64 `json:"level"`
	// Metrics holds, by distribution key (ttft_ms, itl_ms, ...), the
	// order-statistic intervals of p50, p90 and p99; a percentile with too
	// few samples for an end at Level has none.
	Metrics map[string]PercentileIntervals `json:"metrics"`
	// Goodput and GoodputIntended are Wilson intervals of the goodput
	// fractions, RequestsPerS the exact Poisson interval of the
	// throughput's count over its window.
	Goodput         *Range `json:"goodput,omitempty"`
	GoodputIntended *Range `json:"goodput_intended,omitempty"`
	RequestsPerS    *Range `json:"requests_per_s,omitempty"`
}

// PercentileIntervals are the intervals of a distribution's percentiles.
type PercentileIntervals struct {
	P50 *Range `json:"p50,omitempty"`
	P90 *Range `json:"p90,omitempty"`
	P99 *Range `json:"p99,omitempty"`
}
