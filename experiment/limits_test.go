package experiment

import (
	"strings"
	"testing"
)

// TestValueProblems: negative durations and numbers, and headers with a
// CR or LF, are problems at their file:line, each naming the key.
func TestValueProblems(t *testing.T) {
	head := "apiVersion: spate/v1\nkind: Experiment\n"
	stage := "stages: [{name: a, rate: 1, duration: 1s}]\n"
	tests := []struct{ name, body, want string }{
		{"timeout", head + "target:\n  timeout: -1s\n" + stage, "x.yaml:4:12: timeout: -1s is negative"},
		{"idle", head + "target: {idleTimeout: -5s}\n" + stage, "idleTimeout: -5s is negative"},
		{"drain", head + "stages: [{name: a, rate: 1, duration: 1s, drainTimeout: -2s}]\n", "drainTimeout: -2s is negative"},
		{"lag bound", head + "measurement: {lagBound: -1ms}\n" + stage, "lagBound: -1ms is negative"},
		{"progress", head + "outputs: {progress: -1s}\n" + stage, "progress: -1s is negative"},
		// a line every nanosecond floods the terminal
		{"progress flood", head + "outputs: {progress: 1ns}\n" + stage, "progress: 1ns would print a line every 1ns: give 100ms or more, or 0 for none"},
		{"ramp", head + "stages: [{name: a, rate: 2, rampFrom: -1, duration: 1s}]\n", "rampFrom: -1 is not a number >= 0"},
		// a negative rate names the rate, not "give exactly one of ..."
		{"rate", head + "stages: [{name: a, rate: -5, duration: 1s}]\n", "x.yaml:3:26: rate: -5 is not a number >= 0"},
		{"crlf header", head + "target: {headers: {X-A: \"v\\r\\nX-Evil: 1\"}}\n" + stage, "header \"X-A\" has a control character (\"\\r\")"},
		{"limit", head + "limits: {responseText: -1}\n" + stage, "size -1"},
		{"efSearch -1 is an exact search", head + "vector: {efSearch: [-1, 10]}\n" + stage, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.body), "x.yaml")
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v\nwant it to contain %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "exactly one of") {
				t.Errorf("a negative value reported as a loop problem: %v", err)
			}
		})
	}
}

func TestSizeAndLimits(t *testing.T) {
	for in, want := range map[string]Size{"65536": 65536, "64KiB": 64 << 10, "1.5 MiB": 3 << 19, "2GB": 2e9, "7B": 7} {
		got, err := ParseSize(in)
		if err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "-1", "lots", "1e30GiB", "NaN"} {
		if _, err := ParseSize(bad); err == nil {
			t.Errorf("ParseSize(%q) accepted", bad)
		}
	}
	var l Limits
	for _, kv := range []string{"responseText=8MiB", "promptTokens=1000", "modelId=512"} {
		if err := l.Set(kv); err != nil {
			t.Fatal(err)
		}
	}
	if got := l.String(); got != "modelId=512B,promptTokens=1000,responseText=8MiB" {
		t.Errorf("String() = %q", got)
	}
	for _, bad := range []string{"responseTxt=1", "promptTokens=-3", "responseText=0", "fileSize"} {
		if err := l.Set(bad); err == nil {
			t.Errorf("Set(%q) accepted", bad)
		}
	}
	full := l.Or(Limits{ResponseText: 1, ResponseBody: 2, FaultSetNodes: 3})
	if full.ResponseText != 8<<20 || full.ResponseBody != 2 || full.FaultSetNodes != 3 {
		t.Errorf("Or: %+v", full)
	}
	e, err := Parse([]byte("apiVersion: spate/v1\nkind: Experiment\nlimits: {responseText: 16MiB, lineSize: 1024}\nstages: [{name: a, rate: 1, duration: 1s}]\n"), "x.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if e.Limits.ResponseText != 16<<20 || e.Limits.LineSize != 1024 {
		t.Errorf("limits %+v", e.Limits)
	}
}

