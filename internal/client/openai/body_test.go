package openai

import (
	"encoding/json"
	"testing"

	"github.com/spate-dev/spate/internal/workload"
)

// marshalerBody is chatBody as it was when messages went through
// workload.Message.MarshalJSON: the reference every body must match byte
// for byte.
type marshalerBody struct {
	Model         string             `json:"model"`
	Messages      []workload.Message `json:"messages,omitempty"`
	Prompt        *string            `json:"prompt,omitempty"`
	Input         *string            `json:"input,omitempty"`
	MaxTokens     int                `json:"max_tokens,omitempty"`
	Stream        bool               `json:"stream,omitempty"`
	StreamOptions *streamOptions     `json:"stream_options,omitempty"`
	IgnoreEOS     bool               `json:"ignore_eos,omitempty"`
	Tools         json.RawMessage    `json:"tools,omitempty"`
	User          string             `json:"user,omitempty"`
	Temperature   *float64           `json:"temperature,omitempty"`
	TopP          *float64           `json:"top_p,omitempty"`
	Logprobs      any                `json:"logprobs,omitempty"`
	TopLogprobs   *int               `json:"top_logprobs,omitempty"`
}

// referenceBody is the chat body of req as the Marshaler path wrote it.
func referenceBody(t testing.TB, req *workload.Request) []byte {
	t.Helper()
	ms := req.Messages
	if len(ms) == 0 {
		ms = []workload.Message{{Role: "user", Content: req.Prompt}}
	}
	b, err := json.Marshal(marshalerBody{Model: "m1", Messages: ms, MaxTokens: req.MaxTokens, Stream: true,
		StreamOptions: &streamOptions{IncludeUsage: true}, Tools: req.Tools, User: req.Session,
		Temperature: req.Temperature, TopP: req.TopP})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestChatBodyMatchesMarshaler holds the chat body to the bytes the
// Marshaler path sent: escapes (HTML, U+2028, control characters), invalid
// UTF-8 and multimodal parts alike.
func TestChatBodyMatchesMarshaler(t *testing.T) {
	c := newClient(t, "http://127.0.0.1:1", nil)
	temp := 0.5
	for _, req := range []workload.Request{
		{Prompt: "hello world", MaxTokens: 128},
		{Prompt: `<a href="x">&</a> "quoted" \back\slash` + "\u2028\u2029\t\n\x01\x7f é 日本", MaxTokens: 8},
		{Prompt: "bad utf-8 \xff\xfe end", Temperature: &temp},
		{Prompt: ""},
		{Messages: []workload.Message{{Role: "system", Content: "be brief <b>"}, {Role: "user", Content: "hi\n"}}, Session: "s1"},
		{Messages: []workload.Message{{Role: "user", Content: "a"}, {Role: "user", Parts: []workload.Part{{Type: "text", Text: "what?"},
			{Type: "image_url", ImageURL: "data:image/png;base64,AA=="}, {Type: "input_audio", AudioData: "UklG", AudioFormat: "wav"}}}}},
		{Messages: []workload.Message{}, Prompt: "empty messages"},
	} {
		got, err := c.Body(&req)
		if err != nil {
			t.Fatal(err)
		}
		if want := referenceBody(t, &req); string(got) != string(want) {
			t.Errorf("body\n%s\nwant\n%s", got, want)
		}
	}
}

// FuzzChatBodyMatchesMarshaler holds any text message to the Marshaler
// path's bytes.
func FuzzChatBodyMatchesMarshaler(f *testing.F) {
	f.Add("user", "hello <b>&\u2028\xff")
	f.Add("system", "")
	// No reactor: Body does not need one, and the fuzzer runs it often.
	c, err := New(Config{BaseURL: "http://127.0.0.1:1/v1", API: Chat, Model: "m1", Stream: true, NetHTTP: true})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, role, content string) {
		for _, req := range []workload.Request{
			{Prompt: content},
			{Messages: []workload.Message{{Role: role, Content: content}, {Role: "user", Content: role}}},
		} {
			got, err := c.Body(&req)
			if err != nil {
				t.Fatal(err)
			}
			if want := referenceBody(t, &req); string(got) != string(want) {
				t.Fatalf("body\n%q\nwant\n%q", got, want)
			}
		}
	})
}
