package sim

import (
	"encoding/json"
	"testing"
	"time"
)

// TestRerankAndScore serves the rerank and score shapes: rerank results
// sorted by relevance with the most relevant document first, top_n
// honoured, usage counting the query once per document; score data in
// document order, under every field pairing.
func TestRerankAndScore(t *testing.T) {
	_, url := startServer(t, Deterministic(20*time.Millisecond, 0, 1))
	c := newClient(1)
	body := `{"model":"m","query":"capital of France","documents":["Horses and cows are animals","The capital of France is Paris","Brasilia is the capital of Brazil"],"top_n":2}`
	start := time.Now()
	status, _, b := post(t, c, url+"/v1/rerank", body)
	took := time.Since(start)
	if status != 200 {
		t.Fatalf("status %d: %s", status, b)
	}
	if took < 20*time.Millisecond {
		t.Errorf("answered in %v, before the 20 ms TTFT", took)
	}
	var rr rerankResponse
	if err := json.Unmarshal(b, &rr); err != nil {
		t.Fatal(err)
	}
	if len(rr.Results) != 2 || rr.Results[0].Index != 1 || rr.Results[0].RelevanceScore < rr.Results[1].RelevanceScore || rr.Results[0].Document == nil {
		t.Fatalf("results %+v", rr.Results)
	}
	want := 3*countTokens("capital of France") + countTokens("Horses and cows are animals") + countTokens("The capital of France is Paris") + countTokens("Brasilia is the capital of Brazil")
	if rr.Usage.TotalTokens != want || rr.Usage.PromptTokens != want {
		t.Errorf("usage %+v, want %d tokens", rr.Usage, want)
	}
	for _, body := range []string{
		`{"text_1":"capital of France","text_2":["Horses","The capital of France is Paris"]}`,
		`{"queries":"capital of France","documents":["Horses","The capital of France is Paris"]}`,
		`{"queries":"capital of France","items":["Horses","The capital of France is Paris"]}`,
		`{"data_1":["capital of France","capital of France"],"data_2":["Horses","The capital of France is Paris"]}`,
	} {
		status, _, b := post(t, c, url+"/v1/score", body)
		if status != 200 {
			t.Fatalf("%s: status %d: %s", body, status, b)
		}
		var sr scoreResponse
		if err := json.Unmarshal(b, &sr); err != nil {
			t.Fatal(err)
		}
		if len(sr.Data) != 2 || sr.Data[0].Index != 0 || sr.Data[1].Score <= sr.Data[0].Score {
			t.Errorf("%s: data %+v", body, sr.Data)
		}
	}
	for _, bad := range []string{`{"query":"q"}`, `{"documents":["a"]}`, `{"query":["a","b"],"documents":["a","b"]}`, `{"query":"q","documents":["a"],"top_n":-1}`} {
		if status, _, b := post(t, c, url+"/v1/rerank", bad); status != 400 {
			t.Errorf("%s: status %d, want 400: %s", bad, status, b)
		}
	}
}

// FuzzParseRankRequest feeds the rerank and score parser arbitrary bodies:
// it must not panic, and what it accepts has 1 to 1,000 pairs.
func FuzzParseRankRequest(f *testing.F) {
	f.Add([]byte(`{"query":"q","documents":["a",{"text":"b"}],"top_n":1}`), false)
	f.Add([]byte(`{"text_1":["a","b"],"text_2":["c","d"]}`), true)
	f.Fuzz(func(t *testing.T, b []byte, score bool) {
		_, pairs, topN, _, aerr := parseRankRequest(b, score)
		if aerr == nil && (len(pairs) == 0 || len(pairs) > maxRankDocuments || topN < 1 || topN > len(pairs)) {
			t.Fatalf("%d pairs, top_n %d", len(pairs), topN)
		}
	})
}
