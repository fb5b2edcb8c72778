package compare

import (
	"cmp"
	"fmt"
	"math"
	"slices"
)

// Correction names the multiple-comparison correction over the gated rows
// (Report.Correction).
const Correction = "holm-bonferroni"

// holmAdjust returns Holm's adjusted p-values of ps, in ps's order: the
// k-th smallest p (k from 1) times m − k + 1, raised to the largest
// adjusted value before it and capped at 1. A hypothesis is rejected at
// family-wise level α exactly when its adjusted p is below α, which is
// Holm's step-down rule: the smallest p against α/m, the next against
// α/(m − 1), and so on, stopping at the first that fails.
func holmAdjust(ps []float64) []float64 {
	// A p-value that could not be computed (NaN) is no evidence: 1, so
	// that it neither sorts first nor carries NaN into the running
	// maximum of the rows after it.
	ps = slices.Clone(ps)
	for i, p := range ps {
		if math.IsNaN(p) {
			ps[i] = 1
		}
	}
	m := len(ps)
	order := make([]int, m)
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(ps[a], ps[b]) })
	adj := make([]float64, m)
	running := 0.0
	for k, i := range order {
		running = max(running, min(1, float64(m-k)*ps[i]))
		adj[i] = running
	}
	return adj
}

// applyHolm judges the gated rows of a report as one family: each gets its
// Holm-adjusted p-value, and a change on a gated row stands only when that
// is below alpha, so that the chance of any false red across all the gated
// rows stays at alpha however many are gated. A row significant alone but
// not in the family is "~" with a warning giving both p-values. Rows with a
// measurement error are judged at each of its ends too, each end as a
// family of its own (every gated row at that end, the exact ones as
// measured), and then by both (judgeEnds): a regression stands only when
// the family at the end least favourable to regressions calls it, so the
// chance of a false red stays at alpha. It then lists the gated
// regressions in the report, in stage and row order.
func applyHolm(rep *Report, alpha float64) {
	var gated []*Row
	for si := range rep.Stages {
		for ri := range rep.Stages[si].Rows {
			if r := &rep.Stages[si].Rows[ri]; r.Gated {
				gated = append(gated, r)
			}
		}
	}
	rep.Correction, rep.Family = Correction, len(gated)
	var ends [2][]*Row
	if slices.ContainsFunc(gated, func(r *Row) bool { return r.ends[0] != nil }) {
		for e := range ends {
			fam := make([]*Row, len(gated))
			for i, r := range gated {
				if fam[i] = r.ends[e]; fam[i] == nil {
					c := *r // exact: as measured
					c.Warnings = slices.Clone(r.Warnings)
					fam[i] = &c
				}
			}
			holmFamily(fam, alpha)
			ends[e] = fam
		}
	}
	holmFamily(gated, alpha)
	for i, r := range gated {
		if r.ends[0] != nil {
			judgeEnds(r, ends[0][i], ends[1][i], alpha, len(gated))
		}
	}
	for _, st := range rep.Stages {
		for _, r := range st.Rows {
			if r.Gated && r.Verdict == Regressed {
				rep.Regressed = append(rep.Regressed, st.Name+"/"+r.Metric)
			}
		}
	}
}

// holmFamily sets each row's Holm-adjusted p-value over the rows, and
// calls a change whose adjusted p-value is not below alpha no change.
func holmFamily(gated []*Row, alpha float64) {
	ps := make([]float64, len(gated))
	for i, r := range gated {
		ps[i] = r.P
	}
	for i, adj := range holmAdjust(ps) {
		r := gated[i]
		r.PHolm = &adj
		if adj >= alpha && (r.Verdict == Regressed || r.Verdict == Improved) {
			r.Warnings = append(r.Warnings, fmt.Sprintf("p %.3g alone, but %.3g after Holm–Bonferroni over the %d gated rows, not below α=%g: called no change", r.P, adj, len(gated), alpha))
			r.Verdict = Same
		}
	}
}

// familyBound is the most gated rows a comparison of these stages can
// have: the gated metrics compared in each stage. The U test and the
// bootstrap p-values must be able to reach α over it, Holm's first
// threshold, or no gated row could ever be called.
func familyBound(metrics []Metric, gate []string, stages int) int {
	n := 0
	for _, m := range metrics {
		if slices.Contains(gate, m.Name) {
			n++
		}
	}
	return n * stages
}
