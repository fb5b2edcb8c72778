package report

import (
	"bytes"
	"strings"
	"testing"
)

// TestUntrustedUsageShown: a stage whose usage the check does not trust
// says so on the console's tokens line and beside its TPOT and output
// tok/s in the markdown table; a trusted stage says nothing of it.
func TestUntrustedUsageShown(t *testing.T) {
	for _, trusted := range []bool{false, true} {
		r := sample()
		sc := &r.Scenarios[0]
		sc.Tokens.UsageTrusted = &trusted
		if !trusted {
			sc.Tokens.UsageUntrusted = "3 of 3 responses counted both ways claimed over 2×"
		}
		var con, md bytes.Buffer
		if err := Console(&con, r); err != nil {
			t.Fatal(err)
		}
		if err := Markdown(&md, r); err != nil {
			t.Fatal(err)
		}
		line := strings.Contains(con.String(), "tokens     UNTRUSTED usage: 3 of 3 responses counted both ways claimed over 2×; output tok/s, TPOT and tokens per chunk")
		cells := strings.Count(md.String(), "(untrusted usage)")
		if line == trusted || (cells == 2) == trusted || (trusted && cells != 0) {
			t.Errorf("trusted %v: console line %v, markdown cells %d:\n%s\n%s", trusted, line, cells, con.String(), md.String())
		}
	}
}

// TestJudgedGoodputFirst: where the thresholds judge goodput from the
// intended send time (an open loop), the console and the markdown table
// show that figure first and the send's beside it; judged from the send
// (--slo-from sent), the send's comes first, as before.
func TestJudgedGoodputFirst(t *testing.T) {
	for _, from := range []string{"", "sent"} {
		r := sample()
		r.Config.SLOFrom = from
		sc := &r.Scenarios[0]
		sc.Goodput.Fraction, sc.Goodput.RequestsPerS = 0.972, 19.4
		sc.Goodput.IntendedFraction, sc.Goodput.IntendedRequestsPerS = 0.037, 0.74
		var con, md bytes.Buffer
		if err := Console(&con, r); err != nil {
			t.Fatal(err)
		}
		if err := Markdown(&md, r); err != nil {
			t.Fatal(err)
		}
		wantCon := "goodput    3.7 % (0.74 req/s) within tpot≤50ms ttft≤500ms from the intended send time, as thresholds judge it · from the send 97.2 % (19.40 req/s)"
		wantMD := "| 3.7 % from the intended send time (97.2 % from the send) |"
		if from == "sent" {
			wantCon = "goodput    97.2 % (19.40 req/s) within tpot≤50ms ttft≤500ms · from the intended send time 3.7 % (0.74 req/s)"
			wantMD = "| 97.2 % |"
		}
		if !strings.Contains(con.String(), wantCon) || !strings.Contains(md.String(), wantMD) {
			t.Errorf("slo_from %q: want %q and %q in\n%s\n%s", from, wantCon, wantMD, con.String(), md.String())
		}
	}
}
