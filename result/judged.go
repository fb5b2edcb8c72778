package result

// JudgedFromIntended says whether the stage's SLO figures (TTFT, E2E and
// goodput) are judged from the intended send time, as its thresholds are:
// an open-loop stage, unless the run judged from the send
// (config.slo_from "sent"). Reports then show the intended-time figure
// first (docs/figures.md, "Intended time").
func (r *Result) JudgedFromIntended(sc *Scenario) bool {
	return sc.Load.Mode == "open" && r.Config.SLOFrom != "sent" && sc.Metrics["ttft_intended_ms"].Count > 0
}

// JudgedGoodput is the stage's goodput as its thresholds judge it: the
// fraction and rate from the intended send time when JudgedFromIntended,
// from the send otherwise; intended says which.
func (r *Result) JudgedGoodput(sc *Scenario) (fraction, perS float64, intended bool) {
	if r.JudgedFromIntended(sc) {
		return sc.Goodput.IntendedFraction, sc.Goodput.IntendedRequestsPerS, true
	}
	return sc.Goodput.Fraction, sc.Goodput.RequestsPerS, false
}
