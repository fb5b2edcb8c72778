package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"golang.org/x/term"

	"github.com/spate-dev/spate/internal/output/progress"
	"github.com/spate-dev/spate/internal/runner"
	"github.com/spate-dev/spate/result"
)

func init() {
	runExtensions = append(runExtensions, func() runExtension { return &reportExt{} })
}

// reportExt adds report outputs to spate run (--report, --report-md,
// --junit, --series-csv) and draws live progress in place on a terminal.
type reportExt struct {
	html, markdown, junit, seriesCSV string
}

func (x *reportExt) addFlags(fl *pflag.FlagSet) {
	fl.StringVar(&x.html, "report", "", "also write a self-contained HTML report to this file")
	fl.StringVar(&x.markdown, "report-md", "", "also write a Markdown summary (for a pull-request comment) to this file")
	fl.StringVar(&x.junit, "junit", "", "also write the thresholds as JUnit XML to this file")
	fl.StringVar(&x.seriesCSV, "series-csv", "", "also write the per-second series as CSV to this file")
}

func (x *reportExt) before(*cobra.Command, *runFlags) (func(), error) { return nil, nil }

// reportLiveEvery is the longest interval between redraws of the live block.
const reportLiveEvery = time.Second

// after replaces the plain progress lines with a block redrawn in place
// when stderr is an interactive terminal and CI is not set.
func (x *reportExt) after(cmd *cobra.Command, f *runFlags, p *runner.Plan) error {
	if p.Progress == nil || f.quiet {
		return nil
	}
	w := cmd.ErrOrStderr()
	file, ok := w.(*os.File)
	if !progress.Interactive(ok && term.IsTerminal(int(file.Fd())), os.Getenv) {
		return nil
	}
	p.Progress = progress.For(w, true)
	p.ProgressEvery = min(p.ProgressEvery, reportLiveEvery)
	return nil
}

// finish writes the asked-for reports; it runs for partial and failed runs
// too, since their result exists.
func (x *reportExt) finish(cmd *cobra.Command, f *runFlags, res *result.Result, _ string) error {
	label := strings.TrimSuffix(filepath.Base(f.out), ".json")
	if label == "" || label == "." {
		label = "run"
	}
	var errs []error
	for _, o := range []struct{ path, format, flag string }{
		{x.html, "html", "--report"}, {x.markdown, "markdown", "--report-md"},
		{x.junit, "junit", "--junit"}, {x.seriesCSV, "csv", "--series-csv"},
	} {
		if o.path == "" {
			continue
		}
		var buf bytes.Buffer
		err := writeReport(&buf, o.format, []*result.Result{res}, []string{label}, "")
		if err == nil {
			err = writeReportFile(o.path, buf.Bytes())
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s %s: %w", o.flag, o.path, err))
			continue
		}
		if !f.quiet {
			reportWritten(cmd.OutOrStdout(), o.format, o.path)
		}
	}
	return errors.Join(errs...)
}

func reportWritten(w io.Writer, format, path string) {
	fmt.Fprintf(w, "%s report written to %s\n", format, path)
}
