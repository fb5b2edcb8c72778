package plan

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spate-dev/spate/experiment"
	"github.com/spate-dev/spate/internal/chaos"
	"github.com/spate-dev/spate/internal/client/openai"
	"github.com/spate-dev/spate/internal/outfile"
	"github.com/spate-dev/spate/internal/workload"
	"github.com/spate-dev/spate/sim"
)

// Defaults of the limits the plan enforces or hands to the protocol
// client.
const (
	DefaultFaultSetNodes = 10_000
	defaultResponseText  = openai.DefaultMaxText
	defaultResponseBody  = openai.DefaultMaxBody
	defaultModelID       = openai.DefaultMaxModelID
	defaultModelList     = openai.DefaultMaxModelList
)

// limitDefaults are the defaults of experiment.Limits (docs/run.md lists
// them).
func limitDefaults() experiment.Limits {
	return experiment.Limits{
		ResponseText: defaultResponseText, ResponseBody: defaultResponseBody,
		ModelID: defaultModelID, ModelList: defaultModelList,
		PromptTokens: workload.DefaultPromptTokens,
		FileSize:     workload.DefaultFileSize, LineSize: workload.DefaultLineSize,
		FaultSetNodes: DefaultFaultSetNodes,
	}
}

// workloadLimits are the limits the workload reads and makes under.
func workloadLimits(l experiment.Limits) workload.Limits {
	return workload.Limits{FileSize: int64(l.FileSize), LineSize: int64(l.LineSize), PromptTokens: l.PromptTokens}
}

// promptProblems reports length distributions over the prompt limit.
func promptProblems(ctx context.Context, x *experiment.Experiment, at func(path, format string, a ...any)) {
	limit := x.Limits.Or(limitDefaults()).PromptTokens
	check := func(p string, w experiment.Workload) {
		if w.InputTokens == "" {
			return
		}
		l, err := workload.ParseLengthsContext(ctx, w.InputTokens)
		if err != nil {
			return // problems says so
		}
		if _, err := l.Capped(limit, "inputTokens"); err != nil {
			at(p+".inputTokens", "%v", err)
		}
	}
	check("$.workload", x.Workload)
	for i, s := range x.Stages {
		if s.Workload != nil {
			check(fmt.Sprintf("$.stages[%d].workload", i), *s.Workload)
		}
	}
}

// errTooManyNodes stops a count of a fault set's values.
var errTooManyNodes = errors.New("too many values")

// countNodes counts the values of a YAML-decoded value, aliases expanded,
// and stops past limit: a 1 KB alias bomb would expand to gigabytes when
// sent as JSON.
func countNodes(v any, limit int) (int, error) {
	n := 0
	var walk func(any) error
	walk = func(v any) error {
		if n++; n > limit {
			return errTooManyNodes
		}
		switch t := v.(type) {
		case map[string]any:
			for _, e := range t {
				if err := walk(e); err != nil {
					return err
				}
			}
		case []any:
			for _, e := range t {
				if err := walk(e); err != nil {
					return err
				}
			}
		}
		return nil
	}
	err := walk(v)
	return n, err
}

// faultSetProblems checks each stage's faults.set as a run would send it:
// within the node limit, and a fault set the injector takes (the chaos
// proxy's when the run starts one, else the simulator's or the proxy's),
// none of whose rules begins after the stage's load (neverOn).
func faultSetProblems(x *experiment.Experiment, at func(path, format string, a ...any)) {
	limit := x.Limits.Or(limitDefaults()).FaultSetNodes
	for i, s := range x.Stages {
		if s.Faults == nil || len(s.Faults.Set) == 0 {
			continue
		}
		p := fmt.Sprintf("$.stages[%d].faults.set", i)
		if _, err := countNodes(map[string]any(s.Faults.Set), limit); err != nil {
			at(p, "stage %q: faults.set has over %d values once its YAML aliases are expanded: write the set out, or raise --limit faultSetNodes=N (limits.faultSetNodes)", s.Name, limit)
			continue
		}
		b, err := json.Marshal(s.Faults.Set)
		if err != nil {
			at(p, "stage %q: faults.set is not JSON: %v", s.Name, err)
			continue
		}
		set, perr := chaos.DecodeSet(b)
		if perr == nil {
			if err := neverOn(set.Rules(), loadSpan([]experiment.Stage{s})); err != nil {
				at(p, "stage %s faults: %v", s.Name, err)
				continue
			}
		}
		if proxyOn(x.Chaos) {
			if perr != nil {
				at(p, "stage %q: faults.set is not a fault set of the chaos proxy: %v", s.Name, perr)
			}
			continue
		}
		if _, serr := sim.DecodeFaults(b); serr != nil && perr != nil {
			at(p, "stage %q: faults.set is neither the simulator's faults (%v) nor the chaos proxy's (%v)", s.Name, serr, perr)
		}
	}
}

// outputs are the files a run writes, with the flag that names each.
func outputs(x *experiment.Experiment) []struct{ path, flag string } {
	o := x.Outputs
	return []struct{ path, flag string }{
		{o.Result, "--out"}, {o.Records, "--records"}, {o.Report, "--report"},
		{o.Markdown, "--report-md"}, {o.JUnit, "--junit"}, {o.SeriesCSV, "--series-csv"},
	}
}

// outputError is an output path that cannot be written: a run that fails
// on it writes no result (it could not), unlike one whose target is
// unreachable (startFailed).
type outputError struct{ error }

func (e outputError) Unwrap() error { return e.error }

// checkOutputs makes sure every output file can be written before the
// load starts, so that a run is not lost to a bad path: it is not a
// directory, its directory can be made, and a file can be created beside
// it (a probe, removed at once) or, when it names a link, beside the
// link's target (outfile.Write writes there). A device or a FIFO is
// written in place and has nothing to probe (/dev is not writable but
// --out /dev/null is).
func checkOutputs(_ context.Context, x *experiment.Experiment) error {
	for _, o := range outputs(x) {
		if o.path == "" {
			continue
		}
		fi, err := os.Stat(o.path)
		if err == nil && fi.IsDir() {
			return invalidf("%s %s is a directory: give a file name, e.g. %s", o.flag, o.path, filepath.Join(o.path, "result.json"))
		}
		if err == nil && !fi.Mode().IsRegular() {
			continue
		}
		target, err := outfile.Resolve(o.path)
		if err != nil {
			return outputError{fmt.Errorf("%s %s: %w", o.flag, o.path, err)}
		}
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			return outputError{fmt.Errorf("%s %s: %w", o.flag, o.path, err)}
		}
		f, err := os.CreateTemp(filepath.Dir(target), ".spate-probe-*")
		if err != nil {
			return outputError{fmt.Errorf("%s %s: cannot write there: %w", o.flag, o.path, err)}
		}
		f.Close()
		os.Remove(f.Name())
	}
	return nil
}
