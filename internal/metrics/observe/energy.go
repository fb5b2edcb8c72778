package observe

import (
	"fmt"
	"math"

	"github.com/spate-dev/spate/result"
)

// Energy sources, as result.Server's EnergySource says them.
const (
	// EnergyMeasured: the GPUs' energy counters' growth over the stage.
	EnergyMeasured = "measured"
	// EnergyEstimated: the GPUs' power integrated over the stage
	// (trapezoids between scrapes), when no energy counter was scraped.
	EnergyEstimated = "estimated"
)

// energy is the GPUs' energy over a stage's scrapes.
type energy struct {
	joules  float64
	windowS float64 // the seconds it covers: the first scrape with it to the stage's end (or the last scrape with it)
	source  string  // EnergyMeasured or EnergyEstimated
}

// stageEnergy is the energy the GPUs used over the stage's scrapes up to
// endS seconds from the stage's start (the stage's end: the last scrape,
// taken once the stage has drained, may come later; 0 for no bound),
// summed over the GPUs: from the first energy counter of energySources
// found in two scrapes or more, else from the first power gauge of
// powerSources found in two or more; false when neither was. The part of
// an interval between scrapes that is before endS counts in proportion
// (the counter, or the power, taken to change linearly in it).
func stageEnergy(scrapes []Scrape, endS float64) (energy, bool) {
	for _, s := range energySources {
		if e, ok := counterEnergy(scrapes, s, endS); ok {
			return e, true
		}
	}
	for _, s := range powerSources {
		if e, ok := powerEnergy(scrapes, s, endS); ok {
			return e, true
		}
	}
	return energy{}, false
}

// usable reports whether a power or energy reading can be one: finite and
// not negative (the exposition format allows NaN and ±Inf).
func usable(v float64) bool { return v >= 0 && !math.IsInf(v, 1) }

// inside is the fraction of the interval [a, b] before endS (0 for no
// bound).
func inside(a, b, endS float64) float64 {
	switch {
	case !(endS > 0) || b <= endS: // NaN too
		return 1
	case a >= endS:
		return 0
	}
	return (endS - a) / (b - a)
}

// counterEnergy adds up each GPU's counter growth between the scrapes that
// had it, across a failed scrape too (the counter kept counting). A counter
// that went down was reset (the driver reloaded, or the exporter's GPU
// restarted counting) and grew by its current value.
func counterEnergy(scrapes []Scrape, s source, endS float64) (energy, bool) {
	type sample struct{ at, v float64 }
	last := map[string]sample{}
	first, end := -1.0, -1.0
	var sum float64
	for _, sc := range scrapes {
		cur := counters(sc.Families, s.sel)
		if len(cur) == 0 {
			continue
		}
		if first < 0 {
			first = sc.OffsetS
		}
		for sig, v := range cur {
			if !usable(v) {
				continue // NaN, ±Inf or negative: no energy
			}
			p, ok := last[sig]
			last[sig] = sample{sc.OffsetS, v}
			if !ok || sc.OffsetS <= p.at {
				continue
			}
			d := v - p.v
			if v < p.v {
				d = v
			}
			frac := inside(p.at, sc.OffsetS, endS)
			sum += d * frac
			if frac > 0 {
				end = max(end, p.at+frac*(sc.OffsetS-p.at))
			}
		}
	}
	if end <= first {
		return energy{}, false
	}
	return energy{joules: sum * s.scale, windowS: end - first, source: EnergyMeasured}, true
}

// powerEnergy integrates the power summed over the GPUs by trapezoids
// between the scrapes that had it (bridging a failed scrape).
func powerEnergy(scrapes []Scrape, s source, endS float64) (energy, bool) {
	prevAt, prevW := -1.0, 0.0
	first, end := -1.0, -1.0
	var sum float64
	for _, sc := range scrapes {
		w, ok := gauge(sc.Families, s.sel, sumOf)
		if !ok || !usable(w) {
			continue
		}
		w *= s.scale
		if first < 0 {
			first = sc.OffsetS
		} else if frac := inside(prevAt, sc.OffsetS, endS); frac > 0 && sc.OffsetS > prevAt {
			dt := frac * (sc.OffsetS - prevAt)
			wEnd := prevW + frac*(w-prevW)
			sum += (prevW + wEnd) / 2 * dt
			end = prevAt + dt
		}
		prevAt, prevW = sc.OffsetS, w
	}
	if end <= first {
		return energy{}, false
	}
	return energy{joules: sum, windowS: end - first, source: EnergyEstimated}, true
}

// energyFigures adds the stage's energy up to endS (see stageEnergy) to
// srv: gpu_energy_j, gpu_energy_window_s, gpu_power_mean_w,
// gpu_energy_output_tokens and gpu_energy_requests (outTokens and
// requests: every request that ended in the stage, and their output
// tokens) and, when there were any, gpu_energy_j_per_output_token and
// gpu_energy_j_per_request, with EnergySource saying how the joules were
// got.
func energyFigures(srv *result.Server, scrapes []Scrape, endS float64, outTokens, requests int64) {
	e, ok := stageEnergy(scrapes, endS)
	if !ok {
		return
	}
	f := map[string]float64{
		"gpu_energy_j":             e.joules,
		"gpu_energy_window_s":      e.windowS,
		"gpu_power_mean_w":         e.joules / e.windowS,
		"gpu_energy_output_tokens": float64(outTokens),
		"gpu_energy_requests":      float64(requests),
	}
	if outTokens > 0 {
		f["gpu_energy_j_per_output_token"] = e.joules / float64(outTokens)
	}
	if requests > 0 {
		f["gpu_energy_j_per_request"] = e.joules / float64(requests)
	}
	for _, v := range f {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return // readings too large to add up: no energy rather than JSON that cannot be written
		}
	}
	if srv.Figures == nil {
		srv.Figures = map[string]float64{}
	}
	for k, v := range f {
		srv.Figures[k] = v
	}
	srv.EnergySource = e.source
	if missed := endS - e.windowS; missed > partialEnergy*endS {
		srv.Warnings = append(srv.Warnings, fmt.Sprintf("GPU energy covers %.2f s of the stage's %.2f s (its scrapes began late or ended early: a busy machine?): gpu_energy_j misses the rest, and J per output token and per request, over every request of the stage, are low by about %.0f %%",
			e.windowS, endS, 100*missed/endS))
	}
}

// partialEnergy is the share of a stage the energy's window may miss
// before the figures warn that it does.
const partialEnergy = 0.1
