package flagbind

import (
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/spate-dev/spate/experiment"
)

var table = []Binding{
	{Name: "target", X: func(x *experiment.Experiment) any { return &x.Target.URL }},
	{Name: "timeout", X: func(x *experiment.Experiment) any { return &x.Target.Timeout }},
	{Name: "stream", X: func(x *experiment.Experiment) any { return &x.Target.Stream }},
	{Name: "threshold", X: func(x *experiment.Experiment) any { return &x.Thresholds }, Join: true},
	{Name: "header", X: func(x *experiment.Experiment) any { return &x.Target.Headers }, Join: true},
	{Name: "limit", X: func(x *experiment.Experiment) any { return &x.Limits }, Join: true},
	{Name: "progress", X: func(x *experiment.Experiment) any { return &x.Outputs.Progress }},
	{Name: "rate", S: func(s *experiment.Stage) any { return &s.Rate }, Also: func(s *experiment.Stage, changed func(string) bool) {
		if !changed("concurrency") {
			s.Concurrency = 0
		}
	}},
}

func parse(t *testing.T, own string, args ...string) (*pflag.FlagSet, *Flags) {
	t.Helper()
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	if own != "" {
		fs.String(own, "", "the command's own")
	}
	defaults := &experiment.Experiment{Target: experiment.Target{Timeout: time.Minute, Stream: new(true)}, Stages: []experiment.Stage{{}},
		Limits: experiment.Limits{ResponseText: 4 << 20, ModelID: 1024}}
	f := Register(fs, table, defaults)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	return fs, f
}

// parseErr is the error of parsing or applying args, "" for none.
func parseErr(args ...string) string {
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	f := Register(fs, table, &experiment.Experiment{Stages: []experiment.Stage{{}}})
	if err := fs.Parse(args); err != nil {
		return err.Error()
	}
	if err := f.Apply(fs, &experiment.Experiment{Stages: []experiment.Stage{{}}}); err != nil {
		return err.Error()
	}
	return ""
}

// TestBadValuesNameTheFlag: negative durations and numbers, and a header
// with a CR or LF, are refused with the flag's name.
func TestBadValuesNameTheFlag(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--timeout", "-1s"}, "--timeout -1s: a negative value"},
		{[]string{"--rate", "-5"}, "--rate -5: a negative value"},
		{[]string{"--progress", "-2s"}, "--progress -2s: a negative value"},
		{[]string{"--header", "X-A: v\r\nX-Evil: 1"}, "a header is one line"},
		{[]string{"--header", "X-A: v\rX-Evil: 1"}, "--header"},
		{[]string{"--header", "X-A: v\nX-Evil: 1"}, "a header is one line"},
		{[]string{"--limit", "responseText=-1"}, "--limit"},
		{[]string{"--limit", "bogus=1"}, "KEY one of"},
	} {
		if got := parseErr(c.args...); !strings.Contains(got, c.want) {
			t.Errorf("%q: error %q, want it to contain %q", c.args, got, c.want)
		}
	}
}

// TestLimitsJoin: --limit replaces the keys it gives and keeps a file's
// others; its default shows the defaults.
func TestLimitsJoin(t *testing.T) {
	fs, f := parse(t, "", "--limit", "responseText=8MiB", "--limit", "promptTokens=10")
	if d := fs.Lookup("limit").DefValue; d != "modelId=1KiB,responseText=4MiB" {
		t.Errorf("default %q", d)
	}
	x := &experiment.Experiment{Stages: []experiment.Stage{{}}, Limits: experiment.Limits{ModelID: 99, ResponseText: 1}}
	if err := f.Apply(fs, x); err != nil {
		t.Fatal(err)
	}
	if x.Limits.ResponseText != 8<<20 || x.Limits.PromptTokens != 10 || x.Limits.ModelID != 99 {
		t.Errorf("limits %+v", x.Limits)
	}
}

func TestApply(t *testing.T) {
	fs, f := parse(t, "", "--rate", "5", "--threshold", "a", "--threshold", "b", "--stream=false")
	x := &experiment.Experiment{
		Target:     experiment.Target{URL: "http://file", Timeout: time.Second},
		Thresholds: []experiment.ThresholdSpec{{Expr: "file"}},
		Stages:     []experiment.Stage{{Name: "a", Concurrency: 2}, {Name: "b", Rate: 1}},
	}
	if err := f.Apply(fs, x); err != nil {
		t.Fatal(err)
	}
	if x.Target.URL != "http://file" || x.Target.Timeout != time.Second {
		t.Errorf("fields of flags not given changed: %+v", x.Target)
	}
	if x.Target.Stream == nil || *x.Target.Stream {
		t.Errorf("--stream=false: %v", x.Target.Stream)
	}
	if len(x.Thresholds) != 3 || x.Thresholds[2].Expr != "b" {
		t.Errorf("thresholds %+v: want the file's, then the flags'", x.Thresholds)
	}
	for _, s := range x.Stages {
		if s.Rate != 5 || s.Concurrency != 0 {
			t.Errorf("stage %s: %+v, want rate 5 and no concurrency", s.Name, s)
		}
	}
}

func TestZeroIsRefused(t *testing.T) {
	fs, f := parse(t, "", "--timeout", "0s")
	err := f.Apply(fs, &experiment.Experiment{Stages: []experiment.Stage{{}}})
	if err == nil || !strings.Contains(err.Error(), "--timeout 0s") {
		t.Fatalf("error %v", err)
	}
}

func TestOwnFlagWins(t *testing.T) {
	fs, f := parse(t, "target", "--target", "mine")
	x := &experiment.Experiment{Target: experiment.Target{URL: "http://file"}, Stages: []experiment.Stage{{}}}
	if err := f.Apply(fs, x); err != nil || x.Target.URL != "http://file" {
		t.Fatalf("a command's own --target was applied to the experiment: %v %q", err, x.Target.URL)
	}
}

func TestLoop(t *testing.T) {
	file := experiment.Stage{Rate: 5, TokenRate: 100, Concurrency: 3, MaxConcurrency: 8}
	for _, tc := range []struct {
		flag    string
		changed []string
		want    experiment.Stage
	}{
		{"rate", nil, experiment.Stage{Rate: 5, MaxConcurrency: 8}},
		{"token-rate", nil, experiment.Stage{TokenRate: 100, MaxConcurrency: 8}},
		{"concurrency", nil, experiment.Stage{Concurrency: 3}},
		{"concurrency", []string{"max-concurrency"}, experiment.Stage{Concurrency: 3, MaxConcurrency: 8}},
		{"token-rate", []string{"rate"}, experiment.Stage{Rate: 5, TokenRate: 100, MaxConcurrency: 8}},
	} {
		s := file
		changed := func(name string) bool {
			for _, c := range append(tc.changed, tc.flag) {
				if c == name {
					return true
				}
			}
			return false
		}
		Loop(tc.flag)(&s, changed)
		if s != tc.want {
			t.Errorf("--%s (also %v): %+v, want %+v", tc.flag, tc.changed, s, tc.want)
		}
	}
}
