package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/spate-dev/spate"
	"github.com/spate-dev/spate/experiment"
	"github.com/spate-dev/spate/internal/capread"
	"github.com/spate-dev/spate/internal/shard/k8sjob"
)

func newK8sCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "k8s",
		Short: "Generate Kubernetes manifests that run spate",
	}
	c.AddCommand(newK8sJobCmd())
	return c
}

func newK8sJobCmd() *cobra.Command {
	var (
		o     k8sjob.Options
		delay time.Duration
	)
	c := &cobra.Command{
		Use:     "job EXPERIMENT.yaml --shards N",
		Short:   "Print an Indexed Job that runs an experiment as N shards",
		Long:    help("k8s-job"),
		Example: help("k8s-job.example"),
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runK8sJob(cmd, args[0], o, delay)
		},
	}
	fl := c.Flags()
	fl.IntVar(&o.Shards, "shards", 0, "number of pods, each sending 1/N of the load (required)")
	fl.StringVar(&o.Image, "image", "spate:"+spate.Version, "container image with the spate binary on its PATH")
	fl.StringVar(&o.Namespace, "namespace", "", "namespace of the objects (default: kubectl's)")
	fl.StringVar(&o.Name, "name", "", "Job name (default: spate-EXPERIMENT)")
	fl.DurationVar(&delay, "start-delay", 30*time.Second, "pods start sending this long after the manifest is generated (0: no common start time)")
	fl.StringVar(&o.Target, "target", "", "override the experiment's target URL (e.g. an in-cluster Service)")
	fl.StringVar(&o.APIKeySecret, "api-key-secret", "", "Secret whose key api-key becomes $OPENAI_API_KEY in the pods")
	fl.StringVar(&o.ResultsClaim, "results-claim", "", "PersistentVolumeClaim to mount at /results (default: an emptyDir; read results from the logs)")
	return c
}

func runK8sJob(cmd *cobra.Command, path string, o k8sjob.Options, delay time.Duration) error {
	if err := k8sjob.CheckFlags(o.Shards, delay); err != nil {
		return usageErr("%w", err)
	}
	b, err := capread.ReadFile(cmd.Context(), path, capread.SettingsLimit, "")
	if err != nil {
		return fmt.Errorf("reading experiment: %w", err)
	}
	// Refuse a file spate run would refuse, before it reaches a cluster.
	e, err := experiment.Parse(b, path)
	if err == nil {
		err = spate.Validate(e)
	}
	if err != nil {
		return err
	}
	if err := k8sjob.CheckSecrets(e.Target.Headers, e.Target.URL, o.Target); err != nil {
		return usageErr("%v", err)
	}
	o.Experiment = b
	o.Complete(path, delay, time.Now())
	cm, job, err := k8sjob.Build(o)
	if err != nil {
		return usageErr("%v", err)
	}
	return k8sjob.Write(cmd.OutOrStdout(), k8sjob.Header(path, o), cm, job)
}
