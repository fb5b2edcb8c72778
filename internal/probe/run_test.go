package probe

import (
	"slices"
	"testing"
)

// TestRunOptionsCheck checks spate probe run's flag checks, their errors
// word for word.
func TestRunOptionsCheck(t *testing.T) {
	ok := RunOptions{Requests: 200, Concurrency: 8, Vulnerability: 0.3}
	with := func(change func(*RunOptions)) RunOptions { o := ok; change(&o); return o }
	for _, tc := range []struct {
		name string
		o    RunOptions
		err  string
	}{
		{name: "simulator", o: ok},
		{name: "target", o: with(func(o *RunOptions) { o.Target = "http://127.0.0.1:1/v1" })},
		{name: "vulnerability bounds", o: with(func(o *RunOptions) { o.Vulnerability = 1 })},
		{name: "no requests", o: with(func(o *RunOptions) { o.Requests = 0 }), err: "--requests and --concurrency must be at least 1"},
		{name: "no concurrency", o: with(func(o *RunOptions) { o.Concurrency = -1 }), err: "--requests and --concurrency must be at least 1"},
		{name: "vulnerability above 1", o: with(func(o *RunOptions) { o.Vulnerability = 1.5 }), err: "--vulnerability 1.5: want a probability in [0, 1]"},
		{name: "vulnerability below 0", o: with(func(o *RunOptions) { o.Vulnerability = -0.1 }), err: "--vulnerability -0.1: want a probability in [0, 1]"},
		{name: "vulnerability with target", o: with(func(o *RunOptions) { o.Target, o.VulnerabilityGiven = "http://127.0.0.1:1/v1", true }),
			err: "--vulnerability sets the built-in simulator: leave out --target, or set it on the server (spate sim, PUT /admin/faults)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.o.Check()
			if got := ""; err != nil {
				got = err.Error()
				if got != tc.err {
					t.Errorf("error %q, want %q", got, tc.err)
				}
			} else if tc.err != "" {
				t.Errorf("no error, want %q", tc.err)
			}
		})
	}
}

// TestRunOptionsExperiment checks the experiment of a probe run: one stage
// of probes only, with the flags' figures, whose invalid timing does not
// fail it.
func TestRunOptionsExperiment(t *testing.T) {
	o := RunOptions{Model: "m", Out: "p.json", Suites: []string{"all"}, Requests: 50, Concurrency: 4, Seed: 7}
	x := o.Experiment("http://127.0.0.1:9/v1")
	s := x.Stages
	switch {
	case x.Target.URL != "http://127.0.0.1:9/v1" || x.Target.Model != "m" || x.Outputs.Result != "p.json":
		t.Errorf("target %+v outputs %+v", x.Target, x.Outputs)
	case len(s) != 1 || s[0].Name != "probes" || s[0].Concurrency != 4 || s[0].Requests != 50:
		t.Errorf("stages %+v", s)
	case !slices.Equal(x.Probes.Suites, []string{"all"}) || x.Probes.Fraction != 1:
		t.Errorf("probes %+v", x.Probes)
	case x.Workload.Seed == nil || *x.Workload.Seed != 7 || !x.Measurement.AllowInvalid:
		t.Errorf("seed %v, allow invalid %v", x.Workload.Seed, x.Measurement.AllowInvalid)
	}
}
