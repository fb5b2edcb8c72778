// Package k8sjob builds the Kubernetes objects that run a spate experiment
// as N shards: a ConfigMap holding the experiment file and an Indexed Job
// whose pod number I runs shard I of N (spate run reads the index from
// JOB_COMPLETION_INDEX and the count from SPATE_SHARDS). It builds them
// from the official API types and writes them as YAML; it talks to no
// cluster.
//
// Around the run: Kubernetes Jobs that run shards of it.
// The data flow: experiment → workload → schedule → engine → client → record
// → metrics → verdict → outputs (docs/design.md).
package k8sjob

import (
	"fmt"
	"io"
	"net/url"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"

	"github.com/spate-dev/spate/internal/scrub"
)

// Paths inside the pod.
const (
	ConfigDir      = "/config"
	ExperimentKey  = "experiment.yaml"
	ResultsDir     = "/results"
	ExperimentPath = ConfigDir + "/" + ExperimentKey
)

// Options describe the Job to build.
type Options struct {
	// Name of the Job (the ConfigMap is Name-experiment). Required.
	Name      string
	Namespace string
	// Image is the container image with the spate binary on its PATH.
	Image string
	// Shards is the number of pods, each sending 1/Shards of the load.
	Shards int
	// Experiment is the experiment file's content.
	Experiment []byte
	// StartAt, when set, is passed as --start-at so all pods begin
	// together.
	StartAt *time.Time
	// Target, when set, overrides the experiment's target (e.g. an
	// in-cluster Service URL).
	Target string
	// APIKeySecret, when set, names a Secret whose key "api-key" becomes
	// $OPENAI_API_KEY in the pods.
	APIKeySecret string
	// ResultsClaim, when set, names a PersistentVolumeClaim mounted at
	// /results, so the result files outlive the pods; otherwise /results is
	// an emptyDir and the results are read from the pods' logs.
	ResultsClaim string
}

// credentialHeader matches the names of header fields that carry
// credentials.
var credentialHeader = regexp.MustCompile(`(?i)auth|key|token|secret|cookie|passw|session|signature`)

// CheckSecrets refuses what the manifest would otherwise store in plain
// text, in the ConfigMap (the experiment file) or the pods' arguments
// (--target): header fields whose names say they carry credentials, and a
// target URL with a password or a query. Only $OPENAI_API_KEY travels in
// a Secret (--api-key-secret).
func CheckSecrets(headers map[string]string, urls ...string) error {
	var names []string
	for k, v := range headers {
		if v != "" && credentialHeader.MatchString(k) {
			names = append(names, k)
		}
	}
	if len(names) > 0 {
		slices.Sort(names)
		return fmt.Errorf("the experiment's target.headers %s would be stored in plain text in the ConfigMap: remove them from the file and pass the API key with --api-key-secret (a Secret whose key api-key becomes $OPENAI_API_KEY in the pods)", strings.Join(names, ", "))
	}
	for _, raw := range urls {
		u, err := url.Parse(strings.TrimSpace(raw))
		if err != nil || raw == "" {
			continue
		}
		secret := false
		if _, ok := u.User.Password(); ok {
			secret = true
		}
		for k := range u.Query() {
			secret = secret || credentialHeader.MatchString(k)
		}
		if secret {
			return fmt.Errorf("the target URL %s carries a password or a credential in its query, which would be stored in plain text in the manifest: take it out of the URL and pass the API key with --api-key-secret", scrub.URL(raw))
		}
	}
	return nil
}

// Labels put on every object and pod.
func labels(name string) map[string]string {
	return map[string]string{"app.kubernetes.io/name": "spate", "app.kubernetes.io/instance": name}
}

var invalidName = regexp.MustCompile(`[^a-z0-9-]+`)

// NameFor derives a Job name from an experiment file's path: "spate-" and
// the base name in lower case, with anything not allowed in a Kubernetes
// name turned into '-'.
func NameFor(file string) string {
	base := strings.TrimSuffix(path.Base(strings.ReplaceAll(file, "\\", "/")), path.Ext(file))
	n := "spate-" + strings.Trim(invalidName.ReplaceAllString(strings.ToLower(base), "-"), "-")
	n = strings.TrimRight(n[:min(len(n), 52)], "-")
	return n
}

