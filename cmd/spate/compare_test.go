package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spate-dev/spate/internal/longtest"
	"github.com/spate-dev/spate/internal/verdict/compare"
	"github.com/spate-dev/spate/result"
	"github.com/spate-dev/spate/sim"
)

// TestCompareFindsPlantedRegressions runs spate against the deterministic
// simulator four times at once for 10 s each (so that the machine's load
// is shared alike), two with the base timings and two with TTFT and ITL
// raised by 10 % and 20 %, and compares them at the default settings
// (windows chosen from the runs' length): the +20 % is regressed in E2E
// p99 and exits 3, measured within a few points; the +10 % is found in the
// median; the second base run gives "~" on E2E and no gated regression.
// Latencies are long (E2E 2 s) so that the client's scheduling jitter on a
// loaded machine (tens of ms under -race) stays small beside them.
func TestCompareFindsPlantedRegressions(t *testing.T) {
	longtest.Skip(t)
	if testing.Short() {
		t.Skip("sends load for 12 s")
	}
	ctx := context.Background()
	dir := t.TempDir()
	runs := []struct {
		name    string
		planted float64
	}{{"base", 0}, {"same", 0}, {"plus10", 0.10}, {"plus20", 0.20}}
	var wg sync.WaitGroup
	errs := make([]string, len(runs))
	for i, r := range runs {
		ttft := time.Duration(float64(800*time.Millisecond) * (1 + r.planted))
		itl := time.Duration(float64(80*time.Millisecond) * (1 + r.planted))
		_, target := startSim(t, sim.Deterministic(ttft, itl, 16))
		wg.Add(1)
		go func() {
			defer wg.Done()
			var out, errb bytes.Buffer
			code := execute(ctx, []string{"run", "--target", target, "--model", "spate-sim", "--rate", "10",
				"--arrival", "constant", "--duration", "10s", "--output-tokens", "16", "--quiet", "--lag-bound", "100ms", "--allow-invalid",
				"--out", filepath.Join(dir, r.name+".json"), "--sut-version", r.name}, &out, &errb)
			if code != 0 {
				errs[i] = fmt.Sprintf("run %s: exit %d: %s", r.name, code, errb.String())
			}
		}()
	}
	wg.Wait()
	for _, e := range errs {
		if e != "" {
			t.Fatal(e)
		}
	}
	base := filepath.Join(dir, "base.json")
	compareJSON := func(name string, extra ...string) (int, compare.Report) {
		args := append([]string{"compare", base, filepath.Join(dir, name+".json"), "--format", "json"}, extra...)
		code, stdout, stderr := cli(t, ctx, args...)
		var rep compare.Report
		if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
			t.Fatalf("%s: %v\n%s\n%s", name, err, stdout, stderr)
		}
		st := rep.Stages[0]
		t.Logf("%s: exit %d, %d windows of %d s, lag-1 %.2f, regressed %v, inconclusive %q", name, code, st.Windows, st.WindowS, st.Lag1, rep.Regressed, rep.Inconclusive)
		for _, r := range st.Rows {
			t.Logf("  %s: %.1f → %.1f, %+.2f %% [%+.2f, %+.2f] p %.2g n %d/%d %s %v", r.Metric, r.Base.Center, r.New.Center,
				100*r.Change, 100*r.ChangeLo, 100*r.ChangeHi, r.P, r.NBase, r.NNew, r.Verdict, r.Warnings)
		}
		return code, rep
	}
	get := func(rep compare.Report, metric string) compare.Row {
		for _, r := range rep.Stages[0].Rows {
			if r.Metric == metric {
				return r
			}
		}
		t.Fatalf("no row %s", metric)
		return compare.Row{}
	}
	// The same configuration twice: no gated regression, "~" on E2E.
	code, same := compareJSON("same")
	if code == exitInvalid && strings.Contains(same.Inconclusive, "not a valid measurement") {
		// The busy machine made a run late beyond even --lag-bound:
		// inconclusive, rightly; judged anyway, it must find nothing.
		t.Logf("same configuration inconclusive (%s): judged with --allow-invalid", same.Inconclusive)
		code, same = compareJSON("same", "--allow-invalid")
	}
	if code != exitOK || len(same.Regressed) > 0 {
		t.Errorf("same configuration: exit %d, regressed %v, inconclusive %q", code, same.Regressed, same.Inconclusive)
	}
	for _, m := range []string{"e2e_p50_ms", "e2e_p99_ms"} {
		if r := get(same, m); r.Verdict != compare.Same {
			t.Errorf("same configuration: %s %s", m, r.Verdict)
		}
	}
	// +20 %: regressed in E2E p99 (gated, exit 3), measured; ITL in its
	// mean (its p99 is the client's scheduling jitter on a busy machine).
	code, plus20 := compareJSON("plus20")
	if code != exitThreshold {
		t.Errorf("plus20: exit %d, want 3", code)
	}
	for _, m := range []string{"e2e_p50_ms", "e2e_p99_ms", "itl_mean_ms"} {
		r := get(plus20, m)
		if r.Verdict != compare.Regressed {
			t.Errorf("plus20 %s: %s, want regressed", m, r.Verdict)
		}
		if m == "e2e_p50_ms" && math.Abs(r.Change-0.20) > 0.03 {
			t.Errorf("plus20 e2e_p50 change %+.3f, want +0.20 ± 0.03", r.Change)
		}
	}
	// +10 % is twice the 5 % margin: found in the median, the least noisy.
	if _, plus10 := compareJSON("plus10"); get(plus10, "e2e_p50_ms").Verdict != compare.Regressed {
		t.Errorf("plus10 e2e_p50: %s, want regressed", get(plus10, "e2e_p50_ms").Verdict)
	}
	// The table names the regression in its last line, and the margin.
	code, stdout, _ := cli(t, ctx, "compare", "--base", base, "--new", filepath.Join(dir, "plus20.json"), "--gate", "e2e_p99_ms")
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	if code != exitThreshold || lines[len(lines)-1] != "REGRESSED (gated; 99 % family-wise confidence, Holm–Bonferroni over 1 gated row): main/e2e_p99_ms" || !strings.Contains(stdout, "±5 %") {
		t.Errorf("table: exit %d\n%s", code, stdout)
	}
}

