package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/spate-dev/spate"
	"github.com/spate-dev/spate/experiment"
)

func newSchemaCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "schema",
		Short: "Print the JSON Schema of experiment files, for editors",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := cmd.OutOrStdout().Write(experiment.Schema())
			return err
		},
	}
}

func newInitCmd() *cobra.Command {
	var force bool
	c := &cobra.Command{
		Use:   "init [FILE]",
		Short: "Write a commented starter experiment file (default experiment.yaml)",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			path := "experiment.yaml"
			if len(args) == 1 {
				path = args[0]
			}
			if err := experiment.WriteStarter(path, force); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "wrote %s: edit it, then spate validate %s and spate run %s\n", path, path, path)
			return nil
		},
	}
	c.Flags().BoolVar(&force, "force", false, "overwrite an existing file")
	return c
}

func newValidateCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "validate EXPERIMENT.yaml...",
		Short: "Check experiment files: unknown keys, types and values, with file:line:column",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			bad := 0
			for _, path := range args {
				e, err := experiment.LoadContext(cmd.Context(), path)
				if err == nil {
					err = spate.Validate(e)
				}
				if err != nil {
					fmt.Fprintln(cmd.ErrOrStderr(), err)
					bad++
					continue
				}
				fmt.Fprintf(cmd.OutOrStdout(), "%s: ok\n", path)
			}
			if bad > 0 {
				return &exitErr{code: exitUsage, err: fmt.Errorf("%d of %d experiment files are invalid", bad, len(args))}
			}
			return nil
		},
	}
}
