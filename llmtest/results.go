package llmtest

import "github.com/spate-dev/spate/result"

// KeptUp fills sc's per-second series as those of a server that kept up
// with its offered rate for secs seconds: sc.Load.TargetRate requests sent
// each second (rounded), as many completed, each in 100 ms, a steady two
// in flight, then a second of drain. For tests of what reads a stage's
// series (a ramp's knee, capacity's rule) with stages built by hand.
func KeptUp(sc *result.Scenario, secs int) {
	n := int(sc.Load.TargetRate + 0.5)
	s := &sc.Series
	for i := range secs + 1 {
		sent := n
		if i == secs {
			sent = 0 // the drain
		}
		s.SentPerS = append(s.SentPerS, sent)
		s.CompletedPerS = append(s.CompletedPerS, sent)
		s.ErrorsPerS = append(s.ErrorsPerS, 0)
		s.InFlight = append(s.InFlight, 2)
		s.E2Ep50ms = append(s.E2Ep50ms, 100)
		s.TTFTp50ms = append(s.TTFTp50ms, 50)
	}
}
