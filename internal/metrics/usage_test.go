package metrics

import (
	"strings"
	"testing"
	"time"

	"github.com/spate-dev/spate/result"
)

// TestImplausibleUsage: usage is implausible only when it claims over
// twice the local count and over 16 tokens more (16 more a tool call);
// another vocabulary's 30 % more, a few tokens more on a short answer, a
// tool call's markup, or fewer tokens than counted are not.
func TestImplausibleUsage(t *testing.T) {
	for _, tc := range []struct {
		usage, counted, calls int
		want                  bool
	}{
		{128, 1, 0, true},    // one word streamed, 128 claimed
		{130, 100, 0, false}, // a SentencePiece vocabulary against cl100k
		{20, 4, 0, false},    // a short answer plus a stop sequence
		{21, 4, 0, true},
		{200, 100, 0, false},
		{201, 100, 0, true},
		{16, 48, 0, false}, // a coarser vocabulary than cl100k
		{0, 0, 0, false},
		{17, 0, 0, true},
		{25, 8, 1, false}, // a call's name and arguments, and its envelope
		{41, 8, 1, true},
		{56, 8, 2, false},
		{128, 1, 2, true},
	} {
		if got := ImplausibleUsage(tc.usage, tc.counted, tc.calls); got != tc.want {
			t.Errorf("usage %d against %d counted, %d tool calls: implausible %v, want %v", tc.usage, tc.counted, tc.calls, got, tc.want)
		}
	}
}

// TestJudgeUsage: a stage's usage is untrusted when the Wilson lower bound
// of its implausible share is over 10 %: every one of three checked
// responses is enough, one or two of many are not; without usage, or
// without a response counted both ways, there is no verdict.
func TestJudgeUsage(t *testing.T) {
	for _, tc := range []struct {
		name                   string
		fromUsage, implausible int
		checked                int
		want                   *bool
	}{
		{"not checked", 40, 0, 0, nil},
		{"no usage", 0, 0, 3, nil},
		{"all of three", 40, 3, 3, new(false)},
		{"one of a hundred", 1600, 1, 100, new(true)},
		{"two of ten", 160, 2, 10, new(true)},
		{"a quarter of sixty", 960, 15, 60, new(false)},
		{"none", 40, 0, 3, new(true)},
	} {
		tok := result.Tokens{FromUsage: tc.fromUsage, Tokenizer: "cl100k_base", UsageImplausible: tc.implausible, UsageClaimed: 384, UsageCounted: 3}
		w := JudgeUsage(&tok, tc.checked)
		switch {
		case (tok.UsageTrusted == nil) != (tc.want == nil) || (tc.want != nil && *tok.UsageTrusted != *tc.want):
			t.Errorf("%s: trusted %v, want %v", tc.name, tok.UsageTrusted, tc.want)
		case tc.want != nil && !*tc.want:
			if !strings.Contains(tok.UsageUntrusted, "384 claimed, 3 counted") || !strings.Contains(w, "cannot be trusted") {
				t.Errorf("%s: reason %q, warning %q", tc.name, tok.UsageUntrusted, w)
			}
		case w != "" || tok.UsageUntrusted != "":
			t.Errorf("%s: warning %q, reason %q for trusted usage", tc.name, w, tok.UsageUntrusted)
		}
	}
}

// TestUsageDoubt: with untrusted usage, the figures derived from output
// tokens are doubted (goodput only when its SLO bounds TPOT); others, and
// every figure of a stage whose usage is trusted, are not.
func TestUsageDoubt(t *testing.T) {
	untrusted := result.Scenario{Tokens: result.Tokens{UsageTrusted: new(false), UsageUntrusted: "3 of 3"}}
	withTPOT := untrusted
	withTPOT.Goodput.SLOms = map[string]float64{"tpot": 50, "ttft": 500}
	trusted := result.Scenario{Tokens: result.Tokens{UsageTrusted: new(true)}}
	trusted.Goodput.SLOms = withTPOT.Goodput.SLOms
	for _, tc := range []struct {
		name        string
		sc          *result.Scenario
		agg, metric string
		doubt       bool
	}{
		{"output_tps", &untrusted, "", "output_tps", true},
		{"total_tps", &untrusted, "", "total_tps", true},
		{"input_tps", &untrusted, "", "input_tps", false},
		{"rps", &untrusted, "", "rps", false},
		{"p99(tpot)", &untrusted, "percentile", "tpot", true},
		{"p99(tpot) of a bucket", &untrusted, "percentile", "tpot@input:0-512", true},
		{"mean(tokens_per_chunk)", &untrusted, "mean", "tokens_per_chunk", true},
		{"p99(ttft)", &untrusted, "percentile", "ttft", false},
		{"goodput without a TPOT SLO", &untrusted, "", "goodput", false},
		{"goodput with a TPOT SLO", &withTPOT, "", "goodput_intended", true},
		{"trusted output_tps", &trusted, "", "output_tps", false},
		{"trusted goodput", &trusted, "", "goodput", false},
	} {
		why := UsageDoubt(tc.sc, tc.agg, tc.metric)
		if (why != "") != tc.doubt || (tc.doubt && !strings.Contains(why, "3 of 3")) {
			t.Errorf("%s: doubt %q, want %v", tc.name, why, tc.doubt)
		}
	}
}

