package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

func TestK8sJobCommand(t *testing.T) {
	exp := filepath.Join("..", "..", "examples", "baseline-peak.yaml")
	before := time.Now()
	code, stdout, stderr := cli(t, context.Background(), "k8s", "job", exp, "--shards", "5", "--image", "registry.example/spate:1", "--namespace", "load", "--start-delay", "45s")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	docs := strings.Split(stdout, "\n---\n")
	if len(docs) != 2 || !strings.HasPrefix(stdout, "# spate k8s job") {
		t.Fatalf("output:\n%s", stdout)
	}
	var cm corev1.ConfigMap
	var job batchv1.Job
	if err := yaml.UnmarshalStrict([]byte(docs[0]), &cm); err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict([]byte(docs[1]), &job); err != nil {
		t.Fatal(err)
	}
	s := job.Spec
	if job.Name != "spate-baseline-peak" || job.Namespace != "load" || *s.CompletionMode != batchv1.IndexedCompletion ||
		*s.Completions != 5 || *s.Parallelism != 5 || !strings.Contains(cm.Data["experiment.yaml"], "kind: Experiment") {
		t.Fatalf("job %s/%s %+v, configmap %v", job.Namespace, job.Name, s, cm.Data)
	}
	c := s.Template.Spec.Containers[0]
	if c.Env[0].Name != "SPATE_SHARDS" || c.Env[0].Value != "5" {
		t.Fatalf("env %+v", c.Env)
	}
	args := strings.Join(c.Args, " ")
	i := strings.Index(args, "--start-at ")
	if i < 0 {
		t.Fatalf("args %s: no --start-at", args)
	}
	at, err := time.Parse(time.RFC3339, strings.Fields(args[i:])[1])
	if err != nil {
		t.Fatal(err)
	}
	if d := at.Sub(before); d < 45*time.Second || d > 47*time.Second+time.Since(before) {
		t.Fatalf("--start-at %s is %v after the command ran, want 45 s (+1 s rounding)", at, d)
	}

	// An experiment whose target carries an Authorization header: it
	// would be copied into the ConfigMap in plain text.
	headers := filepath.Join(t.TempDir(), "headers.yaml")
	if err := os.WriteFile(headers, []byte("apiVersion: spate/v1\nkind: Experiment\ntarget: {url: http://svc:8000/v1, headers: {Authorization: Bearer sk-planted}}\nstages: [{name: a, rate: 1, duration: 1s}]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []struct {
		args []string
		code int
	}{
		{[]string{"k8s", "job", exp}, exitUsage},                                        // no --shards
		{[]string{"k8s", "job", exp, "--shards", "2", "--name", "Bad_Name"}, exitUsage}, // invalid name
		{[]string{"k8s", "job", "nope.yaml", "--shards", "2"}, exitError},
		// A credential in the target URL would be stored in the Job's
		// arguments in plain text.
		{[]string{"k8s", "job", exp, "--shards", "2", "--target", "http://u:pw-planted@svc:8000/v1"}, exitUsage},
		{[]string{"k8s", "job", headers, "--shards", "2"}, exitUsage},
	} {
		if code, _, stderr := cli(t, context.Background(), bad.args...); code != bad.code {
			t.Errorf("%v: exit %d, want %d (%s)", bad.args, code, bad.code, stderr)
		}
	}
}
