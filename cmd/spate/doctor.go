package main

import (
	"errors"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/spate-dev/spate/internal/doctor"
)

func newDoctorCmd() *cobra.Command {
	var (
		cfg     doctor.Config
		headers []string
		format  string
	)
	c := &cobra.Command{
		Use:     "doctor --target URL",
		Short:   "Check what a server is and does before loading it, and the flags that implies",
		Long:    help("doctor"),
		Example: help("doctor.example"),
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if cfg.Target == "" {
				return usageErr("--target is required: the API's base URL, e.g. http://127.0.0.1:8000/v1")
			}
			if format != "text" && format != "json" {
				return usageErr("--format %q: want text or json", format)
			}
			if cfg.APIKey == "" {
				cfg.APIKey = os.Getenv("OPENAI_API_KEY")
			}
			var err error
			if cfg.Headers, err = doctor.ParseHeaders(headers); err != nil {
				return usageErr("%w", err)
			}
			r, err := doctor.Run(cmd.Context(), cfg)
			if errors.Is(err, doctor.ErrBadTarget) {
				return usageErr("%w", err)
			} else if err != nil {
				return err
			}
			if format == "json" {
				return doctor.WriteJSON(cmd.OutOrStdout(), r)
			}
			return doctor.WriteText(cmd.OutOrStdout(), r)
		},
	}
	fl := c.Flags()
	fl.StringVar(&cfg.Target, "target", "", "the API's base URL, e.g. http://127.0.0.1:8000/v1 (required)")
	fl.StringVar(&cfg.Model, "model", "", "model to ask (default: the first the server lists)")
	fl.StringVar(&cfg.APIKey, "api-key", "", "API key (default $OPENAI_API_KEY); never written anywhere")
	fl.StringArrayVar(&headers, "header", nil, "extra request header 'Name: value' (repeatable)")
	fl.DurationVar(&cfg.Timeout, "timeout", 10*time.Second, "time allowed for each request")
	fl.StringVar(&format, "format", "text", "text (a table) or json")
	return c
}
