package probe

import (
	"context"

	"github.com/spate-dev/spate/internal/golden"

	"bytes"
	"testing"

	"github.com/spate-dev/spate/result"
)

func TestWriteFigures(t *testing.T) {
	p := &result.Probes{
		Suites: []string{"injection-direct", "prompt-extraction", "benign"}, Fraction: 0.1, Confidence: Confidence,
		Families: []result.ProbeFamily{
			{Family: "direct-injection", Suite: "injection-direct", Kind: Attack, OWASP: []string{"LLM01"},
				ProbeFigures: result.ProbeFigures{Evaluated: 100, Failed: 2, AttackSuccess: rate(31, 100), Interception: rate(69, 100)}},
			{Family: "system-prompt-extraction", Suite: "prompt-extraction", Kind: Attack, OWASP: []string{"LLM07"},
				ProbeFigures: result.ProbeFigures{Evaluated: 70, AttackSuccess: rate(20, 70), Interception: rate(50, 70), Leak: rate(20, 70)}},
			{Family: "benign", Suite: "benign", Kind: Benign,
				ProbeFigures: result.ProbeFigures{Evaluated: 100, FalseRefusal: rate(0, 100), Leak: rate(0, 20)}},
		},
		Overall:  result.ProbeFigures{Evaluated: 270, Failed: 2, AttackSuccess: rate(51, 170), Interception: rate(119, 170), Leak: rate(20, 90), FalseRefusal: rate(0, 100)},
		Warnings: []string{"2 probe requests failed and are in no rate"},
	}
	var b bytes.Buffer
	if err := WriteFigures(&b, "peak", p); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "figures.txt", b.Bytes())
}

func TestWriteSuites(t *testing.T) {
	suites, err := Load(context.Background(), []string{"injection-direct", "benign"})
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := WriteSuites(&b, suites, true); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "suites.txt", b.Bytes())
}
