package htmlreport

import (
	"strings"
	"testing"

	"github.com/spate-dev/spate/result"
)

// TestStageGoodputAsJudged: the stage table's goodput is the one the
// thresholds judge: from the intended send time on an open loop (with the
// send's beside it), from the send on a closed loop.
func TestStageGoodputAsJudged(t *testing.T) {
	for _, mode := range []string{"open", "closed"} {
		res := &result.Result{}
		sc := &result.Scenario{Load: result.Load{Mode: mode},
			Metrics: map[string]result.Dist{"ttft_intended_ms": {Count: 100}},
			Goodput: result.Goodput{Fraction: 0.972, RequestsPerS: 19.4, IntendedFraction: 0.037, IntendedRequestsPerS: 0.74}}
		s := newStageView(res, sc)
		if mode == "open" && (s.Goodput != 0.037 || s.GoodputPerS != 0.74 || !strings.Contains(s.GoodputNote, "from the send 97.2 %")) ||
			mode == "closed" && (s.Goodput != 0.972 || s.GoodputNote != "") {
			t.Errorf("%s loop: %+v", mode, s)
		}
	}
}