func TestCompareUsage(t *testing.T) {
	ctx := context.Background()
	for _, args := range [][]string{
		{"compare", "a.json"},
		{"compare", "a.json", "b.json", "--base", "c.json"},
		{"compare", "a.json", "b.json", "--format", "xml"},
		{"compare", "a.json", "b.json", "--window", "1500ms"},
		{"compare", "--base", "nothing-*.json", "--new", "b.json"},
		{"compare", "a.json", "b.json", "--base-ref", "r.json"},
		{"compare", "a.json", "b.json", "--"},
		{"compare", "--", "a.json", "b.json"},
		{"compare", "a.json", "b.json", "--gate", ""}, // an empty CI variable must not gate nothing
		{"compare", "a.json", "b.json", "--gate", "e2e_p99_ms,"},
	} {
		if code, _, stderr := cli(t, ctx, args...); code != exitUsage {
			t.Errorf("%v: exit %d, want 2 (%s)", args, code, stderr)
		}
	}
}

// steadyResult is a result of 30 steady seconds at 10 req/s with E2E p99
// e2e ms (alternating ±2 % so windows vary).
func steadyResult(model string, e2e float64) *result.Result {
	var s result.Series
	for i := range 31 {
		k := 1 + 0.02*float64(i%2*2-1)
		s.SentPerS, s.CompletedPerS, s.ErrorsPerS = append(s.SentPerS, 10), append(s.CompletedPerS, 10), append(s.ErrorsPerS, 0)
		s.OutputTokens = append(s.OutputTokens, 100)
		for _, col := range []*[]float64{&s.TTFTp50ms, &s.TTFTp99ms, &s.TTFTMeanMS} {
			*col = append(*col, 100*k)
		}
		for _, col := range []*[]float64{&s.E2Ep50ms, &s.E2Ep99ms, &s.E2EMeanMS} {
			*col = append(*col, e2e*k)
		}
	}
	return &result.Result{Schema: result.Schema, Provenance: result.Provenance{Model: model, WorkloadSHA256: "w"},
		Scenarios: []result.Scenario{{Name: "main", Load: result.Load{Valid: true}, Series: s,
			Requests: result.Requests{Total: 300, Succeeded: 300}}}}
}

func TestCompareFilesAndFingerprints(t *testing.T) {
	// Not a timing test: it runs beside the others (validity is not its subject).
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	write := func(name string, r *result.Result) string {
		p := filepath.Join(dir, name)
		if err := result.Write(p, r); err != nil {
			t.Fatal(err)
		}
		return p
	}
	a := write("a.json", steadyResult("m", 1000))
	b := write("b.json", steadyResult("m", 1100))
	other := write("other.json", steadyResult("other-model", 1000))

	code, stdout, stderr := cli(t, ctx, "compare", a, other)
	if code != exitError || !strings.Contains(stderr, "provenance.model: m ≠ other-model") || !strings.Contains(stderr, "--force") {
		t.Errorf("mismatch: exit %d, stderr %q", code, stderr)
	}
	if code, _, _ = cli(t, ctx, "compare", a, other, "--force"); code != exitOK {
		t.Errorf("--force: exit %d, want 0", code)
	}
	code, stdout, _ = cli(t, ctx, "compare", "--base", filepath.Join(dir, "a*.json"), "--new", b, "--format", "markdown", "--window", "3s")
	if code != exitThreshold || !strings.Contains(stdout, "| e2e_p99_ms* | 1000.7 [") || !strings.Contains(stdout, "ms | 1100.8 [") || !strings.Contains(stdout, "**regressed**") {
		t.Errorf("markdown: exit %d\n%s", code, stdout)
	}
	// Several runs a side, split by "--" (after which everything is a
	// file): the same comparison.
	code, stdout2, _ := cli(t, ctx, "compare", "--format", "markdown", "--window", "3s", a, a, "--", b)
	if code != exitThreshold || !strings.Contains(stdout2, "**regressed**") {
		t.Errorf("BASE BASE -- NEW: exit %d\n%s", code, stdout2)
	}
	// The verdict line names the correction and the family: the gated
	// rows these results have (TTFT and E2E p50 and p99, error rate).
	if !strings.Contains(stdout, "- REGRESSED (gated; 99 % family-wise confidence, Holm–Bonferroni over 5 gated rows): main/") {
		t.Errorf("markdown verdict line:\n%s", stdout)
	}
	if code, stdout, _ = cli(t, ctx, "compare", a, b, "--gate", "none", "--window", "3s"); code != exitOK || !strings.Contains(stdout, "no gated metric regressed (nothing gated)") {
		t.Errorf("--gate none: exit %d, want 0\n%s", code, stdout)
	}
	if code, _, stderr = cli(t, ctx, "compare", a, b, "--metric", "nope"); code != exitUsage || !strings.Contains(stderr, "unknown metric") {
		t.Errorf("--metric nope: exit %d %q", code, stderr)
	}
}
