package chaos

import (
	"math"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/spate-dev/spate/internal/record"
	"github.com/spate-dev/spate/internal/workload"
	"github.com/spate-dev/spate/sim"
)

func TestRequestsMix(t *testing.T) {
	src := workload.Synthetic{Input: workload.Lengths{Mean: 16}, Output: workload.Lengths{Mean: 32}, Seed: 1}
	mix := Mix{MaxTokens1: 0.05, Oversize: 0.02, Malformed: 0.01, MaxContext: 100}
	cs := Requests(src, mix, 9)
	const n = 20000
	counts := map[string]int{}
	for i := uint64(0); i < n; i++ {
		r, err := cs.Request(i)
		if err != nil {
			t.Fatal(err)
		}
		counts[r.Intent]++
		switch r.Intent {
		case IntentMaxTokens1:
			if r.MaxTokens != 1 {
				t.Fatalf("max_tokens_1 request asks %d tokens", r.MaxTokens)
			}
		case IntentOversize:
			if got := strings.Count(r.Prompt, " the") + strings.Count(lastContent(r), " the"); got <= 100 {
				t.Fatalf("oversize prompt has %d filler tokens, want > 100", got)
			}
		case IntentMalformed:
			if string(r.Body) != string(malformedBody) {
				t.Fatalf("malformed body %q", r.Body)
			}
		case "":
			orig, _ := src.Request(i)
			if r.MaxTokens != orig.MaxTokens || r.Prompt != orig.Prompt {
				t.Fatalf("request %d changed without a label", i)
			}
		}
		again, _ := cs.Request(i)
		if again.Intent != r.Intent {
			t.Fatalf("request %d: not deterministic", i)
		}
	}
	for intent, want := range map[string]float64{IntentMaxTokens1: 0.05, IntentOversize: 0.02, IntentMalformed: 0.01} {
		f := float64(counts[intent]) / n
		if tol := 4 * math.Sqrt(want*(1-want)/n); math.Abs(f-want) > tol {
			t.Errorf("%s: %.4f, want %.2f ± %.4f", intent, f, want, tol)
		}
	}
	if cs.Digest() == src.Digest() || cs.Digest() != Requests(src, mix, 9).Digest() {
		t.Error("digest does not identify the chaos settings")
	}
}

func lastContent(r *workload.Request) string {
	if len(r.Messages) == 0 {
		return ""
	}
	return r.Messages[len(r.Messages)-1].Content
}

// TestOversizeRejected: the simulator with a 512-token window rejects
// exactly the oversize requests with 400, and answers max_tokens_1 ones
// with one token.
func TestOversizeRejected(t *testing.T) {
	s, err := sim.New(sim.Deterministic(0, 0, 0))
	if err != nil {
		t.Fatal(err)
	}
	s.SetFaults(sim.Faults{MaxContext: 512})
	hs := httptest.NewServer(s)
	defer hs.Close()
	defer s.Close()
	src := Requests(workload.Synthetic{Input: workload.Lengths{Mean: 16}, Output: workload.Lengths{Mean: 8}, Seed: 1},
		Mix{MaxTokens1: 0.2, Oversize: 0.2, MaxContext: 512}, 4)
	sink := &collect{}
	runLoad(t, newClient(t, hs.URL, 10*time.Second), src, sink, 200, 8)
	by := map[string]map[record.ErrorKind]int{}
	for _, r := range sink.out {
		if by[r.intent] == nil {
			by[r.intent] = map[record.ErrorKind]int{}
		}
		by[r.intent][r.err]++
	}
	t.Logf("outcomes by intent: %v", by)
	if len(by[IntentOversize]) != 1 || by[IntentOversize][record.HTTPStatus(400)] == 0 {
		t.Errorf("oversize: %v, want all http_400", by[IntentOversize])
	}
	if len(by[IntentMaxTokens1]) != 1 || by[IntentMaxTokens1][record.OK] == 0 {
		t.Errorf("max_tokens_1: %v, want all ok", by[IntentMaxTokens1])
	}
	if len(by[""]) != 1 || by[""][record.OK] == 0 {
		t.Errorf("plain: %v, want all ok", by[""])
	}
}
