package compare

import "github.com/spate-dev/spate/result"

// Span is the part of a scenario's series that windows are cut from.
type Span struct {
	// Skip is the number of seconds left out at the start (warm-up and
	// settling).
	Skip int
	// Window is the length of a window in seconds.
	Window int
}

// measuredEnd is the end (exclusive) of the seconds in which load was
// still being sent: the second of the last send is partial and the drain
// after it carries no load, so both are left out.
func measuredEnd(s *result.Series) int {
	for i := len(s.SentPerS) - 1; i >= 0; i-- {
		if s.SentPerS[i] > 0 {
			return i
		}
	}
	return 0
}

// Windows cuts the series into consecutive whole windows of sp.Window
// seconds after sp.Skip, up to the last second of sending, and returns the
// metric's aggregate of each. Windows in which no request completed are
// skipped, as are windows the metric finds nothing in; empty counts them.
func Windows(s *result.Series, sp Span, m Metric) (vals []float64, empty int) {
	if m.window == nil || sp.Window <= 0 {
		return nil, 0
	}
	end := measuredEnd(s)
	for a := max(sp.Skip, 0); a+sp.Window <= end; a += sp.Window {
		done := 0
		for i := a; i < a+sp.Window; i++ {
			done += at(s.CompletedPerS, i)
		}
		if done == 0 {
			empty++
			continue
		}
		v, ok := m.window(s, a, a+sp.Window)
		if !ok {
			empty++
			continue
		}
		vals = append(vals, v)
	}
	return vals, empty
}
