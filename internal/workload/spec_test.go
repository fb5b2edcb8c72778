package workload

import (
	"fmt"
	"github.com/spate-dev/spate/experiment"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/gonum/stat/distuv"

	"github.com/spate-dev/spate/internal/workload/tokenizer"
)

// TestLengthDistributions draws 20,000 lengths of each kind: the sample
// mean is within 2 % of the distribution's (the bound), and the
// spread is right too.
func TestLengthDistributions(t *testing.T) {
	dir := t.TempDir()
	emp := filepath.Join(dir, "lengths.txt")
	if err := os.WriteFile(emp, []byte("# lengths seen\n100\n200\n\n600\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		spec     string
		mean, sd float64
	}{
		{"512", 512, 0},
		{"512:64", 512, 64},
		{"normal:300:30", 300, 30},
		{"uniform:100:900", 500, math.Sqrt((801*801 - 1) / 12.0)},
		{"lognormal:512:256", 512, 256},
		{"choice:4096@0.5,16384@0.3,65536@0.2", 0.5*4096 + 0.3*16384 + 0.2*65536, math.Sqrt(0.5*4096*4096 + 0.3*16384*16384 + 0.2*65536*65536 - math.Pow(0.5*4096+0.3*16384+0.2*65536, 2))},
		{"empirical:" + emp, 300, math.Sqrt((200*200 + 100*100 + 300*300) / 3.0)},
	} {
		l, err := ParseLengths(tc.spec)
		if err != nil {
			t.Fatalf("%s: %v", tc.spec, err)
		}
		if math.Abs(l.Mean-tc.mean) > 1e-9*tc.mean {
			t.Errorf("%s: Mean %v, want %v", tc.spec, l.Mean, tc.mean)
		}
		r := newRand(7, 0)
		xs := make([]float64, 20000)
		for i := range xs {
			xs[i] = float64(l.Sample(r))
		}
		m, sd := stat.MeanStdDev(xs, nil)
		if math.Abs(m-tc.mean) > 0.02*tc.mean {
			t.Errorf("%s: sample mean %.1f, want %.1f ± 2%%", tc.spec, m, tc.mean)
		}
		if math.Abs(sd-tc.sd) > 0.05*tc.sd+1 {
			t.Errorf("%s: sample sd %.1f, want %.1f ± 5%%", tc.spec, sd, tc.sd)
		}
	}
	for _, bad := range []string{"", "x", "-5", "uniform:9:1", "lognormal:0:1", "lognormal:5", "choice:4096", "choice:1@0", "empirical:/nonexistent", "gauss:1:2"} {
		if _, err := ParseLengths(bad); err == nil {
			t.Errorf("ParseLengths(%q) accepted", bad)
		}
	}
}

// TestPromptTokensExact checks synthetic prompts, with and without shared
// prefixes, tokenize to the asked length within ±1 (cl100k).
func TestPromptTokensExact(t *testing.T) {
	tok, err := tokenizer.CL100K()
	if err != nil {
		t.Fatal(err)
	}
	prefix := &experiment.SharedPrefix{Groups: 3, Tokens: 40, Ratio: 0.7}
	for _, s := range []Synthetic{
		{Input: mustLengths(t, "uniform:5:300"), Seed: 1},
		{Input: mustLengths(t, "uniform:5:300"), Seed: 2, Prefix: prefix},
	} {
		for n := uint64(0); n < 200; n++ {
			r, _ := s.Request(n)
			got := tok.Count(r.Prompt)
			if d := got - r.InputTokens; d < -1 || d > 1 {
				t.Fatalf("request %d: asked %d tokens, got %d: %q", n, r.InputTokens, got, r.Prompt)
			}
		}
	}
}

func mustLengths(t *testing.T, s string) Lengths {
	t.Helper()
	l, err := ParseLengths(s)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// TestSharedPrefix checks the share of requests that start with a group
// prefix, and that a group's prefix is the same in every request.
func TestSharedPrefix(t *testing.T) {
	p := &experiment.SharedPrefix{Groups: 4, Tokens: 50, Ratio: 0.6}
	s := Synthetic{Input: mustLengths(t, "200"), Seed: 5, Prefix: p}
	const n = 5000
	shared := 0
	for i := uint64(0); i < n; i++ {
		r, _ := s.Request(i)
		g := r.Labels[0].Value
		if g == "none" {
			continue
		}
		shared++
		var k int
		fmt.Sscanf(g, "g%d", &k)
		if !strings.HasPrefix(r.Prompt, PrefixText(5, k, 50)) {
			t.Fatalf("request %d in group %s does not start with its prefix", i, g)
		}
	}
	if got := float64(shared) / n; math.Abs(got-0.6) > 0.03 {
		t.Fatalf("shared share %.3f, want 0.6 ± 0.03", got)
	}
}

// TestIntentWeights checks the intent mixture with a chi-square test at
// α = 0.001 (a fixed seed, so it is deterministic), and that each intent
// keeps its own lengths and checks.
func TestIntentWeights(t *testing.T) {
	spec := experiment.Workload{Intents: []experiment.Intent{
		{Name: "fact_lookup", Weight: 0.6, InputTokens: "50", Checks: []experiment.Check{{Kind: "contains", Value: "x"}}},
		{Name: "comparison", Weight: 0.3, InputTokens: "200", Prompts: []string{"Compare A and B."}},
		{Name: "multi_hop", Weight: 0.1, OutputTokens: "777"},
	}}
	b, err := Build(spec, BuildOptions{Seed: 11})
	if err != nil {
		t.Fatal(err)
	}
	const n = 20000
	counts := map[string]float64{}
	for i := uint64(0); i < n; i++ {
		r, err := b.Source.Request(i)
		if err != nil {
			t.Fatal(err)
		}
		counts[r.Intent]++
		switch r.Intent {
		case "fact_lookup":
			if r.InputTokens != 50 || r.Checks == nil || !r.KeepAnswer {
				t.Fatalf("fact_lookup request %+v", r)
			}
		case "comparison":
			if !strings.HasSuffix(r.Prompt, "Compare A and B.") || r.Checks != nil {
				t.Fatalf("comparison request %q", r.Prompt)
			}
		case "multi_hop":
			if r.MaxTokens != 777 {
				t.Fatalf("multi_hop max_tokens %d", r.MaxTokens)
			}
		}
	}
	var chi2 float64
	for name, w := range map[string]float64{"fact_lookup": 0.6, "comparison": 0.3, "multi_hop": 0.1} {
		e := w * n
		chi2 += (counts[name] - e) * (counts[name] - e) / e
	}
	crit := distuv.ChiSquared{K: 2}.Quantile(0.999)
	if chi2 > crit {
		t.Fatalf("chi-square %.2f > %.2f: counts %v", chi2, crit, counts)
	}
	// The test can fail: a skewed mixture is rejected.
	skew := 0.0
	for name, w := range map[string]float64{"fact_lookup": 0.5, "comparison": 0.4, "multi_hop": 0.1} {
		e := w * n
		skew += (counts[name] - e) * (counts[name] - e) / e
	}
	if skew < crit {
		t.Fatalf("a 0.5/0.4/0.1 expectation was not rejected (chi-square %.1f)", skew)
	}
}

// TestZipfExponent recovers the Zipf exponent from the rank-frequency of
// reused prompts by least squares on log-log.
func TestZipfExponent(t *testing.T) {
	p := experiment.Popularity{Zipf: 1.2, Pool: 1000}
	// Each pool entry's prompt is its index: 200,000 synthetic prompts
	// took a second under -race and add nothing to the exponent.
	pool := SourceFunc{Sha256: "pool", F: func(k uint64) (*Request, error) {
		return &Request{Prompt: fmt.Sprint(k)}, nil
	}}
	src, err := withPopularity(pool, p, 3)
	if err != nil {
		t.Fatal(err)
	}
	freq := map[string]int{}
	const n = 200000
	for i := uint64(0); i < n; i++ {
		r, _ := src.Request(i)
		freq[r.Prompt]++
	}
	var f []float64
	for _, c := range freq {
		f = append(f, float64(c))
	}
	sort.Sort(sort.Reverse(sort.Float64Slice(f)))
	// Fit the top 50 ranks (where counts are large enough to be stable).
	var xs, ys []float64
	for i := 0; i < 50; i++ {
		xs = append(xs, math.Log(float64(i+1)))
		ys = append(ys, math.Log(f[i]))
	}
	_, slope := stat.LinearRegression(xs, ys, nil, false)
	if math.Abs(-slope-1.2) > 0.06 {
		t.Fatalf("recovered exponent %.3f, want 1.2 ± 0.06", -slope)
	}
}

// TestHotKeys checks a burst sends every request to one of the hot keys.
func TestHotKeys(t *testing.T) {
	p := experiment.Popularity{Zipf: 1.5, Pool: 500, Hot: &experiment.Hot{Every: 100, Length: 10, Keys: 2}}
	for n := uint64(0); n < 1000; n++ {
		k := PopularKey(p, 1, n)
		if n%100 < 10 && k >= 2 {
			t.Fatalf("request %d in a burst got key %d, want 0 or 1", n, k)
		}
	}
}

// TestTurns checks conversations: turn counts from their distribution, a
// session per conversation, think times, the first turn from the source.
func TestTurns(t *testing.T) {
	b, err := Build(experiment.Workload{InputTokens: "30", OutputTokens: "10", Turns: &experiment.Turns{Count: "uniform:2:4", TurnTokens: "8", Think: 500 * time.Millisecond}}, BuildOptions{Seed: 4})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	for n := uint64(0); n < 200; n++ {
		r, _ := b.Source.Request(n)
		seen[len(r.Turns)] = true
		if r.Session == "" || r.Turns[0].InputTokens != 30 || r.Turns[0].Think != 0 || r.Turns[1].Think != 500*time.Millisecond || r.Turns[1].InputTokens != 8 || r.Turns[1].MaxTokens != 10 {
			t.Fatalf("conversation %d: %+v", n, r)
		}
	}
	if !seen[2] || !seen[3] || !seen[4] || len(seen) != 3 {
		t.Fatalf("turn counts seen %v, want 2, 3 and 4", seen)
	}
}

// TestSameSeedSameWorkload checks a spec with everything gives the same
// requests and digest for the same seed, and different ones for another.
func TestSameSeedSameWorkload(t *testing.T) {
	spec := experiment.Workload{
		InputTokens: "lognormal:100:30", OutputTokens: "uniform:10:50",
		SystemPrompt: &experiment.Text{Tokens: 20}, SharedPrefix: &experiment.SharedPrefix{Groups: 2, Tokens: 10, Ratio: 0.5},
		Intents:    []experiment.Intent{{Name: "a", Weight: 1}, {Name: "b", Weight: 2, Prompts: []string{"q1", "q2"}, InputTokens: "40"}},
		Popularity: &experiment.Popularity{Zipf: 1.1, Pool: 50},
		Turns:      &experiment.Turns{Count: "2"},
		Images:     &experiment.Images{Count: 1, Width: 8, Height: 8},
	}
	build := func(seed uint64) Built {
		b, err := Build(spec, BuildOptions{Seed: seed})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	a, b, c := build(1), build(1), build(2)
	if a.Source.Digest() != b.Source.Digest() || a.Source.Digest() == c.Source.Digest() {
		t.Fatal("digests do not follow the seed")
	}
	for n := uint64(0); n < 50; n++ {
		ra, _ := a.Source.Request(n)
		rb, _ := b.Source.Request(n)
		if !reflect.DeepEqual(ra, rb) {
			t.Fatalf("request %d differs between two builds with one seed", n)
		}
	}
}

// TestImagesAndNormalisedTokens checks images go into the user message as
// parts and count their patches at the configured weight.
func TestImagesAndNormalisedTokens(t *testing.T) {
	b, err := Build(experiment.Workload{InputTokens: "100", Images: &experiment.Images{Count: 2, Width: 1024, Height: 600}, Weights: &experiment.Weights{ImagePatch: 50}}, BuildOptions{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	r, _ := b.Source.Request(0)
	if len(r.Messages) != 1 || len(r.Messages[0].Parts) != 3 || r.Messages[0].Parts[1].Type != "image_url" || !strings.HasPrefix(r.Messages[0].Parts[1].ImageURL, "data:image/png;base64,") {
		t.Fatalf("messages %+v", r.Messages)
	}
	// Every image is resized to 224×224: 256 ViT-L/14 patches; two images, weight 50.
	if want := 100.0 + 2*256*50; r.NormTokens != want {
		t.Fatalf("normalised tokens %v, want %v", r.NormTokens, want)
	}
}

// TestPatches counts a 1024×600 image in each mode, and the seed's 224×224.
func TestPatches(t *testing.T) {
	for _, tc := range []struct {
		w, h int
		wt   experiment.Weights
		want int
	}{
		{224, 224, DefaultWeights, 256},  // the seed: 224² → 256 patches
		{1024, 600, DefaultWeights, 256}, // resize: any image is one input
		{1024, 600, experiment.Weights{PatchPixels: 14, ImagePixels: 224, ImageMode: "tile"}, 5 * 3 * 256},
		{1024, 600, experiment.Weights{PatchPixels: 14, ImagePixels: 224, ImageMode: "native"}, 74 * 43},
		{336, 336, experiment.Weights{PatchPixels: 14, ImagePixels: 336, ImageMode: "resize"}, 576}, // ViT-L/14@336
		{100, 100, experiment.Weights{PatchPixels: 16, ImagePixels: 224, ImageMode: "resize"}, 196},
	} {
		if got := Patches(tc.w, tc.h, tc.wt); got != tc.want {
			t.Errorf("%d×%d %+v: %d patches, want %d", tc.w, tc.h, tc.wt, got, tc.want)
		}
	}
	for _, bad := range []experiment.Weights{{ImageMode: "crop"}, {PatchPixels: 300}} {
		if _, err := Build(experiment.Workload{Weights: &bad}, BuildOptions{Seed: 1}); err == nil {
			t.Errorf("weights %+v accepted", bad)
		}
	}
}

func TestComplexity(t *testing.T) {
	plain := &Request{Prompt: "hi", InputTokens: 1}
	long := &Request{Prompt: "x", InputTokens: 32768, MaxTokens: 8192, Tools: []byte(`[{},{},{},{},{},{}]`),
		Turns: make([]Turn, 10)}
	long.Turns[0].Prompt = "```go\nfunc f() { m := map[string]any{\"a\": [1, {\"b\": (2)}]} }\n```"
	if s := Complexity(plain); s > 2 {
		t.Errorf("a one-token prompt scores %.1f, want near 0", s)
	}
	if s := Complexity(long); s != 100 {
		t.Errorf("the most complex request scores %.1f, want 100", s)
	}
	if f := ShapeFactor(40); math.Abs(f-0.5625) > 1e-12 {
		t.Errorf("ShapeFactor(40) = %v, want 0.75² = 0.5625", f)
	}
}

// BenchmarkSpecRequest measures making one request of a full semantic
// workload (intents, shared prefix, system prompt, complexity).
func BenchmarkSpecRequest(b *testing.B) {
	spec := experiment.Workload{
		SystemPrompt: &experiment.Text{Text: "You are terse."}, SharedPrefix: &experiment.SharedPrefix{Groups: 4, Tokens: 128, Ratio: 0.8},
		Intents: []experiment.Intent{
			{Name: "a", Weight: 0.6, InputTokens: "uniform:200:400", Prompts: []string{"q?"}},
			{Name: "b", Weight: 0.4, InputTokens: "choice:1024@0.5,4096@0.5"},
		},
	}
	built, err := Build(spec, BuildOptions{Seed: 1})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := built.Source.Request(uint64(i)); err != nil {
			b.Fatal(err)
		}
	}
}

// TestTemplatesInPrompts: intent prompts and the system prompt are filled
// per request; a dataset prompt template is filled before it goes into the
// messages a system prompt makes; bad templates name where they are.
func TestTemplatesInPrompts(t *testing.T) {
	seed := uint64(3)
	b, err := Build(experiment.Workload{
		Seed:         &seed,
		SystemPrompt: &experiment.Text{Text: `Be {{.Choice "brief" "kind"}}.`},
		Intents:      []experiment.Intent{{Name: "geo", Weight: 1, Prompts: []string{`Capital of {{.Choice "France" "Spain" "Italy"}}?`, "plain"}}},
	}, BuildOptions{})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for n := uint64(0); n < 40; n++ {
		r, err := b.Source.Request(n)
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Messages) != 2 || strings.Contains(r.Messages[0].Content+r.Messages[1].Content, "{{") {
			t.Fatalf("request %d: messages %+v", n, r.Messages)
		}
		seen[r.Messages[0].Content+" | "+r.Messages[1].Content] = true
		again, _ := b.Source.Request(n)
		if again.Messages[1].Content != r.Messages[1].Content || again.Messages[0].Content != r.Messages[0].Content {
			t.Fatalf("request %d differs when asked twice", n)
		}
	}
	if len(seen) < 5 {
		t.Errorf("%d distinct requests in 40, want the choices drawn per request: %v", len(seen), seen)
	}

	dir := t.TempDir()
	ds := filepath.Join(dir, "d.jsonl")
	os.WriteFile(ds, []byte(`{"prompt": "Hello {{.Vars.who}}", "vars": {"who": "Ann"}}`+"\n"), 0o644)
	b, err = Build(experiment.Workload{Seed: &seed, Dataset: ds, SystemPrompt: &experiment.Text{Text: "sys"}}, BuildOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r, _ := WithTemplates(b.Source, seed).Request(0)
	if len(r.Messages) != 2 || r.Messages[1].Content != "Hello Ann" {
		t.Errorf("dataset template with a system prompt: messages %+v, want the user message filled", r.Messages)
	}

	for _, w := range []experiment.Workload{
		{Intents: []experiment.Intent{{Name: "bad", Weight: 1, Prompts: []string{"ok", "{{.Choice"}}}},
		{SystemPrompt: &experiment.Text{Text: "{{.Nope"}},
	} {
		_, err := Build(w, BuildOptions{})
		if err == nil || !(strings.Contains(err.Error(), "intents[0] (bad) prompts[1]") || strings.Contains(err.Error(), "systemPrompt.text")) {
			t.Errorf("bad template: error %v, want it to name where", err)
		}
	}
}

// TestNormalisedTokensCountEachTextOnce: a system prompt is counted once,
// with the prompt once: a text-only workload whose lengths are known has
// normalised input tokens equal to its input tokens; one whose lengths are
// estimated counts the text it sends, not the prompt twice.
func TestNormalisedTokensCountEachTextOnce(t *testing.T) {
	tok, err := tokenizer.Load("cl100k_base")
	if err != nil {
		t.Fatal(err)
	}
	sys := "You are a helpful assistant who answers briefly."
	for _, tc := range []struct {
		name    string
		spec    experiment.Workload
		input   int     // want InputTokens
		norm    float64 // want NormTokens
		dataset string
	}{
		{"synthetic, generated system prompt", experiment.Workload{InputTokens: "100", SystemPrompt: &experiment.Text{Tokens: 20}}, 120, 120, ""},
		{"synthetic, system prompt text", experiment.Workload{InputTokens: "100", SystemPrompt: &experiment.Text{Text: sys}}, 100 + tok.Count(sys), float64(100 + tok.Count(sys)), ""},
		{"synthetic, no system prompt", experiment.Workload{InputTokens: "100"}, 100, 100, ""},
		// 400 characters of prompt and the system prompt, at 4 a token.
		{"dataset, estimated", experiment.Workload{SystemPrompt: &experiment.Text{Text: sys}}, 0, math.Ceil(float64(400+len(sys)) / 4), strings.Repeat("word ", 80)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := tc.spec
			if tc.dataset != "" {
				path := filepath.Join(t.TempDir(), "d.jsonl")
				if err := os.WriteFile(path, []byte(`{"prompt": "`+tc.dataset+`"}`+"\n"), 0o644); err != nil {
					t.Fatal(err)
				}
				spec.Dataset = path
			}
			b, err := Build(spec, BuildOptions{Seed: 1, Tokenizer: tok})
			if err != nil {
				t.Fatal(err)
			}
			r, err := b.Source.Request(0)
			if err != nil {
				t.Fatal(err)
			}
			if r.InputTokens != tc.input || r.NormTokens != tc.norm {
				t.Fatalf("input tokens %d, normalised %v; want %d and %v", r.InputTokens, r.NormTokens, tc.input, tc.norm)
			}
			if tc.dataset == "" {
				// What is sent has the tokens counted: one cl100k count.
				var text strings.Builder
				for _, m := range r.Messages {
					text.WriteString(m.Text())
				}
				if len(r.Messages) == 0 {
					text.WriteString(r.Prompt)
				}
				if got := tok.Count(text.String()); got < tc.input-1 || got > tc.input+1 {
					t.Errorf("the messages sent count %d tokens, the request says %d", got, tc.input)
				}
			}
		})
	}
}

// TestNesting holds nesting to a walk of every byte (the depth structure
// scored before nesting skipped texts with fewer than two brackets), up to
// the depth that still scores.
func TestNesting(t *testing.T) {
	walk := func(s string) int {
		depth, deepest := 0, 0
		for i := 0; i < len(s); i++ {
			switch s[i] {
			case '{', '[', '(':
				depth++
				deepest = max(deepest, depth)
			case '}', ']', ')':
				depth = max(depth-1, 0)
			}
		}
		return min(deepest, maxScoredDepth)
	}
	cases := []string{"", "plain words", "(", ")", "a ( b", "} {", "([{", "({[]})", "(((((((", "()()()", "a) (b", "{\"k\": [1, {\"x\": (2)}]}"}
	rng := rand.New(rand.NewPCG(1, 2))
	const alphabet = "ab {}[]()"
	for range 2000 {
		b := make([]byte, rng.IntN(40))
		for i := range b {
			b[i] = alphabet[rng.IntN(len(alphabet))]
		}
		cases = append(cases, string(b))
	}
	for _, s := range cases {
		if got, want := nesting(s), walk(s); got != want {
			t.Fatalf("nesting(%q) = %d, want %d", s, got, want)
		}
	}
}
