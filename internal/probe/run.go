package probe

import (
	"errors"
	"fmt"

	"github.com/spate-dev/spate/experiment"
)

// RunOptions are the flags of spate probe run: probes only, against a
// target or a built-in simulator.
type RunOptions struct {
	// Target is --target, the API's base URL; "" runs the simulator.
	Target string
	// Model is --model ("" asks the first the server lists).
	Model string
	// Out is -o, the result file.
	Out string
	// Suites are --probes: built-in names, "all", or YAML suite files.
	Suites []string
	// Requests and Concurrency are --requests and --concurrency.
	Requests, Concurrency int
	// Vulnerability is --vulnerability, the simulator's, in [0, 1];
	// VulnerabilityGiven says the flag was given.
	Vulnerability      float64
	VulnerabilityGiven bool
	// Seed is --seed, of the run and of the simulator.
	Seed uint64
}

// Check reports options a probe run cannot start with; its errors name
// the flags (the command's usage errors).
func (o RunOptions) Check() error {
	switch {
	case o.Requests < 1 || o.Concurrency < 1:
		return errors.New("--requests and --concurrency must be at least 1")
	case o.Target == "" && (o.Vulnerability < 0 || o.Vulnerability > 1):
		return fmt.Errorf("--vulnerability %g: want a probability in [0, 1]", o.Vulnerability)
	case o.Target != "" && o.VulnerabilityGiven:
		return errors.New("--vulnerability sets the built-in simulator: leave out --target, or set it on the server (spate sim, PUT /admin/faults)")
	}
	return nil
}

// Experiment is the experiment of a probe run against target: one stage
// of probes only, every request a probe.
func (o RunOptions) Experiment(target string) *experiment.Experiment {
	return &experiment.Experiment{
		Target:   experiment.Target{URL: target, Model: o.Model},
		Workload: experiment.Workload{Seed: new(o.Seed)},
		Stages:   []experiment.Stage{{Name: "probes", Concurrency: o.Concurrency, Requests: o.Requests}},
		Probes:   experiment.Probes{Suites: o.Suites, Fraction: 1},
		Outputs:  experiment.Outputs{Result: o.Out},
		// A probe run's verdict is what the model answered, which no
		// timestamp moves: the result still says whether its timings
		// can be trusted (load.valid), but that does not fail the run.
		Measurement: experiment.Measurement{AllowInvalid: true},
	}
}
