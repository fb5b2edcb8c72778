package doctor

import (
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"
)

// WriteText writes the report as a table, one finding a line, and the
// flags the findings imply.
func WriteText(w io.Writer, r *Report) error {
	fmt.Fprintf(w, "spate doctor: %s (%d requests, %.1f s)\n\n", r.Target, r.Requests, r.Seconds)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "check\tstatus\tfinding")
	for _, f := range r.Findings {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", f.Check, f.Status, f.Detail)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(r.Flags) == 0 {
		_, err := fmt.Fprintln(w, "\nno flag to add: spate's defaults fit this server")
		return err
	}
	fmt.Fprintln(w, "\nflags these findings imply:")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, f := range r.Flags {
		fmt.Fprintf(tw, "  %s\t%s\n", f.Flag, f.Why)
	}
	return tw.Flush()
}

// WriteJSON writes the report as indented JSON.
func WriteJSON(w io.Writer, r *Report) error {
	e := json.NewEncoder(w)
	e.SetIndent("", "  ")
	return e.Encode(r)
}