func (o Options) check() error {
	if o.Shards < 1 {
		return fmt.Errorf("--shards %d: want at least 1", o.Shards)
	}
	// The ConfigMap adds "-experiment" and pods add "-INDEX-xxxxx".
	if errs := validation.IsDNS1123Label(o.Name); len(errs) > 0 || len(o.Name) > 52 {
		return fmt.Errorf("--name %q is not a valid Job name: lower-case letters, digits and '-', at most 52 characters", o.Name)
	}
	if o.Namespace != "" {
		if errs := validation.IsDNS1123Label(o.Namespace); len(errs) > 0 {
			return fmt.Errorf("--namespace %q: %s", o.Namespace, strings.Join(errs, "; "))
		}
	}
	if o.Image == "" {
		return fmt.Errorf("no container image: give --image")
	}
	if len(o.Experiment) == 0 {
		return fmt.Errorf("the experiment file is empty")
	}
	return nil
}

// Build returns the ConfigMap and the Indexed Job.
func Build(o Options) (*corev1.ConfigMap, *batchv1.Job, error) {
	if err := o.check(); err != nil {
		return nil, nil, err
	}
	cmName := o.Name + "-experiment"
	cm := &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: cmName, Namespace: o.Namespace, Labels: labels(o.Name)},
		Data:       map[string]string{ExperimentKey: string(o.Experiment)},
	}
	n := int32(o.Shards)
	args := []string{"run", ExperimentPath,
		"--out", ResultsDir + "/shard-$(JOB_COMPLETION_INDEX).json",
		"--quiet", "--result-stdout"}
	if o.Target != "" {
		args = append(args, "--target", o.Target)
	}
	if o.StartAt != nil {
		args = append(args, "--start-at", o.StartAt.UTC().Format(time.RFC3339))
	}
	env := []corev1.EnvVar{{Name: "SPATE_SHARDS", Value: strconv.Itoa(o.Shards)}}
	if o.APIKeySecret != "" {
		env = append(env, corev1.EnvVar{Name: "OPENAI_API_KEY", ValueFrom: &corev1.EnvVarSource{
			SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: o.APIKeySecret}, Key: "api-key"},
		}})
	}
	results := corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}
	if o.ResultsClaim != "" {
		results = corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: o.ResultsClaim}}
	}
	mode := batchv1.IndexedCompletion
	backoff := int32(0)
	job := &batchv1.Job{
		TypeMeta:   metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"},
		ObjectMeta: metav1.ObjectMeta{Name: o.Name, Namespace: o.Namespace, Labels: labels(o.Name)},
		Spec: batchv1.JobSpec{
			CompletionMode: &mode,
			Completions:    &n,
			Parallelism:    &n,
			// A shard that fails must not run again later: its load would
			// no longer overlap the others'.
			BackoffLimit: &backoff,
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels(o.Name)},
				Spec: corev1.PodSpec{
					RestartPolicy: corev1.RestartPolicyNever,
					Containers: []corev1.Container{{
						Name:    "spate",
						Image:   o.Image,
						Command: []string{"spate"},
						Args:    args,
						Env:     env,
						VolumeMounts: []corev1.VolumeMount{
							{Name: "experiment", MountPath: ConfigDir, ReadOnly: true},
							{Name: "results", MountPath: ResultsDir},
						},
					}},
					Volumes: []corev1.Volume{
						{Name: "experiment", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
							LocalObjectReference: corev1.LocalObjectReference{Name: cmName},
						}}},
						{Name: "results", VolumeSource: results},
					},
				},
			},
		},
	}
	return cm, job, nil
}

// Write writes the objects as one YAML stream, documents separated by
// "---", after a comment header.
func Write(w io.Writer, header string, objs ...any) error {
	var b strings.Builder
	for _, line := range strings.Split(strings.TrimRight(header, "\n"), "\n") {
		if header != "" {
			b.WriteString("# " + line + "\n")
		}
	}
	for i, o := range objs {
		y, err := yaml.Marshal(o)
		if err != nil {
			return fmt.Errorf("encoding the manifest as YAML: %w", err)
		}
		if i > 0 {
			b.WriteString("---\n")
		}
		b.Write(y)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// Header is the comment that heads the manifest of the experiment file
// path: how to apply it, collect the shards' results and merge them.
func Header(path string, o Options) string {
	header := []string{
		fmt.Sprintf("spate k8s job %s: %d shards", path, o.Shards),
		fmt.Sprintf("kubectl apply -f THIS.yaml; kubectl wait --for=condition=complete job/%s --timeout=1h", o.Name),
		fmt.Sprintf("mkdir -p spate-results; for i in $(seq 0 %d); do kubectl logs -l batch.kubernetes.io/job-completion-index=$i,app.kubernetes.io/instance=%s --tail=-1 > spate-results/shard-$i.log; done", o.Shards-1, o.Name),
		"spate merge spate-results/shard-*.log -o spate-results/merged.json",
	}
	if o.StartAt != nil {
		header = append(header, "all pods start sending at "+o.StartAt.Format(time.RFC3339)+": apply this manifest before then")
	}
	return strings.Join(header, "\n")
}
