package main

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/spate-dev/spate/internal/output/report"
	"github.com/spate-dev/spate/result"
)

func newReportCmd() *cobra.Command {
	var out, format, title string
	c := &cobra.Command{
		Use:     "report RESULT.json [MORE.json...] -o FILE",
		Short:   "Turn result files into an HTML report, Markdown, JUnit XML or CSV",
		Long:    help("report"),
		Example: help("report.example"),
		Args:    cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runReport(cmd, args, out, format, title)
		},
	}
	c.Flags().StringVarP(&out, "out", "o", "", "file to write (- for stdout; default report.html, or stdout for text formats)")
	c.Flags().StringVar(&format, "format", "", "html, markdown, junit, csv or records-csv (default: from -o's extension)")
	c.Flags().StringVar(&title, "title", "", "title of the HTML report")
	return c
}

func runReport(cmd *cobra.Command, args []string, out, format, title string) error {
	if out == "" && format != "" && format != "html" {
		out = "-"
	}
	format, err := report.Format(format, out, args)
	if err != nil {
		return err
	}
	if out == "" {
		out = "report.html"
	}
	var buf bytes.Buffer
	if format == "records-csv" {
		err = report.RecordsCSVFiles(&buf, args)
	} else {
		results := make([]*result.Result, len(args))
		labels := make([]string, len(args))
		for i, in := range args {
			if results[i], err = result.ReadContext(cmd.Context(), in); err != nil {
				return err
			}
			labels[i] = strings.TrimSuffix(filepath.Base(in), ".json")
		}
		err = report.Write(&buf, format, results, labels, title)
	}
	if err != nil {
		return err
	}
	if out == "-" {
		_, err := cmd.OutOrStdout().Write(buf.Bytes())
		return err
	}
	if err := report.WriteFile(out, buf.Bytes()); err != nil {
		return err
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "%s report written to %s\n", format, out)
	return nil
}
