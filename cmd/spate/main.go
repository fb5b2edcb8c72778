// Command spate is a load tester and benchmark for AI services.
//
// This package is the command line only: its flags fill an
// experiment.Experiment (run.go: one table from flag to field), it calls
// the library (package spate and the internal packages of each command),
// prints, and maps the outcome to an exit code. It holds no feature logic.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/spate-dev/spate"
	"github.com/spate-dev/spate/internal/cpuprofile"
	"github.com/spate-dev/spate/internal/crash"
	"github.com/spate-dev/spate/internal/flagbind"
	"github.com/spate-dev/spate/internal/interrupt"
	"github.com/spate-dev/spate/internal/output/report"
	"github.com/spate-dev/spate/internal/scrub"
	"github.com/spate-dev/spate/internal/verdict/capacity"
	"github.com/spate-dev/spate/internal/verdict/compare"
	"github.com/spate-dev/spate/internal/workload/logbuild"
)

// Exit codes promised by docs/design.md §4 (see spate.ExitCode).
const (
	exitOK        = spate.ExitOK
	exitError     = spate.ExitError
	exitUsage     = spate.ExitUsage
	exitThreshold = spate.ExitThresholds
	// exitInvalid: no trustworthy verdict (an invalid measurement, a
	// comparison or a search that could not judge); results are written.
	exitInvalid = spate.ExitUntrustworthy
)

// exitErr carries the exit code a failure should end the process with.
type exitErr struct {
	code int
	err  error
}

func (e *exitErr) Error() string { return e.err.Error() }
func (e *exitErr) Unwrap() error { return e.err }

func usageErr(format string, a ...any) error {
	return &exitErr{code: exitUsage, err: fmt.Errorf(format, a...)}
}

func main() {
	tuneGC()
	crash.ByAbort()
	ctx, stop := interrupt.Watch(context.Background(), os.Stderr)
	code := execute(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// execute runs the command line args and returns the process exit code:
// a usage error (an unknown command too) exits 2, but 1 after an interrupt,
// which stopped a read of the command's files rather than found them wrong.
func execute(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	root := newRootCmd()
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	usage := exitUsage
	if ctx.Err() != nil {
		usage = exitError
	}
	var ee *exitErr
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, spate.ErrThresholdsFailed):
		return exitThreshold // the summary says which
	case errors.As(err, &ee):
		if ee.code == exitThreshold || ee.code == exitInvalid {
			return ee.code // the output's last line says why
		}
		fmt.Fprintf(stderr, "spate: %v\n", redact(ee.err))
		if ee.code == exitUsage {
			return usage
		}
		return ee.code
	case errors.Is(err, spate.ErrInvalid), errors.Is(err, report.ErrUsage), errors.Is(err, capacity.ErrUsage), errors.Is(err, compare.ErrUsage), errors.Is(err, logbuild.ErrUsage),
		strings.HasPrefix(err.Error(), "unknown command "):
		fmt.Fprintf(stderr, "spate: %v\n", redact(err))
		return usage
	}
	fmt.Fprintf(stderr, "spate: %v\n", redact(err))
	return spate.ExitCode(err)
}

// redact masks what looks secret in an error of any command (URL userinfo,
// queries, password=, bearer tokens; run's key and headers are masked
// already) and escapes the control characters of server text it quotes.
func redact(err error) string { return scrub.Lines((*scrub.Redactor)(nil).String(err.Error())) }

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:           "spate",
		Short:         "Load tester and benchmark for AI services",
		Version:       spate.BuildInfo().String(),
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetVersionTemplate("{{.Version}}\n")
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return &exitErr{code: exitUsage, err: fmt.Errorf("%w%s\nrun '%s --help' for usage", err, flagbind.Suggest(c.Flags(), err), c.CommandPath())}
	})
	root.AddCommand(newRunCmd(), newSimCmd(), newQuickstartCmd(), newValidateCmd(), newInitCmd(), newSchemaCmd(),
		newReportCmd(), newCompareCmd(), newCapacityCmd(), newWorkloadCmd(), newChaosCmd(), newProbeCmd(),
		newVectorCmd(), newMergeCmd(), newK8sCmd(), newDoctorCmd())
	var profile string
	root.PersistentFlags().StringVar(&profile, "cpuprofile", "", "write a CPU profile to this file (for bench/ scripts)")
	_ = root.PersistentFlags().MarkHidden("cpuprofile")
	stopProfile := func() {}
	root.PersistentPreRunE = func(*cobra.Command, []string) (err error) {
		stopProfile, err = cpuprofile.Start(profile)
		return err
	}
	root.PersistentPostRun = func(*cobra.Command, []string) { stopProfile() }
	return root
}
