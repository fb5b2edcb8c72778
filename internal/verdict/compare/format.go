package compare

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"
)

// Formats lists the output formats of Write.
var Formats = []string{"table", "markdown", "json"}

// Write writes the report in the given format: "table" (aligned text),
// "markdown" or "json".
func Write(w io.Writer, rep *Report, format string) error {
	switch format {
	case "table", "":
		return writeTable(w, rep)
	case "markdown":
		return writeMarkdown(w, rep)
	case "json":
		enc := json.NewEncoder(w)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			return fmt.Errorf("encoding the comparison: %w", err)
		}
		return nil
	}
	return fmt.Errorf("unknown format %q (use %s)", format, strings.Join(Formats, ", "))
}

func header(rep *Report) []string {
	conf := fmt.Sprintf("%g %%", 100*(1-rep.Alpha))
	lines := []string{fmt.Sprintf("base: %s", strings.Join(rep.Base, ", ")), fmt.Sprintf("new:  %s", strings.Join(rep.New, ", "))}
	if len(rep.BaseRef) > 0 {
		lines = append(lines, fmt.Sprintf("normalised by reference runs: base %s, new %s", strings.Join(rep.BaseRef, ", "), strings.Join(rep.NewRef, ", ")))
	}
	if rep.SUTVersions != "" {
		lines = append(lines, "sut_version: "+rep.SUTVersions)
	}
	if rep.Replicates != "" {
		lines = append(lines, "replicates: "+rep.Replicates)
	}
	win := "windows chosen per stage from the runs' length"
	if rep.WindowS > 0 {
		win = fmt.Sprintf("windows of %d s", rep.WindowS)
	}
	lines = append(lines, fmt.Sprintf("α=%g, intervals at %s, %s; a change is called when significant and beyond its margin", rep.Alpha, conf, win))
	return lines
}

func footer(rep *Report) []string {
	var lines []string
	for _, d := range rep.Differences {
		lines = append(lines, "differs: "+d)
	}
	for _, w := range rep.Warnings {
		lines = append(lines, "warning: "+w)
	}
	// A warning several metrics share is printed once, naming them.
	for _, st := range rep.Stages {
		var order []string
		who := map[string][]string{}
		for _, r := range st.Rows {
			for _, w := range r.Warnings {
				if _, seen := who[w]; !seen {
					order = append(order, w)
				}
				who[w] = append(who[w], r.Metric)
			}
		}
		for _, w := range order {
			lines = append(lines, fmt.Sprintf("warning: %s/%s: %s", st.Name, strings.Join(who[w], ","), w))
		}
		for _, r := range st.Rows {
			if r.MeasurementError != nil && r.MeasurementError.Note != "" {
				lines = append(lines, fmt.Sprintf("note: %s/%s: %s", st.Name, r.Metric, r.MeasurementError.Note))
			}
		}
	}
	switch {
	case len(rep.Regressed) > 0:
		lines = append(lines, "REGRESSED (gated; "+family(rep)+"): "+strings.Join(rep.Regressed, ", "))
	case rep.Inconclusive != "":
		lines = append(lines, "inconclusive: "+rep.Inconclusive)
	case rep.Family == 0:
		lines = append(lines, "no gated metric regressed (nothing gated)")
	default:
		lines = append(lines, "no gated metric regressed ("+family(rep)+")")
	}
	return lines
}

// family says with what confidence the gated rows were judged, and how:
// "99 % family-wise confidence, Holm–Bonferroni over 10 gated rows".
func family(rep *Report) string {
	rows := "rows"
	if rep.Family == 1 {
		rows = "row"
	}
	return fmt.Sprintf("%g %% family-wise confidence, Holm–Bonferroni over %d gated %s", 100*(1-rep.Alpha), rep.Family, rows)
}

