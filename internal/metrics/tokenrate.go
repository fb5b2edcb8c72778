package metrics

import (
	"fmt"
	"math"
	"time"

	"github.com/spate-dev/spate/internal/record"
	"github.com/spate-dev/spate/result"
)

// tokenPace measures the token rate a token-paced stage offered: the
// expected tokens of the measured requests sent, per second of their sends.
type tokenPace struct {
	sum, sumSq  float64   // tokens of every measured request sent, and squares
	first, last time.Time // earliest and latest send
	lastTokens  float64   // tokens of the latest send
	n           int
	// served counts the tokens the requests that succeeded were served
	// (their input, and their output as counted: the server's usage or
	// the local tokenizer), total and output only, lastServed* the latest
	// send's; sources counts the successes by their output's source.
	served, servedOut         float64
	lastServed, lastServedOut float64
	sources                   [3]int // by record.TokenSource
}

// add counts a finished record (cancelled ones included: they were sent).
func (t *tokenPace) add(rec *record.Record) {
	if rec.Warmup || rec.PacedTokens <= 0 {
		return
	}
	t.sum += rec.PacedTokens
	t.sumSq += rec.PacedTokens * rec.PacedTokens
	t.n++
	if t.first.IsZero() || rec.Sent.Before(t.first) {
		t.first = rec.Sent
	}
	var in, out float64
	if !rec.Failed() {
		in, out = float64(rec.InputTokens), float64(rec.OutputTokens)
		t.served += in + out
		t.servedOut += out
		if int(rec.OutputSource) < len(t.sources) {
			t.sources[rec.OutputSource]++
		}
	}
	if !rec.Sent.Before(t.last) {
		t.last, t.lastTokens = rec.Sent, rec.PacedTokens
		t.lastServed, t.lastServedOut = in+out, out
	}
}

// servedSource says what the served tokens' output counts rest on: "usage",
// "tokenizer" or "usage and tokenizer"; "" when some success had no count
// (the figure is then not a measurement).
func (t *tokenPace) servedSource() string {
	switch u, k, none := t.sources[record.TokensUsage], t.sources[record.TokensTokenizer], t.sources[record.TokensNone]; {
	case none > 0 || u+k == 0:
		return ""
	case k == 0:
		return "usage"
	case u == 0:
		return "tokenizer"
	}
	return "usage and tokenizer"
}

// fill sets the load's token-rate figures: the tokens of every request but
// the last sent over the span of the sends (the schedule spaces a request
// from the one before by that one's tokens, so the last one's tokens fall
// after the span). gapCV is the coefficient of variation of the arrival
// process's unit gaps (0 constant, 1 Poisson): the offered rate of a random
// schedule spreads around the target by about 1.96·gapCV·√Σtok²/Σtok (95 %),
// which a warning gives when it is over 2 %.
func (t *tokenPace) fill(l *result.Load, target float64, outputBasis bool, gapCV float64) []string {
	if target <= 0 {
		return nil
	}
	l.TargetTokenRate = target
	l.TokenRateBasis = "total"
	if outputBasis {
		l.TokenRateBasis = "output"
	}
	if span := t.last.Sub(t.first).Seconds(); t.n > 1 && span > 0 {
		l.AchievedTokenRate = (t.sum - t.lastTokens) / span
		if src := t.servedSource(); src != "" {
			served := t.served - t.lastServed
			if outputBasis {
				served = t.servedOut - t.lastServedOut
			}
			l.ServedTokenRate, l.ServedTokenSource = served/span, src
		}
	}
	if t.n > 1 && t.sum > 0 {
		if spread := 1.96 * gapCV * math.Sqrt(t.sumSq) / t.sum; spread > 0.02 {
			return []string{fmt.Sprintf("the token rate a %s schedule offers over %d requests spreads by about ±%.0f %% around its target (95 %%): a longer stage gives a closer figure", l.Arrival, t.n, 100*spread)}
		}
	}
	return nil
}
