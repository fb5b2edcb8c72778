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
