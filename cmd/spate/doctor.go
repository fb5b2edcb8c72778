package main

import (
	"errors"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/spate-dev/spate/internal/doctor"
)

func newDoctorCmd() *cobra.Command {
	var o doctor.Options
	c := &cobra.Command{
		Use:     "doctor --target URL",
		Short:   "Check what a server is and does before loading it, and the flags that implies",
		Long:    help("doctor"),
		Example: help("doctor.example"),
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := o.Prepare(os.Getenv)
			if err != nil {
				return usageErr("%w", err)
			}
			r, err := doctor.Run(cmd.Context(), cfg)
			if errors.Is(err, doctor.ErrBadTarget) {
				return usageErr("%w", err)
			} else if err != nil {
				return err
			}
			return o.Write(cmd.OutOrStdout(), r)
		},
	}
	fl := c.Flags()
	fl.StringVar(&o.Target, "target", "", "the API's base URL, e.g. http://127.0.0.1:8000/v1 (required)")
	fl.StringVar(&o.Model, "model", "", "model to ask (default: the first the server lists)")
	fl.StringVar(&o.APIKey, "api-key", "", "API key (default $OPENAI_API_KEY); never written anywhere")
	fl.StringArrayVar(&o.HeaderLines, "header", nil, "extra request header 'Name: value' (repeatable)")
	fl.DurationVar(&o.Timeout, "timeout", 10*time.Second, "time allowed for each request")
	fl.StringVar(&o.Format, "format", "text", "text (a table) or json")
	return c
}
