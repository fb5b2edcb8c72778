package plan

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/spate-dev/spate/experiment"
	"github.com/spate-dev/spate/internal/output/progress"
	"github.com/spate-dev/spate/internal/output/report"
	"github.com/spate-dev/spate/result"
)

// reportFeature writes the report outputs of a run (outputs.report,
// markdown, junit, seriesCsv) and draws live progress in place on an
// interactive terminal (Env.Live).
type reportFeature struct{}

// liveEvery is the longest interval between redraws of the live block.
const liveEvery = time.Second

func (reportFeature) check(context.Context, *experiment.Experiment) error { return nil }
func (reportFeature) start(context.Context, *Run) error                   { return nil }

// apply replaces the plain progress lines with a block redrawn in place.
func (reportFeature) apply(_ context.Context, r *Run) error {
	p := &r.Plan
	if p.Progress == nil || r.quiet() || !r.env.Live {
		return nil
	}
	p.Progress = progress.For(r.env.Stderr, true)
	p.ProgressEvery = min(p.ProgressEvery, liveEvery)
	return nil
}

// finish writes the asked-for reports; it runs for partial and failed runs
// too, since their result exists.
func (reportFeature) finish(r *Run, res *result.Result) error {
	o := r.X.Outputs
	label := strings.TrimSuffix(filepath.Base(o.Result), ".json")
	if label == "" || label == "." {
		label = "run"
	}
	var errs []error
	for _, out := range []struct{ path, format, flag string }{
		{o.Report, "html", "--report"}, {o.Markdown, "markdown", "--report-md"},
		{o.JUnit, "junit", "--junit"}, {o.SeriesCSV, "csv", "--series-csv"},
	} {
		if out.path == "" {
			continue
		}
		var buf bytes.Buffer
		err := report.Write(&buf, out.format, []*result.Result{res}, []string{label}, "")
		if err == nil {
			err = report.WriteFile(out.path, buf.Bytes())
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s %s: %w", out.flag, out.path, err))
			continue
		}
		if !r.quiet() {
			fmt.Fprintf(r.stdout(), "%s report written to %s\n", out.format, out.path)
		}
	}
	return errors.Join(errs...)
}
