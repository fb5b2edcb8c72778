package openai

import (
	"encoding/json"
	"testing"

	"github.com/spate-dev/spate/internal/workload"
)

// TestBodySampling checks that a request's temperature, top_p and model
// (an intent's LoRA adapter) go into the body, and are left out unset.
func TestBodySampling(t *testing.T) {
	c, err := New(Config{BaseURL: "http://127.0.0.1:1/v1", API: Chat, Model: "base"})
	if err != nil {
		t.Fatal(err)
	}
	temp, topP := 0.55, 0.9
	for _, tc := range []struct {
		req  workload.Request
		want map[string]any
	}{
		{workload.Request{Prompt: "hi", Temperature: &temp, TopP: &topP, Model: "base:sql"}, map[string]any{"temperature": 0.55, "top_p": 0.9, "model": "base:sql"}},
		{workload.Request{Prompt: "hi"}, map[string]any{"model": "base"}},
	} {
		b, err := c.Body(&tc.req)
		if err != nil {
			t.Fatal(err)
		}
		var got map[string]any
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatal(err)
		}
		for k, v := range tc.want {
			if got[k] != v {
				t.Errorf("%s = %v, want %v (body %s)", k, got[k], v, b)
			}
		}
		if tc.req.Temperature == nil {
			if _, ok := got["temperature"]; ok {
				t.Errorf("temperature sent unset: %s", b)
			}
		}
	}
}