// TestRecorderUsageCheck: the recorder checks the responses counted both
// ways: three claiming 128 tokens for 8 counted make the stage's usage
// untrusted, with a warning; the same three saying 120 of them were
// reasoning they did not stream do not, nor do responses not counted
// locally.
func TestRecorderUsageCheck(t *testing.T) {
	for _, tc := range []struct {
		name              string
		reasoning, sample int
		want              *bool
	}{
		{"inflated", 0, 1, new(false)},
		{"hidden reasoning", 120, 1, new(true)},
		{"not counted locally", 0, 0, nil},
	} {
		rc := New(Config{Start: t0, Mode: "closed", Concurrency: 1, Tokenizer: "cl100k_base"})
		for i := range 3 {
			r := mk(uint64(i), time.Duration(i)*time.Second, 0, 10*time.Millisecond, time.Millisecond, 8)
			r.UsageTokens, r.OutputTokens, r.UsageReasoning = 128, 128, tc.reasoning
			if tc.sample > 0 {
				r.TokenizerTokens = 8
			}
			feed(rc, r)
		}
		sc, _, err := rc.Scenario("s", t0.Add(3*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		tr := sc.Tokens.UsageTrusted
		if (tr == nil) != (tc.want == nil) || (tr != nil && *tr != *tc.want) {
			t.Fatalf("%s: usage_trusted %v, want %v (%+v)", tc.name, tr, tc.want, sc.Tokens)
		}
		warned := strings.Contains(strings.Join(sc.Warnings, "\n"), "the server's usage cannot be trusted: 3 of 3 responses counted both ways claimed over 2× the output tokens the cl100k_base tokenizer counts in what they streamed and over 16 more (384 claimed, 24 counted)")
		if warned != (tc.want != nil && !*tc.want) {
			t.Errorf("%s: warned %v: %q", tc.name, warned, sc.Warnings)
		}
	}
}

// TestRecorderDoubtsDuringTheRun: figures judged during the run (abort
// thresholds, triggers on a window) see the usage check so far: once three
// responses counted both ways claimed 128 tokens for 8, output_tps and
// TPOT are doubted on the recorder and on its window's view, TTFT is not;
// before any response was checked nothing is.
func TestRecorderDoubtsDuringTheRun(t *testing.T) {
	rc := New(Config{Start: t0, Mode: "closed", Concurrency: 1, Tokenizer: "cl100k_base", Window: 10 * time.Second})
	doubts := func() (bool, bool, bool, bool) {
		sc, hist, ok := rc.WindowSpan(t0.Add(4*time.Second), 0, 3)
		if !ok {
			t.Fatal("no window view")
		}
		src := Source{Scenario: &sc, Hists: hist}
		return rc.Doubt("", "output_tps") != "", rc.Doubt("percentile", "ttft") != "",
			src.Doubt("", 0, "output_tps") != "", src.Doubt("percentile", 99, "tpot") != ""
	}
	if a, b, c, d := doubts(); a || b || c || d {
		t.Fatalf("doubts before any response: %v %v %v %v", a, b, c, d)
	}
	for i := range 3 {
		r := mk(uint64(i), time.Duration(i)*time.Second, 0, 10*time.Millisecond, time.Millisecond, 8)
		r.UsageTokens, r.OutputTokens, r.TokenizerTokens = 128, 128, 8
		feed(rc, r)
	}
	if a, b, c, d := doubts(); !a || b || !c || !d {
		t.Fatalf("doubts after three implausible responses: output_tps %v, ttft %v, window output_tps %v, window tpot %v; want true, false, true, true", a, b, c, d)
	}
}
