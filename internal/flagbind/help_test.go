package flagbind

import (
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/spate-dev/spate/experiment"
)

// TestGrouped: help lists the flags under their groups' headings, in the
// table's order of groups and of flags within each (the common first),
// a command's own flags last; hidden flags stay hidden. It listed them in
// one alphabetical wall.
func TestGrouped(t *testing.T) {
	table := []Binding{
		{Group: "Target"},
		{Name: "target", Usage: "the URL", X: func(x *experiment.Experiment) any { return &x.Target.URL }},
		{Name: "api", Usage: "the API", X: func(x *experiment.Experiment) any { return &x.Target.API }},
		{Group: "Load"},
		{Name: "rate", Usage: "the rate", S: func(s *experiment.Stage) any { return &s.Rate }},
		{Name: "duration", Usage: "the duration", S: func(s *experiment.Stage) any { return &s.Duration }},
		{Name: "arrival", Usage: "the arrivals", S: func(s *experiment.Stage) any { return &s.Arrival }},
	}
	fs := pflag.NewFlagSet("run", pflag.ContinueOnError)
	Register(fs, table, &experiment.Experiment{Stages: []experiment.Stage{{}}})
	fs.String("workload", "", "a workload file")
	fs.Bool("secret", false, "hidden")
	_ = fs.MarkHidden("secret")
	got := Grouped(fs)
	var order []string
	for _, line := range strings.Split(got, "\n") {
		if f := strings.Fields(line); len(f) > 0 {
			order = append(order, f[0])
		}
	}
	want := "Target --target --api Load --rate --duration --arrival Other --workload"
	if strings.Join(order, " ") != want {
		t.Errorf("help lists %q, want %q:\n%s", strings.Join(order, " "), want, got)
	}
	if tmpl := GroupedTemplate("x\nFlags:\n{{.LocalFlags.FlagUsages | trimTrailingWhitespaces}}{{end}}"); !strings.Contains(tmpl, "groupedFlags .LocalFlags") {
		t.Errorf("template %q does not list the flags by group", tmpl)
	}
}
