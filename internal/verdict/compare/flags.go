package compare

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Flags are the options of spate compare as its flags give them, before
// they are checked.
type Flags struct {
	// Base, New, BaseRef and NewRef are the files or globs of --base,
	// --new, --base-ref and --new-ref.
	Base, New, BaseRef, NewRef []string
	// Alpha is --alpha, the significance level.
	Alpha float64
	// Window and Settle are --window and --settle (whole seconds).
	Window, Settle time.Duration
	// Metrics, Gate and MinEffect are --metric, --gate and --min-effect.
	Metrics, Gate, MinEffect []string
	// GateGiven says --gate was given (ParseGate).
	GateGiven bool
	// Format is --format: one of Formats.
	Format string
	// Force and AllowInvalid are --force and --allow-invalid.
	Force, AllowInvalid bool
	// Seed is --seed, the bootstrap's.
	Seed uint64
	// MinRuns is --min-runs.
	MinRuns int
}

// Plan checks the flags and splits the positional results args between
// the sides (dash is where "--" splits them, -1 when not given): it returns
// the files or globs of the base and new sides and the Config. Its errors
// name the flag and are ErrUsage.
func (f Flags) Plan(args []string, dash int) (base, nw []string, cfg Config, err error) {
	bad := func(format string, a ...any) ([]string, []string, Config, error) {
		return nil, nil, Config{}, usageError{fmt.Errorf(format, a...)}
	}
	if !slices.Contains(Formats, f.Format) {
		return bad("--format %q: use %s", f.Format, strings.Join(Formats, ", "))
	}
	if f.Alpha <= 0 || f.Alpha >= 0.5 {
		return bad("--alpha %v: want a level between 0 and 0.5, e.g. 0.01", f.Alpha)
	}
	if f.Window != 0 && (f.Window < time.Second || f.Window%time.Second != 0) {
		return bad("--window %v: want whole seconds, at least 1s (or leave it out to choose it from the runs' length)", f.Window)
	}
	minEffect, err := ParseMinEffect(f.MinEffect)
	if err != nil {
		return bad("%v", err)
	}
	gate, err := ParseGate(f.Gate, f.GateGiven)
	if err != nil {
		return bad("%v", err)
	}
	if f.Settle < 0 {
		return bad("--settle %v: must not be negative", f.Settle)
	}
	base, nw = f.Base, f.New
	switch {
	case dash > 0 && dash < len(args) && len(base) == 0 && len(nw) == 0:
		base, nw = args[:dash], args[dash:]
	case dash < 0 && len(args) == 2 && len(base) == 0 && len(nw) == 0:
		base, nw = args[:1], args[1:]
	case len(args) == 0 && len(base) > 0 && len(nw) > 0:
	default:
		return bad("give BASE.json NEW.json, BASE.json... -- NEW.json..., or --base and --new (each repeatable, globs allowed), not both")
	}
	if (len(f.BaseRef) == 0) != (len(f.NewRef) == 0) {
		return bad("--base-ref and --new-ref go together")
	}
	cfg = Config{Alpha: f.Alpha, Window: int(f.Window / time.Second), Settle: int(f.Settle / time.Second),
		Metrics: f.Metrics, Gate: gate, Seed: f.Seed, MinRuns: f.MinRuns, Force: f.Force,
		MinEffect: minEffect, AllowInvalid: f.AllowInvalid}
	if f.Settle == 0 {
		cfg.Settle = -1
	}
	return base, nw, cfg, nil
}
