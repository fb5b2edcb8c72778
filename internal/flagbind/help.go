package flagbind

import (
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// groupKey is the annotation holding a flag's group and the group's place
// in its table (see Binding.Group).
const groupKey = "spate_group"

// Grouped is the help text of fs's flags by group, in the groups' order in
// the binding table, each group's flags in the table's order (the common
// ones first) under a heading ("Target flags:"), the flags of no group
// last, alphabetical ("Other flags:"),
// as kubectl and k6 group theirs: a hundred flags in one alphabetical wall
// are not read.
func Grouped(fs *pflag.FlagSet) string {
	type flag struct {
		f  *pflag.Flag
		at int
	}
	type group struct {
		name  string
		order int
		flags []flag
	}
	byName := map[string]*group{}
	var groups []*group
	fs.VisitAll(func(f *pflag.Flag) { // alphabetical
		name, order, at := "Other", 1<<30, 0
		if a := f.Annotations[groupKey]; len(a) == 3 {
			name = a[0]
			order, _ = strconv.Atoi(a[1])
			at, _ = strconv.Atoi(a[2])
		}
		g := byName[name]
		if g == nil {
			g = &group{name: name, order: order}
			byName[name] = g
			groups = append(groups, g)
		}
		g.flags = append(g.flags, flag{f, at})
	})
	slices.SortStableFunc(groups, func(a, b *group) int { return a.order - b.order })
	var b strings.Builder
	for i, g := range groups {
		slices.SortStableFunc(g.flags, func(a, b flag) int { return a.at - b.at })
		set := pflag.NewFlagSet(g.name, pflag.ContinueOnError)
		set.SortFlags = false
		for _, f := range g.flags {
			set.AddFlag(f.f)
		}
		u := set.FlagUsages()
		if u == "" {
			continue // every flag of it hidden
		}
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(g.name + " flags:\n" + u)
	}
	return b.String()
}

// The template function is cobra's, process-wide: added once, before any
// command is built (adding it as each command is built raced with the
// help of commands built at the same time).
func init() { cobra.AddTemplateFunc("groupedFlags", Grouped) }

// GroupHelp makes c's help list its flags by group (see Grouped).
func GroupHelp(c *cobra.Command) {
	c.SetUsageTemplate(GroupedTemplate(c.UsageTemplate()))
}

// GroupedTemplate is a cobra usage template (tmpl, the command's) whose
// flags are listed by group: its local flags' list is replaced by the
// template function groupedFlags, Grouped (this package adds it to
// cobra's). A template without the list is returned as it is.
func GroupedTemplate(tmpl string) string {
	const list = "Flags:\n{{.LocalFlags.FlagUsages | trimTrailingWhitespaces}}"
	return strings.Replace(tmpl, list, "{{groupedFlags .LocalFlags | trimTrailingWhitespaces}}", 1)
}
