package metrics

import (
	"fmt"
	"strings"

	"github.com/spate-dev/spate/internal/binomial"
	"github.com/spate-dev/spate/result"
)

// The usage check (docs/figures.md, "Tokens and throughput"): output tokens
// come from the server's usage when it reports them, and every figure
// derived from them (output_tps, total_tps, TPOT, tokens per chunk) is then
// the server's word. The requests counted both ways (every
// --tokenizer-sample'th) check that word against what was streamed.
//
// A different vocabulary legitimately counts the same text differently: a
// SentencePiece vocabulary against cl100k by up to about 30 %, a piece of
// another vocabulary several cl100k tokens apiece (usage then under the
// local count). A stop sequence or an end-of-text token the server counts
// but does not stream adds a few. What no vocabulary explains is usage
// claiming several times the tokens the streamed text holds: one short
// word streamed, 128 tokens claimed. So a response's usage is implausible
// when it is over UsageRatio times the local count and over it by more
// than UsageSlack tokens; only inflation is checked, as a count under the
// local one is what a coarser vocabulary gives. The reasoning tokens usage
// reports (completion_tokens_details.reasoning_tokens) are taken off the
// claim first: a server that thinks without streaming its thoughts
// generated tokens the stream never carried, and says so.
//
// One odd response does not condemn a stage: its usage is untrusted when
// the Wilson lower bound (at UsageConfidence) of the share of implausible
// responses among those checked is over UsageShare.
const (
	// UsageRatio is how many times the local count usage may claim.
	UsageRatio = 2
	// UsageSlack is how many tokens over the local count usage may claim
	// whatever the ratio (a short answer's stop sequence, end of text).
	UsageSlack = 16
	// UsageShare is the share of implausible responses a stage's usage
	// may have, at UsageConfidence, and still be trusted.
	UsageShare = 0.1
	// UsageConfidence is the level of the Wilson bound on that share.
	UsageConfidence = 0.95
)

// ImplausibleUsage says whether a response's usage output tokens cannot be
// explained by the tokens counted locally in what it streamed (see the
// usage check above); calls are its tool calls, each allowed UsageSlack
// more: the stream carries a call's name and arguments, not the markup
// around them the model generated (a hermes <tool_call> envelope is about
// a dozen tokens).
func ImplausibleUsage(usage, counted, calls int) bool {
	return usage > max(UsageRatio*counted, counted+UsageSlack*(1+max(calls, 0)))
}

// JudgeUsage sets t's usage verdict (UsageTrusted and, when untrusted,
// UsageUntrusted) from the checked responses (counted both ways) and
// t.UsageImplausible of them. It returns the stage's warning, "" when
// usage is trusted or was not checked (no usage, or no response counted
// both ways).
func JudgeUsage(t *result.Tokens, checked int) string {
	t.UsageTrusted, t.UsageUntrusted = nil, ""
	if checked <= 0 || t.FromUsage == 0 {
		return ""
	}
	k := t.UsageImplausible
	lo, _ := binomial.Wilson(k, checked, UsageConfidence)
	trusted := lo <= UsageShare
	t.UsageTrusted = &trusted
	if trusted {
		return ""
	}
	tok := t.Tokenizer
	if tok == "" {
		tok = "local"
	}
	t.UsageUntrusted = fmt.Sprintf("%d of %d responses counted both ways claimed over %d× the output tokens the %s tokenizer counts in what they streamed and over %d more (%d claimed, %d counted)",
		k, checked, UsageRatio, tok, UsageSlack, t.UsageClaimed, t.UsageCounted)
	return "the server's usage cannot be trusted: " + t.UsageUntrusted + ": output_tps, total_tps, TPOT, tokens per chunk (and goodput with a TPOT SLO) rest on it, and thresholds on them cannot be judged"
}

// UsageDerived says whether a threshold's figure (asked as Lookup is)
// rests on the output token counts: output_tps and total_tps, TPOT and
// tokens per chunk, and goodput when its SLO bounds TPOT.
func UsageDerived(sc *result.Scenario, agg, metric string) bool {
	metric, _, _ = strings.Cut(metric, "@input:")
	if agg != "" {
		return metric == "tpot" || metric == "tokens_per_chunk"
	}
	switch metric {
	case "output_tps", "total_tps":
		return true
	case "goodput", "goodput_rps", "goodput_sent", "goodput_sent_rps", "goodput_intended", "goodput_intended_rps":
		return sc.Goodput.SLOms["tpot"] > 0
	}
	return false
}

// UsageDoubt is why a threshold's figure cannot be judged because it rests
// on usage the stage does not trust, "" when it can.
func UsageDoubt(sc *result.Scenario, agg, metric string) string {
	t := sc.Tokens
	if t.UsageTrusted == nil || *t.UsageTrusted || !UsageDerived(sc, agg, metric) {
		return ""
	}
	return "it rests on the server's usage, untrusted: " + t.UsageUntrusted
}
