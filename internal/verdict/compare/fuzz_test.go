package compare

import (
	"math"
	"testing"

	"github.com/spate-dev/spate/result"
)

// FuzzCompare feeds arbitrary per-second series (as a result file could
// hold them) to Compare: it must not panic, and every figure it reports
// must be a number or a reported "?".
func FuzzCompare(f *testing.F) {
	f.Add([]byte{10, 1, 100, 200, 10, 0, 110, 220, 0, 0, 0, 0}, []byte{9, 2, 120, 210, 11, 1, 90, 250}, uint8(2))
	f.Fuzz(func(t *testing.T, a, b []byte, window uint8) {
		series := func(raw []byte) *result.Result {
			var s result.Series
			for i := 0; i+3 < len(raw); i += 4 {
				s.SentPerS = append(s.SentPerS, int(raw[i]))
				s.CompletedPerS = append(s.CompletedPerS, int(raw[i]))
				s.ErrorsPerS = append(s.ErrorsPerS, int(raw[i+1]))
				s.OutputTokens = append(s.OutputTokens, int64(raw[i]))
				for _, col := range []*[]float64{&s.TTFTp50ms, &s.TTFTp99ms, &s.TTFTMeanMS} {
					*col = append(*col, float64(raw[i+2]))
				}
				for _, col := range []*[]float64{&s.E2Ep50ms, &s.E2Ep99ms, &s.E2EMeanMS} {
					*col = append(*col, float64(raw[i+3]))
				}
			}
			r := baseModel.result(1, "v")
			r.Scenarios[0].Series = s
			return r
		}
		rep, err := Compare(Sides{Base: []Input{{"a", series(a)}}, New: []Input{{"b", series(b)}}},
			Config{Window: int(window%8) + 1, MinWindows: 2, Resamples: 50})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rep.Stages[0].Rows {
			if r.Verdict == Unknown {
				continue
			}
			for _, x := range []float64{r.Base.Center, r.New.Center, r.P, r.ChangeLo, r.ChangeHi} {
				if math.IsNaN(x) {
					t.Fatalf("%s: NaN in %+v", r.Metric, r)
				}
			}
			if r.P < 0 || r.P > 1 {
				t.Fatalf("%s: p %v", r.Metric, r.P)
			}
		}
	})
}
