package observe

import (
	"strings"
	"testing"
)

func TestParseTextVLLMNames(t *testing.T) {
	f, err := ParseText(strings.NewReader(`# HELP vllm:num_requests_running Number of requests.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{model_name="m"} 3
# TYPE vllm:prompt_tokens_total counter
vllm:prompt_tokens_total{model_name="m"} 1024
`))
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := gauge(f, MustSelector(`vllm:num_requests_running{model_name="m"}`), sumOf); !ok || v != 3 {
		t.Errorf("running = %v, %v; want 3", v, ok)
	}
	if _, ok := gauge(f, MustSelector(`vllm:num_requests_running{model_name="other"}`), sumOf); ok {
		t.Error("a selector with another label value matched")
	}
}

func TestParseTextMalformed(t *testing.T) {
	for _, in := range []string{
		"<html>not found</html>\n",
		"x{a=\"1\" 3\n",
		"# TYPE x counter\nx abc\n",
	} {
		if _, err := ParseText(strings.NewReader(in)); err == nil {
			t.Errorf("ParseText(%q): no error", in)
		}
	}
}

func FuzzParseText(f *testing.F) {
	f.Add("# TYPE a counter\na_total 1\n")
	f.Add("# TYPE h histogram\nh_bucket{le=\"1\"} 1\nh_bucket{le=\"+Inf\"} 2\nh_sum 3\nh_count 2\n")
	f.Add("vllm:x{model_name=\"m\"} 1\n")
	f.Fuzz(func(t *testing.T, s string) {
		fams, err := ParseText(strings.NewReader(s))
		if err != nil {
			return
		}
		// Whatever parses can be computed on without panicking.
		sc := []Scrape{{0, fams}, {1, fams}}
		var sels []Selector
		for name := range fams {
			sels = append(sels, Selector{Name: name})
		}
		Compute(sc, sels)
	})
}