// FuzzParseSize: a size that parses is >= 0 and survives its own String.
func FuzzParseSize(f *testing.F) {
	for _, s := range []string{"64MiB", "1.5 GB", "7", "1e30GiB", "-1B", " 3 KiB "} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := ParseSize(s)
		if err != nil {
			return
		}
		if v < 0 {
			t.Fatalf("%q → %d", s, v)
		}
		if w, err := ParseSize(v.String()); err != nil || w != v {
			t.Fatalf("%q → %d → %q → %d, %v", s, v, v.String(), w, err)
		}
	})
}

// TestYAMLErrorsInTheFilesWords: what goes wrong reading a file is said in
// its own words with its place: a number where a duration goes (it said
// "cannot unmarshal uint64 into Go struct field Experiment.SLO of type
// time.Duration"), a duration that does not parse (it had no line), a
// mistyped key with the key meant.
func TestYAMLErrorsInTheFilesWords(t *testing.T) {
	head := "apiVersion: spate/v1\nkind: Experiment\n"
	stage := "stages: [{name: a, rate: 1, duration: 1s}]\n"
	for _, c := range []struct{ name, body, want, not string }{
		{"number for a duration", head + "slo:\n  ttft: 500\n" + stage, "x.yaml:4:9: 500 is not a duration: give it a unit, e.g. 500ms", "Go struct"},
		{"bad duration", head + "slo:\n  ttft: 5x0ms\n" + stage, "x.yaml:4:9: \"5x0ms\" is not a duration", "time: unknown unit"},
		{"mistyped key", head + "stagez: [{name: a, rate: 1, duration: 1s}]\n", "x.yaml:3:1: unknown field \"stagez\" (did you mean stages?)", ""},
		{"mistyped inner key", head + "stages: [{name: a, rate: 1, duraton: 1s}]\n", "(did you mean duration?)", ""},
		// Every unknown key at once, each with a key of its own mapping
		// (it said only the first, and "load" got "did you mean load?",
		// a key of another mapping), then the first error of the values.
		{"every unknown key", head + "target:\n  url: http://x/v1\n  modle: m\nload:\n  rate: 1\nslo:\n  ttft: 500\n" + stage,
			"x.yaml:5:3: unknown field \"modle\" (did you mean model?)\n>   5 |   modle: m\n          ^\n" +
				"x.yaml:6:1: unknown field \"load\" (the keys here: apiVersion, kind, metadata, target, sut, workload, slo, stages,",
			"did you mean load"},
		{"the values' error after the keys", head + "target:\n  modle: m\nslo:\n  ttft: 500\n" + stage, "x.yaml:6:9: 500 is not a duration", ""},
		// Every section's value error, not the file's first alone, each
		// in the file's words (a number that is not one said "cannot
		// unmarshal string into Go struct field Stage.Rate of type
		// float64"; a bad duration in a section had no place).
		{"every section's value error", head + "slo:\n  ttft: 500\nstages: [{name: a, rate: fast, duration: 1s}]\nmeasurement:\n  lagBound: soon\n",
			"x.yaml:4:9: 500 is not a duration", "Go struct"},
		{"a number that is not one", head + "slo:\n  ttft: 500\nstages: [{name: a, rate: fast, duration: 1s}]\n", "x.yaml:5:26: \"fast\" is not a number", "Go struct"},
		{"a duration that is not one, placed", head + "slo:\n  ttft: 500\nstages: [{name: a, rate: 1, duration: 1s}]\nmeasurement:\n  lagBound: soon\n", "x.yaml:7:13: \"soon\" is not a duration", ""},
		// With only keys unknown, the file's other problems are listed
		// too, in the file's order (a sort of the text put 10 before 9).
		{"keys and problems in one", head + "target:\n  modle: m\nstages:\n  - {name: a, rate: -1, duration: 1s}\n" + "  - {name: b, rate: 1, duration: 1s}\n  - {name: d, rate: 1, duration: 1s}\n  - {name: e, rate: 1, duration: 1s}\n  - {name: c, rate: -2, duration: 1s}\n",
			"x.yaml:4:3: unknown field \"modle\" (did you mean model?)\n>   4 |   modle: m\n          ^\nx.yaml:6:21: rate: -1 is not a number >= 0\nx.yaml:10:21: rate: -2 is not a number >= 0", ""},
	} {
		_, err := Parse([]byte(c.body), "x.yaml")
		if err == nil || !strings.Contains(err.Error(), c.want) || c.not != "" && strings.Contains(err.Error(), c.not) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
}
