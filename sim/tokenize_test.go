package sim

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestTokenize: /tokenize answers in the shape it was asked in, with as
// many ids as the simulator's own count gives the text, the same word the
// same ids wherever it stands.
func TestTokenize(t *testing.T) {
	s, err := New(Deterministic(0, 0, 0))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	hs := httptest.NewServer(s)
	defer hs.Close()
	const text = "time river 12345 the river, again!\n"
	post := func(body string) (int, map[string]any) {
		resp, err := http.Post(hs.URL+"/tokenize", "application/json", bytes.NewReader([]byte(body)))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var m map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&m)
		return resp.StatusCode, m
	}
	code, llama := post(`{"content":` + quote(text) + `}`)
	ids, _ := llama["tokens"].([]any)
	if code != 200 || len(ids) != countTokens(text) || len(llama) != 1 {
		t.Fatalf("llama.cpp shape: %d %v, want %d ids", code, llama, countTokens(text))
	}
	// "river" is the 2nd and the 5th token (12345 is two).
	if ids[1] != ids[5] || ids[0] == ids[1] {
		t.Errorf("ids %v: the same word should have the same id", ids)
	}
	code, vllm := post(`{"model":"m","prompt":` + quote(text) + `}`)
	if code != 200 || vllm["count"] != float64(len(ids)) || len(vllm["tokens"].([]any)) != len(ids) {
		t.Errorf("vLLM shape: %d %v", code, vllm)
	}
	if code, _ := post(`{"text":"x"}`); code != 400 {
		t.Errorf("no text: %d, want 400", code)
	}
	if resp, err := http.Get(hs.URL + "/tokenize"); err != nil || resp.StatusCode != 405 {
		t.Errorf("GET: %v %v", resp, err)
	}
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
