package openai

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
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
		})
	}
}
