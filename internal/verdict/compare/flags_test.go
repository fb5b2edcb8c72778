package compare

import (
	"errors"
	"slices"
	"testing"
	"time"
)

// TestFlagsPlan checks spate compare's flags: each error word for word
// (they are the command's), and the sides and Config of good ones.
func TestFlagsPlan(t *testing.T) {
	ok := Flags{Format: "table", Alpha: 0.01, Settle: time.Second, Seed: 1}
	with := func(change func(*Flags)) Flags { f := ok; change(&f); return f }
	for _, tc := range []struct {
		name      string
		f         Flags
		args      []string
		dash      int
		err       string
		base, nw  []string
		wantSetle int
	}{
		{name: "two files", f: ok, args: []string{"a.json", "b.json"}, dash: -1, base: []string{"a.json"}, nw: []string{"b.json"}, wantSetle: 1},
		{name: "dash", f: ok, args: []string{"a", "b", "c"}, dash: 2, base: []string{"a", "b"}, nw: []string{"c"}, wantSetle: 1},
		{name: "flags", f: with(func(f *Flags) { f.Base, f.New = []string{"x*"}, []string{"y*"} }), dash: -1, base: []string{"x*"}, nw: []string{"y*"}, wantSetle: 1},
		{name: "settle 0 is none", f: with(func(f *Flags) { f.Settle = 0 }), args: []string{"a", "b"}, dash: -1, base: []string{"a"}, nw: []string{"b"}, wantSetle: -1},
		{name: "format", f: with(func(f *Flags) { f.Format = "html" }), args: []string{"a", "b"}, dash: -1, err: `--format "html": use table, markdown, json`},
		{name: "alpha 0", f: with(func(f *Flags) { f.Alpha = 0 }), err: "--alpha 0: want a level between 0 and 0.5, e.g. 0.01"},
		{name: "alpha 0.5", f: with(func(f *Flags) { f.Alpha = 0.5 }), err: "--alpha 0.5: want a level between 0 and 0.5, e.g. 0.01"},
		{name: "window part", f: with(func(f *Flags) { f.Window = 1500 * time.Millisecond }), err: "--window 1.5s: want whole seconds, at least 1s (or leave it out to choose it from the runs' length)"},
		{name: "window short", f: with(func(f *Flags) { f.Window = time.Millisecond }), err: "--window 1ms: want whole seconds, at least 1s (or leave it out to choose it from the runs' length)"},
		{name: "gate empty", f: with(func(f *Flags) { f.Gate, f.GateGiven = []string{""}, true }), err: `--gate "": name the metrics to gate (` + MetricNames() + `), or none`},
		{name: "settle negative", f: with(func(f *Flags) { f.Settle = -time.Second }), err: "--settle -1s: must not be negative"},
		{name: "one file", f: ok, args: []string{"a"}, dash: -1, err: "give BASE.json NEW.json, BASE.json... -- NEW.json..., or --base and --new (each repeatable, globs allowed), not both"},
		{name: "files and flags", f: with(func(f *Flags) { f.Base, f.New = []string{"x"}, []string{"y"} }), args: []string{"a", "b"}, dash: -1, err: "give BASE.json NEW.json, BASE.json... -- NEW.json..., or --base and --new (each repeatable, globs allowed), not both"},
		{name: "dash first", f: ok, args: []string{"a"}, dash: 0, err: "give BASE.json NEW.json, BASE.json... -- NEW.json..., or --base and --new (each repeatable, globs allowed), not both"},
		{name: "one ref", f: with(func(f *Flags) { f.BaseRef = []string{"r"} }), args: []string{"a", "b"}, dash: -1, err: "--base-ref and --new-ref go together"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base, nw, cfg, err := tc.f.Plan(tc.args, tc.dash)
			if tc.err != "" {
				if err == nil || err.Error() != tc.err || !errors.Is(err, ErrUsage) {
					t.Fatalf("error %v, want the usage error %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(base, tc.base) || !slices.Equal(nw, tc.nw) {
				t.Errorf("sides %q %q, want %q %q", base, nw, tc.base, tc.nw)
			}
			if cfg.Settle != tc.wantSetle || cfg.Alpha != tc.f.Alpha || cfg.Seed != tc.f.Seed || cfg.Gate != nil {
				t.Errorf("config %+v", cfg)
			}
		})
	}
}

// TestFlagsPlanMinEffect checks that --min-effect is parsed into the
// Config and its error kept.
func TestFlagsPlanMinEffect(t *testing.T) {
	f := Flags{Format: "json", Alpha: 0.05, Window: 2 * time.Second, MinEffect: []string{"ttft_p50_ms=10%"}, Gate: []string{"none"}, GateGiven: true}
	_, _, cfg, err := f.Plan([]string{"a", "b"}, -1)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.MinEffect["ttft_p50_ms"] != 0.1 || cfg.Window != 2 || cfg.Gate == nil || len(cfg.Gate) != 0 {
		t.Errorf("config %+v", cfg)
	}
	f.MinEffect = []string{"nosuch=1"}
	_, want := ParseMinEffect(f.MinEffect)
	if _, _, _, err := f.Plan([]string{"a", "b"}, -1); err == nil || want == nil || err.Error() != want.Error() || !errors.Is(err, ErrUsage) {
		t.Errorf("error %v, want the usage error %v", err, want)
	}
}
