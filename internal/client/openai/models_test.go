package openai

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/spate-dev/spate/llmtest"
)

// TestTargetWithoutV1: a target whose /models answers 404 where its
// /v1/models lists models is told to add /v1 (the message said only that
// listing failed, and to pass --model, which would have left every
// request a 404); a target that lists nowhere, or whose path has its /v1,
// is not.
func TestTargetWithoutV1(t *testing.T) {
	v1Only := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/models" && r.URL.Path != "/api/v1/models" {
			http.NotFound(w, r)
			return
		}
		w.Write([]byte(`{"object":"list","data":[{"id":"m"}]}`))
	}))
	defer v1Only.Close()
	nowhere := httptest.NewServer(http.NotFoundHandler())
	defer nowhere.Close()
	for _, tc := range []struct {
		name, base string
		hint       string // "": no hint, and no ErrTargetWithoutV1
		ok         bool
	}{
		{"host only", v1Only.URL, v1Only.URL + "/v1?", false},
		{"host and slash", v1Only.URL + "/", v1Only.URL + "/v1?", false},
		{"a path without /v1", v1Only.URL + "/api", v1Only.URL + "/api/v1?", false},
		{"with /v1", v1Only.URL + "/v1", "", true},
		{"lists nowhere", nowhere.URL, "", false},
		{"lists nowhere, with /v1", nowhere.URL + "/v1", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := New(Config{BaseURL: tc.base, API: Chat})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			ids, err := c.Models(context.Background())
			if tc.ok != (err == nil) {
				t.Fatalf("models %v, error %v; want success %v", ids, err, tc.ok)
			}
			if err == nil {
				return
			}
			if tc.hint == "" {
				if errors.Is(err, ErrTargetWithoutV1) || strings.Contains(err.Error(), "did you mean") {
					t.Errorf("error %q suggests /v1", err)
				}
				return
			}
			if !errors.Is(err, ErrTargetWithoutV1) || !strings.Contains(err.Error(), "did you mean --target "+tc.hint) {
				t.Errorf("error %q, want ErrTargetWithoutV1 saying did you mean --target %s", err, tc.hint)
			}
			// The check before a run stops it too (with --model given,
			// every request was a 404).
			if err := c.Check(context.Background()); !errors.Is(err, ErrTargetWithoutV1) {
				t.Errorf("check: %v, want ErrTargetWithoutV1", err)
			}
		})
	}
}

// TestServerFromListing: the model listing every run sends tells the
// provenance what the server is (here llama.cpp b4747's recorded answer,
// served byte for byte), as spate doctor reads it.
func TestServerFromListing(t *testing.T) {
	srv := llmtest.NewReplay(recording(t, "llama.cpp-b4747-models"))
	defer srv.Close()
	c, err := New(Config{BaseURL: srv.URL + "/v1", API: Chat})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.Server() != nil {
		t.Fatal("a server's information before any listing")
	}
	if err := c.Check(context.Background()); err != nil {
		t.Fatal(err)
	}
	in := c.Server()
	if in == nil || in.Software != "llama.cpp" || in.MaxContext != 8192 || in.HTTP != "HTTP/1.1" || in.ClockOffsetS != nil {
		t.Errorf("server %+v", in)
	}
}

// TestOllamaTrap: an Ollama server (its listing's owned_by) ignores
// ignore_eos; with it sent the run is warned, without it not.
func TestOllamaTrap(t *testing.T) {
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`{"object":"list","data":[{"id":"llama3.2:1b","object":"model","created":1,"owned_by":"library"}]}`))
	}))
	defer hs.Close()
	for _, eos := range []bool{true, false} {
		c, err := New(Config{BaseURL: hs.URL + "/v1", API: Chat, IgnoreEOS: eos})
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Check(context.Background()); err != nil {
			t.Fatal(err)
		}
		traps := c.Traps()
		c.Close()
		if eos != (len(traps) == 1) || eos && !strings.Contains(traps[0], "Ollama (owned_by: library), which ignores ignore_eos") {
			t.Errorf("ignore_eos %v: traps %q", eos, traps)
		}
	}
}
