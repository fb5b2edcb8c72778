package probe

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spate-dev/spate/result"
)

// WriteFigures prints a stage's probe figures as a table: one line per
// family and one for all of them, each rate as k/n, percentage and
// interval, then the warnings.
func WriteFigures(w io.Writer, stage string, p *result.Probes) error {
	fmt.Fprintf(w, "probes [%s]  %s at %.0f %% of requests, %.0f %% intervals (Wilson)\n", stage, strings.Join(p.Suites, ","), 100*p.Fraction, 100*p.Confidence)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "family\tOWASP\tjudged\tfailed\tattack success\tintercepted\tleaked\tfalse refusals\t")
	row := func(name, owasp string, f result.ProbeFigures) {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\t%s\t%s\t%s\t\n", name, owasp, f.Evaluated, f.Failed,
			cell(f.AttackSuccess, true), cell(f.Interception, false), cell(f.Leak, true), cell(f.FalseRefusal, true))
	}
	for _, f := range p.Families {
		owasp := strings.Join(f.OWASP, ",")
		if owasp == "" {
			owasp = "-"
		}
		row(f.Family, owasp, f.ProbeFigures)
	}
	row("all", "", p.Overall)
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, warn := range p.Warnings {
		fmt.Fprintf(w, "  ! %s\n", warn)
	}
	_, err := fmt.Fprintln(w)
	return err
}

// cell renders a rate as "k/n pp % [lo–hi]", or "-" when nothing was
// measured; ci adds the interval.
func cell(r *result.ProbeRate, ci bool) string {
	if r == nil {
		return "-"
	}
	s := fmt.Sprintf("%d/%d %5.1f %%", r.K, r.N, 100*r.Rate)
	if ci {
		s += fmt.Sprintf(" [%.1f–%.1f]", 100*r.Low, 100*r.High)
	}
	return s
}

// WriteSuites lists suites: name, family, kind, number of probes, OWASP
// ids and techniques; verbose adds every probe and its detectors.
func WriteSuites(w io.Writer, suites []*Suite, verbose bool) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SUITE\tFAMILY\tKIND\tPROBES\tOWASP\tTECHNIQUES")
	for _, s := range suites {
		var techs []string
		for _, p := range s.Probes {
			if !slices.Contains(techs, p.Technique) {
				techs = append(techs, p.Technique)
			}
		}
		owasp := strings.Join(s.OWASP, ",")
		if owasp == "" {
			owasp = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\n", s.Name, s.Family, s.Kind, len(s.Probes), owasp, strings.Join(techs, ","))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if !verbose {
		return nil
	}
	for _, s := range suites {
		fmt.Fprintf(w, "\n%s: %s\n", s.Name, s.Description)
		for _, p := range s.Probes {
			var dets []string
			for _, d := range p.planted {
				dets = append(dets, "planted "+d.String())
			}
			for _, d := range p.detectors {
				dets = append(dets, d.String())
			}
			if len(dets) == 0 {
				dets = append(dets, "refusal only")
			}
			fmt.Fprintf(w, "  %-24s %-20s %s\n", p.ID, p.Technique, strings.Join(dets, "; "))
		}
	}
	return nil
}
