package workload

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// FuzzParseLengths: every distribution that parses samples lengths of at
// least its minimum, and at most the limit once capped.
func FuzzParseLengths(f *testing.F) {
	for _, s := range []string{"512", "512:64", "normal:512:64", "uniform:100:900", "lognormal:512:256", "choice:4096@0.5,16384@0.5", "1e300", "lognormal:1e300:1e300", "uniform:0:1e30", "choice:1@1e-300"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if strings.HasPrefix(strings.TrimSpace(s), "empirical:") {
			return // reads a file: FuzzReadLengths
		}
		l, err := ParseLengths(s)
		if err != nil {
			return
		}
		r := rand.New(rand.NewPCG(1, 2))
		if c, err := l.Capped(1000, "inputTokens"); err == nil {
			for i := 0; i < 20; i++ {
				if v := c.Sample(r); v < c.Min || v > 1000 {
					t.Fatalf("%q capped at 1000 drew %d", s, v)
				}
			}
		}
		for i := 0; i < 20; i++ {
			if v := l.Sample(r); v < l.Min {
				t.Fatalf("%q drew %d under its minimum %d", s, v, l.Min)
			}
		}
	})
}

func FuzzReadLengths(f *testing.F) {
	f.Add("1\n2\n# comment\n\n30\n")
	f.Add("-1\n")
	f.Add(strings.Repeat("9", 100) + "\n")
	f.Fuzz(func(t *testing.T, s string) {
		vals, err := readLengthsFrom(strings.NewReader(s), "f")
		if err != nil {
			return
		}
		for _, v := range vals {
			if v < 0 {
				t.Fatalf("negative length %d", v)
			}
		}
	})
}
