package vector

import (
	"testing"
	"time"
)

// TestDriftFlagsWatch checks spate vector drift's flags: the required
// ones (the error word for word), the API key's default and the target
// recorded without its credentials.
func TestDriftFlagsWatch(t *testing.T) {
	env := func(k string) string {
		if k == "OPENAI_API_KEY" {
			return "sk-env"
		}
		return ""
	}
	ok := DriftFlags{Target: "http://user:pw@127.0.0.1:8000/v1", Model: "e5", Baseline: "b.json", Every: time.Minute, Count: 3, Update: true}
	with := func(change func(*DriftFlags)) DriftFlags { f := ok; change(&f); return f }
	const missing = "--target, --model and --baseline are required"
	for _, tc := range []struct {
		name string
		f    DriftFlags
		err  string
		key  string
	}{
		{name: "key from env", f: ok, key: "sk-env"},
		{name: "key given", f: with(func(f *DriftFlags) { f.APIKey = "sk-flag" }), key: "sk-flag"},
		{name: "no target", f: with(func(f *DriftFlags) { f.Target = "" }), err: missing},
		{name: "no model", f: with(func(f *DriftFlags) { f.Model = "" }), err: missing},
		{name: "no baseline", f: with(func(f *DriftFlags) { f.Baseline = "" }), err: missing},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, err := tc.f.Watch(env)
			if tc.err != "" {
				if err == nil || err.Error() != tc.err {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			e := w.Embedder
			if e.APIKey != tc.key || e.BaseURL != tc.f.Target || e.Model != "e5" {
				t.Errorf("embedder %+v, want key %q", e, tc.key)
			}
			if w.Target != "http://<redacted>@127.0.0.1:8000/v1" || w.Baseline != "b.json" || !w.Update || w.Every != time.Minute || w.Count != 3 {
				t.Errorf("watch %+v", w)
			}
		})
	}
}
