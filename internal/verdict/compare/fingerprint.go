package compare

import (
	"fmt"
	"slices"
	"strings"

	"github.com/spate-dev/spate/result"
)

// MismatchError says why two results did not measure the same thing.
type MismatchError struct {
	// Diffs name each field that differs and its two values.
	Diffs []string
}

// Error lists what differs.
func (e *MismatchError) Error() string {
	return "the results measured different things (pass --force to compare anyway):\n  " + strings.Join(e.Diffs, "\n  ")
}

// differences lists the fields of what was measured that differ between a
// and b, named as in the result file. The SUT version is left out when
// allowSUT is set: comparing two versions of a server is what compare is
// for, across sides. Runs whose seeds differ are replicates when their
// workloads differ by the seed only (the same workload_spec_sha256); the
// seed is never a difference.
func differences(a, b *result.Result, allowSUT bool) []string {
	var d []string
	add := func(field string, x, y any) {
		if x != y {
			d = append(d, fmt.Sprintf("%s: %v ≠ %v", field, show(x), show(y)))
		}
	}
	pa, pb := a.Provenance, b.Provenance
	add("provenance.model", pa.Model, pb.Model)
	if !allowSUT {
		add("provenance.sut_version", pa.SUTVersion, pb.SUTVersion)
	}
	seeds := a.Config.Seed != b.Config.Seed
	specA, specB := pa.WorkloadSpecSHA256, pb.WorkloadSpecSHA256
	switch {
	case pa.WorkloadSHA256 == pb.WorkloadSHA256:
	case seeds && specA != "" && specA == specB:
		// Replicates: the same workload drawn with another seed.
	case seeds && specA != "" && specB != "":
		d = append(d, fmt.Sprintf("provenance.workload_spec_sha256: %s ≠ %s (the workloads differ beyond their seeds)", short(specA), short(specB)))
	case seeds:
		d = append(d, fmt.Sprintf("provenance.workload_sha256: %s ≠ %s (the seeds differ too, but a result without workload_spec_sha256, from an older spate, cannot show that the seed is all that differs)", short(pa.WorkloadSHA256), short(pb.WorkloadSHA256)))
	default:
		add("provenance.workload_sha256", short(pa.WorkloadSHA256), short(pb.WorkloadSHA256))
	}
	add("provenance.api", pa.API, pb.API)
	ca, cb := a.Config, b.Config
	add("config.arrival", ca.Arrival, cb.Arrival)
	add("config.burstiness", ca.Burstiness, cb.Burstiness)
	add("config.rate", ca.Rate, cb.Rate)
	add("config.concurrency", ca.Concurrency, cb.Concurrency)
	add("config.max_concurrency", ca.MaxConcurrency, cb.MaxConcurrency)
	add("config.duration", ca.Duration, cb.Duration)
	add("config.requests", ca.Requests, cb.Requests)
	add("config.warmup", ca.Warmup, cb.Warmup)
	add("config.input_tokens", ca.InputTokens, cb.InputTokens)
	add("config.output_tokens", ca.OutputTokens, cb.OutputTokens)
	add("config.stream", ca.Stream, cb.Stream)
	add("config.slo", ca.SLO, cb.SLO)
	add("config.slo_from", ca.SLOFrom, cb.SLOFrom)
	add("config.complexity_shaping", ca.ComplexityShaping, cb.ComplexityShaping)
	// config holds the first stage's load only: each stage shared must
	// have been sent the same load (a capacity search's trials are its
	// own, and compared on the capacity).
	if a.Capacity != nil || b.Capacity != nil {
		return d
	}
	for _, sa := range a.Scenarios {
		sb := scenario(b, sa.Name)
		if sb == nil {
			continue // commonStages says so
		}
		la, lb := sa.Load, sb.Load
		f := "scenarios[" + sa.Name + "].load."
		add(f+"mode", la.Mode, lb.Mode)
		add(f+"arrival", la.Arrival, lb.Arrival)
		add(f+"target_rate", la.TargetRate, lb.TargetRate)
		add(f+"ramp_from", la.RampFrom, lb.RampFrom)
		add(f+"target_token_rate", la.TargetTokenRate, lb.TargetTokenRate)
		add(f+"concurrency", la.Concurrency, lb.Concurrency)
		add(f+"max_concurrency", la.MaxConcurrency, lb.MaxConcurrency)
		if !legacyWarmup(a) && !legacyWarmup(b) {
			add(f+"warmup", la.Warmup, lb.Warmup)
		}
	}
	return d
}

// replicates describes the seeds of each side when they are not all one:
// "seeds 1, 2 (base) · 3, 4 (new)".
func replicates(s Sides) string {
	seedsOf := func(in []Input) []string {
		var out []string
		for _, x := range in {
			v := fmt.Sprint(x.Result.Config.Seed)
			if !slices.Contains(out, v) {
				out = append(out, v)
			}
		}
		return out
	}
	b, n := seedsOf(s.Base), seedsOf(s.New)
	if len(b) == 1 && len(n) == 1 && b[0] == n[0] {
		return ""
	}
	return fmt.Sprintf("seeds %s (base) · %s (new): runs that differ in their seed only are independent replicates", strings.Join(b, ", "), strings.Join(n, ", "))
}

func show(v any) any {
	if s, ok := v.(string); ok && s == "" {
		return `""`
	}
	return v
}

func short(digest string) string {
	if len(digest) > 12 {
		return digest[:12]
	}
	return digest
}
