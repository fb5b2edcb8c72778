package main

import (
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

func TestVersion(t *testing.T) {
	code, stdout, stderr := cli(t, context.Background(), "--version")
	re := regexp.MustCompile(`^spate \S+ \(commit ([0-9a-f]{7}|unknown), go1\.\d+\S*\)\n$`)
	if code != 0 || !re.MatchString(stdout) {
		t.Fatalf("spate --version: exit %d, %q (stderr %q); want a line like %q", code, stdout, stderr, "spate 0.1.0-dev (commit abc1234, go1.26.8)")
	}
}

// TestFlagConventions: across every command, an output file is -o/--out,
// and --seed is one type; the commands that write a result take -o.
func TestFlagConventions(t *testing.T) {
	var walk func(c *cobra.Command)
	outs := map[string]bool{}
	walk = func(c *cobra.Command) {
		c.Flags().VisitAll(func(f *pflag.Flag) {
			switch f.Name {
			case "out":
				outs[c.CommandPath()] = true
				if f.Shorthand != "o" {
					t.Errorf("%s --out has no -o", c.CommandPath())
				}
			case "seed":
				if f.Value.Type() != "uint64" {
					t.Errorf("%s --seed is %s, want uint64", c.CommandPath(), f.Value.Type())
				}
			}
		})
		if strings.Contains(c.Long+c.Example, "{{") {
			t.Errorf("%s: a placeholder is left in its help", c.CommandPath())
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(newRootCmd())
	for _, want := range []string{"spate run", "spate capacity", "spate probe run", "spate report", "spate merge", "spate workload build", "spate vector gen"} {
		if !outs[want] {
			t.Errorf("%s has no -o/--out", want)
		}
	}
}

// TestOutShorthand: -o names the result file of run.
func TestOutShorthand(t *testing.T) {
	if x := experimentOf(t, "--target", "http://h/v1", "--rate", "1", "-o", "x.json"); x.Outputs.Result != "x.json" {
		t.Errorf("-o x.json: result %q", x.Outputs.Result)
	}
	code, _, stderr := cli(t, context.Background(), "capacity", "--target", "http://127.0.0.1:1/v1", "-o", "x.json", "--method", "guess")
	if code != exitUsage || !strings.Contains(stderr, "--method") {
		t.Errorf("capacity -o: exit %d %s", code, stderr)
	}
}

// TestUsageErrorsSuggest: an unknown subcommand is a usage error (exit 2,
// it was 1) with cobra's suggestion, and an unknown flag near a known one
// says which was meant.
func TestUsageErrorsSuggest(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"rn"}, "Did you mean this?\n\trun"},
		{[]string{"run", "--concurrencyy", "3"}, "did you mean --concurrency?"},
		{[]string{"compare", "--alpah", "0.05", "a.json", "b.json"}, "did you mean --alpha?"},
	} {
		code, _, stderr := cli(t, context.Background(), c.args...)
		if code != exitUsage || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, stderr %q: want %d and %q", c.args, code, stderr, exitUsage, c.want)
		}
	}
}
