package doctor

import (
	"bytes"
	"net/http"
	"strings"
	"testing"
)

// TestOptionsPrepare checks spate doctor's flag checks, their errors word
// for word, and the Config they give.
func TestOptionsPrepare(t *testing.T) {
	env := func(k string) string {
		if k == "OPENAI_API_KEY" {
			return "sk-env"
		}
		return ""
	}
	for _, tc := range []struct {
		name    string
		o       Options
		err     string
		key     string
		headers http.Header
	}{
		{name: "no target", o: Options{Format: "text"}, err: "--target is required: the API's base URL, e.g. http://127.0.0.1:8000/v1"},
		{name: "format", o: Options{Config: Config{Target: "http://x/v1"}, Format: "yaml"}, err: `--format "yaml": want text or json`},
		{name: "header", o: Options{Config: Config{Target: "http://x/v1"}, Format: "json", HeaderLines: []string{"nocolon"}}, err: `--header "nocolon": want 'Name: value' on one line`},
		{name: "key from env", o: Options{Config: Config{Target: "http://x/v1"}, Format: "text", HeaderLines: []string{"X-A: 1"}}, key: "sk-env", headers: http.Header{"X-A": {"1"}}},
		{name: "key given", o: Options{Config: Config{Target: "http://x/v1", APIKey: "sk-flag"}, Format: "json"}, key: "sk-flag", headers: http.Header{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := tc.o.Prepare(env)
			if tc.err != "" {
				if err == nil || err.Error() != tc.err {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cfg.APIKey != tc.key || cfg.Target != tc.o.Target || len(cfg.Headers) != len(tc.headers) || cfg.Headers.Get("X-A") != tc.headers.Get("X-A") {
				t.Errorf("config %+v, want key %q headers %v", cfg, tc.key, tc.headers)
			}
		})
	}
}

// TestOptionsWrite checks that --format picks the report's writer.
func TestOptionsWrite(t *testing.T) {
	r := &Report{Target: "http://x/v1"}
	for _, format := range []string{"text", "json"} {
		var got, want bytes.Buffer
		if err := (Options{Format: format}).Write(&got, r); err != nil {
			t.Fatal(err)
		}
		write := WriteText
		if format == "json" {
			write = WriteJSON
		}
		if err := write(&want, r); err != nil {
			t.Fatal(err)
		}
		if got.String() != want.String() || (format == "json") != strings.HasPrefix(got.String(), "{") {
			t.Errorf("--format %s wrote %q, want %q", format, got.String(), want.String())
		}
	}
}