// stageLine describes how a stage was compared.
func stageLine(st Stage) string {
	method := ""
	if len(st.Rows) > 0 {
		method = st.Rows[0].Method
	}
	if st.WindowS > 0 && (method == "welch+block-bootstrap" || method == "ref-normalised block-bootstrap") {
		method += fmt.Sprintf(", %d windows of %d s, lag-1 autocorrelation %.2f", st.Windows, st.WindowS, st.Lag1)
	}
	return fmt.Sprintf("stage %s (%s)", st.Name, method)
}

func cells(r Row) []string {
	gate := ""
	if r.Gated {
		gate = "*"
	}
	p := fmt.Sprintf("%.3g", r.P)
	interval := "[" + pctUnit(r.ChangeLo, r.Absolute, r.Unit) + ", " + pctUnit(r.ChangeHi, r.Absolute, r.Unit) + "]"
	if r.Verdict == Unknown {
		p, interval = "-", "-"
	}
	return []string{r.Metric + gate, value(r.Base, r.Unit), value(r.New, r.Unit), pctUnit(r.Change, r.Absolute, r.Unit),
		interval, "±" + marginText(r.Margin, r.Absolute, r.Unit), p,
		fmt.Sprintf("%d/%d", r.NBase, r.NNew), r.Verdict}
}

var columns = []string{"metric", "base", "new", "change", "interval", "margin", "p", "n", "verdict"}

func writeTable(w io.Writer, rep *Report) error {
	var b strings.Builder
	for _, l := range header(rep) {
		b.WriteString(l + "\n")
	}
	for _, st := range rep.Stages {
		fmt.Fprintf(&b, "\n%s\n", stageLine(st))
		tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, strings.Join(columns, "\t"))
		for _, r := range st.Rows {
			fmt.Fprintln(tw, strings.Join(cells(r), "\t"))
		}
		tw.Flush()
	}
	b.WriteString("\n* gated: a regression exits 3\n")
	for _, l := range footer(rep) {
		b.WriteString(l + "\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func writeMarkdown(w io.Writer, rep *Report) error {
	var b strings.Builder
	b.WriteString("## spate compare\n\n")
	for _, l := range header(rep) {
		b.WriteString("- " + l + "\n")
	}
	for _, st := range rep.Stages {
		fmt.Fprintf(&b, "\n### %s\n\n", stageLine(st))
		b.WriteString("| " + strings.Join(columns, " | ") + " |\n")
		b.WriteString("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |\n")
		for _, r := range st.Rows {
			c := cells(r)
			if r.Verdict == Regressed {
				c[8] = "**" + c[8] + "**"
			}
			b.WriteString("| " + strings.Join(c, " | ") + " |\n")
		}
	}
	b.WriteString("\n\\* gated: a regression exits 3\n\n")
	for _, l := range footer(rep) {
		b.WriteString("- " + l + "\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// value formats a side's figure and its interval: "200.4 [196.9–203.8] ms".
func value(v Value, unit string) string {
	s := bare(v.Center, unit)
	if v.Lo != nil && v.Hi != nil {
		s += " [" + bare(*v.Lo, unit) + "–" + bare(*v.Hi, unit) + "]"
	}
	switch unit {
	case "":
		return s + " %"
	}
	return s + " " + unit
}

// bare formats a number of the unit without the unit.
func bare(x float64, unit string) string {
	switch unit {
	case "":
		return fmt.Sprintf("%.2f", 100*x)
	case "ms":
		return fmt.Sprintf("%.1f", x)
	}
	return fmt.Sprintf("%.2f", x)
}

// pctUnit formats a change: a signed percentage, percentage points for
// fractions, or a signed number in the unit for other absolute changes.
func pctUnit(x float64, absolute bool, unit string) string {
	if absolute && unit != "" && finite(x) {
		return fmt.Sprintf("%+.2f %s", x, unit)
	}
	return pct(x, absolute)
}

// pct formats a change: a signed percentage, or percentage points when
// absolute.
func pct(x float64, absolute bool) string {
	if math.IsInf(x, 0) || math.IsNaN(x) {
		return "n/a"
	}
	if absolute {
		return fmt.Sprintf("%+.2f pp", 100*x)
	}
	return fmt.Sprintf("%+.1f %%", 100*x)
}
