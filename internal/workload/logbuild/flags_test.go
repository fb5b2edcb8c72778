package logbuild

import (
	"errors"
	"testing"
)

// TestSetFlags checks --k and the API key's default of spate workload
// build, the errors word for word.
func TestSetFlags(t *testing.T) {
	env := func(k string) string {
		if k == "OPENAI_API_KEY" {
			return "sk-env"
		}
		return ""
	}
	for _, tc := range []struct {
		name    string
		k       string
		o       Options
		err     string
		wantK   int
		wantKey string
	}{
		{name: "auto", k: "auto"},
		{name: "number", k: "12", wantK: 12},
		{name: "zero", k: "0", err: `--k "0": want a number of clusters ≥ 1 or auto`},
		{name: "negative", k: "-3", err: `--k "-3": want a number of clusters ≥ 1 or auto`},
		{name: "word", k: "many", err: `--k "many": want a number of clusters ≥ 1 or auto`},
		{name: "key from env with target", k: "auto", o: Options{Target: "http://127.0.0.1:1/v1"}, wantKey: "sk-env"},
		{name: "key given", k: "auto", o: Options{Target: "http://127.0.0.1:1/v1", APIKey: "sk-flag"}, wantKey: "sk-flag"},
		{name: "no key without target", k: "auto"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := tc.o
			err := o.SetFlags(tc.k, env)
			if tc.err != "" {
				if err == nil || err.Error() != tc.err || !errors.Is(err, ErrUsage) {
					t.Fatalf("error %v, want the usage error %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if o.Cluster.K != tc.wantK || o.APIKey != tc.wantKey {
				t.Errorf("k %d key %q, want %d %q", o.Cluster.K, o.APIKey, tc.wantK, tc.wantKey)
			}
		})
	}
}
