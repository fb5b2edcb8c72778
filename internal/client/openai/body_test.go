package openai

import (
	"encoding/json"
	"reflect"
	"strings"
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

// referenceBody is the body of req as json.Marshal and the Marshaler
// path wrote it (chat, or completions with prompt).
func referenceBody(t testing.TB, req *workload.Request, prompt bool) []byte {
	t.Helper()
	ref := marshalerBody{Model: "m1", MaxTokens: req.MaxTokens, Stream: true,
		StreamOptions: &streamOptions{IncludeUsage: true}, Tools: req.Tools, User: req.Session,
		Temperature: req.Temperature, TopP: req.TopP}
	if req.Model != "" {
		ref.Model = req.Model
	}
	switch {
	case prompt:
		p := req.Prompt
		ref.Prompt = &p
	case len(req.Messages) == 0:
		ref.Messages = []workload.Message{{Role: "user", Content: req.Prompt}}
	default:
		ref.Messages = req.Messages
	}
	b, err := json.Marshal(ref)
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
		{Prompt: "exactly 16 bytes", Model: "lora-1", Session: "s<2>"},
		{Prompt: "tools", Tools: []byte(`[{"type":"function","function":{"name":"f"}}]`)},
	} {
		got, err := c.Body(&req)
		if err != nil {
			t.Fatal(err)
		}
		if want := referenceBody(t, &req, false); string(got) != string(want) {
			t.Errorf("body\n%s\nwant\n%s", got, want)
		}
	}
}

// FuzzChatBodyMatchesMarshaler holds any text message, prompt, model and
// user to json.Marshal's bytes.
func FuzzChatBodyMatchesMarshaler(f *testing.F) {
	f.Add("user", "hello <b>&\u2028\xff")
	f.Add("system", "")
	// No reactor: Body does not need one, and the fuzzer runs it often.
	chat, err := New(Config{BaseURL: "http://127.0.0.1:1/v1", API: Chat, Model: "m1", Stream: true, NetHTTP: true})
	if err != nil {
		f.Fatal(err)
	}
	completions, err := New(Config{BaseURL: "http://127.0.0.1:1/v1", API: Completions, Model: "m1", Stream: true, NetHTTP: true})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, role, content string) {
		for _, tc := range []struct {
			c      *Client
			req    workload.Request
			prompt bool
		}{
			{chat, workload.Request{Prompt: content, MaxTokens: len(role)}, false},
			{chat, workload.Request{Messages: []workload.Message{{Role: role, Content: content}, {Role: "user", Content: role}}, Session: role}, false},
			{completions, workload.Request{Prompt: content, Model: role}, true},
		} {
			got, err := tc.c.Body(&tc.req)
			if err != nil {
				t.Fatal(err)
			}
			if want := referenceBody(t, &tc.req, tc.prompt); string(got) != string(want) {
				t.Fatalf("body\n%q\nwant\n%q", got, want)
			}
		}
	})
}

// TestAppendStringEveryPosition puts every byte at every position of
// strings up to 20 bytes long (the word-at-a-time check's edges) and
// holds appendString to json.Marshal.
func TestAppendStringEveryPosition(t *testing.T) {
	for n := 1; n <= 20; n++ {
		for pos := 0; pos < n; pos++ {
			for c := 0; c < 256; c++ {
				b := []byte(strings.Repeat("a", n))
				b[pos] = byte(c)
				want, _ := json.Marshal(string(b))
				if got := appendString([]byte("x"), string(b)); string(got) != "x"+string(want) {
					t.Fatalf("%q: %q, want x%q", b, got, want)
				}
			}
		}
	}
}

// TestAppendPlainKnowsEveryField: appendPlain writes some of chatBody's
// fields and leaves a body with any other to json.Marshal. A field added
// to chatBody and to neither list would be dropped from every plain body
// without a test noticing, so the lists are held to the struct.
func TestAppendPlainKnowsEveryField(t *testing.T) {
	written := []string{"Model", "Messages", "Prompt", "MaxTokens", "Stream", "StreamOptions", "IgnoreEOS", "User"}
	fallBack := []string{"Input", "Tools", "Temperature", "TopP", "Logprobs", "TopLogprobs"}
	known := map[string]bool{}
	for _, f := range append(written, fallBack...) {
		known[f] = true
	}
	typ := reflect.TypeOf(chatBody{})
	for i := range typ.NumField() {
		if f := typ.Field(i).Name; !known[f] {
			t.Errorf("chatBody.%s is new: appendPlain must write it or leave bodies that have it to json.Marshal (and this test must list it)", f)
		}
	}
	if typ.NumField() != len(known) {
		t.Errorf("chatBody has %d fields, the lists %d", typ.NumField(), len(known))
	}
}
