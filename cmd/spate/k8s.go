package main

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/spate-dev/spate/experiment"
	"github.com/spate-dev/spate/internal/shard/k8sjob"
)

func init() { commands = append(commands, newK8sCmd) }

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
		Use:   "job EXPERIMENT.yaml --shards N",
		Short: "Print an Indexed Job that runs an experiment as N shards",
		Long: `Print, as YAML for kubectl apply, a ConfigMap holding the experiment file and an
Indexed Job of N pods: pod I runs shard I of N (spate run reads
JOB_COMPLETION_INDEX and SPATE_SHARDS), all starting at the same time
(--start-at, --start-delay from now), each writing its result to
/results/shard-I.json and printing it on stdout for kubectl logs.
Merge the N results with spate merge. Nothing is sent to a cluster.`,
		Example: `  spate k8s job exp.yaml --shards 4 --image registry.example/spate:0.1.0 > job.yaml
  kubectl apply -f job.yaml && kubectl wait --for=condition=complete job/spate-exp --timeout=30m
  for i in 0 1 2 3; do
    kubectl logs -l batch.kubernetes.io/job-completion-index=$i,app.kubernetes.io/instance=spate-exp --tail=-1 > shard-$i.log
  done
  spate merge shard-*.log -o merged.json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runK8sJob(cmd, args[0], o, delay)
		},
	}
	fl := c.Flags()
	fl.IntVar(&o.Shards, "shards", 0, "number of pods, each sending 1/N of the load (required)")
	fl.StringVar(&o.Image, "image", "spate:"+version, "container image with the spate binary on its PATH")
	fl.StringVar(&o.Namespace, "namespace", "", "namespace of the objects (default: kubectl's)")
	fl.StringVar(&o.Name, "name", "", "Job name (default: spate-EXPERIMENT)")
	fl.DurationVar(&delay, "start-delay", 30*time.Second, "pods start sending this long after the manifest is generated (0: no common start time)")
	fl.StringVar(&o.Target, "target", "", "override the experiment's target URL (e.g. an in-cluster Service)")
	fl.StringVar(&o.APIKeySecret, "api-key-secret", "", "Secret whose key api-key becomes $OPENAI_API_KEY in the pods")
	fl.StringVar(&o.ResultsClaim, "results-claim", "", "PersistentVolumeClaim to mount at /results (default: an emptyDir; read results from the logs)")
	return c
}

func runK8sJob(cmd *cobra.Command, path string, o k8sjob.Options, delay time.Duration) error {
	if o.Shards < 1 {
		return usageErr("--shards N is required: the number of pods, at least 1")
	}
	if delay < 0 {
		return usageErr("--start-delay %s: must not be negative", delay)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("reading experiment: %w", err)
	}
	// Refuse a file spate run would refuse, before it reaches a cluster.
	if _, err := experiment.Parse(b, path); err != nil {
		return err
	}
	o.Experiment = b
	if o.Name == "" {
		o.Name = k8sjob.NameFor(path)
	}
	if delay > 0 {
		at := time.Now().Add(delay).UTC().Truncate(time.Second).Add(time.Second)
		o.StartAt = &at
	}
	cm, job, err := k8sjob.Build(o)
	if err != nil {
		return usageErr("%v", err)
	}
	header := []string{
		fmt.Sprintf("spate k8s job %s: %d shards", path, o.Shards),
		fmt.Sprintf("kubectl apply -f THIS.yaml; kubectl wait --for=condition=complete job/%s --timeout=1h", o.Name),
		fmt.Sprintf("for i in $(seq 0 %d); do kubectl logs -l batch.kubernetes.io/job-completion-index=$i,app.kubernetes.io/instance=%s --tail=-1 > shard-$i.log; done", o.Shards-1, o.Name),
		"spate merge shard-*.log -o merged.json",
	}
	if o.StartAt != nil {
		header = append(header, "all pods start sending at "+o.StartAt.Format(time.RFC3339)+": apply this manifest before then")
	}
	return k8sjob.Write(cmd.OutOrStdout(), strings.Join(header, "\n"), cm, job)
}
