package tokenizer_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/spate-dev/spate/internal/workload/tokenizer"
	"github.com/spate-dev/spate/llmtest"
)

// recorded reads a response llama.cpp b4747 sent, off the wire.
func recorded(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/llama.cpp-b4747/" + name + ".response")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestServerReplayLlamaCpp: the bytes llama.cpp b4747 answered
// POST /tokenize with, replayed, are found at the target's root and read
// as its 12 ids; with_pieces' answer parses to its ids too.
func TestServerReplayLlamaCpp(t *testing.T) {
	r := llmtest.NewReplay(recorded(t, "tokenize"))
	defer r.Close()
	ctx := context.Background()
	s, err := tokenizer.DialServer(ctx, tokenizer.ServerConfig{Name: "server", Target: r.URL + "/v1/"})
	if err != nil {
		t.Fatal(err)
	}
	if url, shape := s.Endpoint(); url != r.URL+"/tokenize" || shape != "llama.cpp" {
		t.Errorf("Endpoint() = %s, %s; want %s/tokenize, llama.cpp", url, shape, r.URL)
	}
	want := []int{450, 4996, 17354, 1701, 29916, 432, 17204, 975, 278, 17366, 11203, 29889}
	ids, err := s.Tokenize(ctx, "The quick brown fox jumps over the lazy dog.")
	if err != nil || !reflect.DeepEqual(ids, want) {
		t.Errorf("Tokenize = %v, %v; want %v", ids, err, want)
	}
	if n := s.Count("anything"); n != 12 {
		t.Errorf("Count = %d, want 12", n)
	}
	if n := s.Count("anything"); n != 12 || s.Requests() != 3 {
		t.Errorf("a second Count = %d after %d requests; want 12 from the cache after 3", n, s.Requests())
	}
	_, body, _ := bytes.Cut(recorded(t, "tokenize-with-pieces"), []byte("\r\n\r\n"))
	ids, err = tokenizer.ParseTokens(body)
	if err != nil || len(ids) != 12 || ids[0] != 1632 || ids[11] != 29941 {
		t.Errorf("with_pieces: %v, %v", ids, err)
	}
}

// TestServerNoEndpoint: a target without a tokenize endpoint is an error
// that names the target, what was tried and what to do instead.
func TestServerNoEndpoint(t *testing.T) {
	srv := llmtest.NewServer(llmtest.Config{})
	defer srv.Close()
	_, err := tokenizer.DialServer(context.Background(), tokenizer.ServerConfig{Name: "server", Target: srv.BaseURL(), APIKey: "sk-secret"})
	if err == nil {
		t.Fatal("no error from a server without /tokenize")
	}
	msg := err.Error()
	for _, want := range []string{
		"the target " + srv.BaseURL() + " has no tokenize endpoint",
		"tried POST " + srv.URL + "/tokenize in llama.cpp's shape: HTTP 404; vLLM's shape: HTTP 404",
		"--tokenizer cl100k_base, o200k_base, llama3 or the path of the model's tokenizer.json",
		"--tokenizer server:URL",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q\nlacks %q", msg, want)
		}
	}
	if strings.Contains(msg, "sk-secret") {
		t.Errorf("error shows the API key: %s", msg)
	}
}

// TestServerNames: server:URL is checked without a request.
func TestServerNames(t *testing.T) {
	for _, tc := range []struct {
		name string
		ok   bool
	}{{"server", true}, {"server:http://127.0.0.1:8080/tokenize", true}, {"server:ftp://x/tokenize", false}, {"server:tokenize", false}} {
		if err := tokenizer.CheckServerName(tc.name); (err == nil) != tc.ok {
			t.Errorf("CheckServerName(%q) = %v", tc.name, err)
		}
		if !tokenizer.IsServer(tc.name) {
			t.Errorf("IsServer(%q) = false", tc.name)
		}
	}
	if tokenizer.IsServer("servers.json") {
		t.Error(`IsServer("servers.json") = true`)
	}
}

// FuzzParseTokens: any bytes are read without a panic, and ids read are
// the ids of {"tokens": ids}.
func FuzzParseTokens(f *testing.F) {
	f.Add([]byte(`{"tokens":[450,4996]}`))
	f.Add([]byte(`{"count":2,"max_model_len":4096,"tokens":[1,2]}`))
	f.Add([]byte(`{"tokens":[{"id":1632,"piece":" Gr"},{"id":29993,"piece":"ü"}]}`))
	f.Add([]byte(`{"count":3,"tokens":[1,2]}`))
	f.Add([]byte(`{"tokens":["a"]}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, b []byte) {
		ids, err := tokenizer.ParseTokens(b)
		if err != nil {
			return
		}
		again, _ := json.Marshal(map[string]any{"tokens": ids})
		ids2, err := tokenizer.ParseTokens(again)
		if err != nil || len(ids2) != len(ids) || (len(ids) > 0 && !reflect.DeepEqual(ids, ids2)) {
			t.Fatalf("%q read as %v, which reads back as %v, %v", b, ids, ids2, err)
		}
	})
}
