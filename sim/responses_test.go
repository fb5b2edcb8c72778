package sim

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestResponsesStream serves a streamed Responses API request: the events
// come in the documented order, the text deltas at the chat stream's times
// (TTFT 30 ms, then every 10 ms), and the last event carries the usage
// (response.incomplete: the answer ran to max_output_tokens).
func TestResponsesStream(t *testing.T) {
	_, url := startServer(t, Deterministic(30*time.Millisecond, 10*time.Millisecond, 0))
	body := `{"model":"m","instructions":"be brief","input":[{"role":"user","content":[{"type":"input_text","text":"hello there"}]}],"max_output_tokens":5,"stream":true}`
	start := time.Now()
	resp, err := http.Post(url+"/v1/responses", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("status %d, content type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	var types []string
	var deltas []time.Duration
	var last map[string]any
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Bytes()
		if !bytes.HasPrefix(line, []byte("data: ")) {
			continue
		}
		var ev map[string]any
		if err := json.Unmarshal(line[6:], &ev); err != nil {
			t.Fatal(err)
		}
		typ, _ := ev["type"].(string)
		types = append(types, typ)
		if typ == "response.output_text.delta" {
			deltas = append(deltas, time.Since(start))
		}
		last = ev
	}
	want := "response.created response.in_progress response.output_item.added response.content_part.added " +
		strings.Repeat("response.output_text.delta ", 5) + "response.output_text.done response.content_part.done response.output_item.done response.incomplete"
	if got := strings.Join(types, " "); got != want {
		t.Fatalf("events\n%s\nwant\n%s", got, want)
	}
	// Token k is due 30 + 10·k ms after the request came (the pacer's
	// schedule is absolute, rounded up to its tick): none may come
	// sooner after it was sent. Not how much later: a busy machine's
	// stall delays some, and the rest then come at once on schedule.
	for k, d := range deltas {
		if due := 30*time.Millisecond + time.Duration(k)*10*time.Millisecond; d < due {
			t.Errorf("delta %d came %v after the request, before its due time %v (all at %v)", k, d, due, deltas)
		}
	}
	u := last["response"].(map[string]any)["usage"].(map[string]any)
	if u["output_tokens"] != float64(5) || u["input_tokens"].(float64) < 3 {
		t.Errorf("usage %v", u)
	}
}

// TestResponsesWhole serves a non-streamed request and rejects a bad one.
func TestResponsesWhole(t *testing.T) {
	_, url := startServer(t, Deterministic(0, 0, 0))
	c := newClient(1)
	status, _, b := post(t, c, url+"/v1/responses", `{"model":"m","input":"hi","max_output_tokens":3}`)
	if status != 200 {
		t.Fatalf("status %d: %s", status, b)
	}
	var r struct {
		Object, Status string
		Output         []struct {
			Type    string
			Content []struct{ Type, Text string }
		}
		Usage struct {
			OutputTokens int `json:"output_tokens"`
		}
	}
	if err := json.Unmarshal(b, &r); err != nil || r.Object != "response" || len(r.Output) != 1 || r.Output[0].Content[0].Text == "" || r.Usage.OutputTokens != 3 {
		t.Fatalf("%s (%v)", b, err)
	}
	if status, _, b := post(t, c, url+"/v1/responses", `{"model":"m"}`); status != 400 {
		t.Errorf("no input: status %d: %s", status, b)
	}
}

// FuzzResponsesToChat feeds the request translator arbitrary bodies: it
// must not panic, and what it accepts is a chat request with messages.
func FuzzResponsesToChat(f *testing.F) {
	f.Add([]byte(`{"input":"hi","stream":true}`))
	f.Add([]byte(`{"instructions":"x","input":[{"role":"user","content":[{"type":"input_text","text":"a"},{"type":"input_image","image_url":"data:,"}]}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		out, _, aerr := responsesToChat(b)
		if aerr != nil {
			return
		}
		var chat struct {
			Messages []json.RawMessage `json:"messages"`
		}
		if err := json.Unmarshal(out, &chat); err != nil || len(chat.Messages) == 0 {
			t.Fatalf("%s → %s (%v)", b, out, err)
		}
	})
}
