package plan

import (
	"io"

	"github.com/spate-dev/spate/experiment"
	"github.com/spate-dev/spate/internal/scrub"
	"github.com/spate-dev/spate/result"
)

// redactor is the run's one redaction: the API key, every --header value,
// and the passwords and query values of every URL the experiment names
// are masked, besides the patterns every text is redacted of (URL
// userinfo and queries, password= and key= parameters, bearer tokens). It
// is applied to every message a record carries (before the records file,
// the recorder and the observers see it), to the result's messages, to
// everything printed, and to the error a run ends with.
func redactor(e *experiment.Experiment) *scrub.Redactor {
	x := withDefaults(e) // the key from the environment too
	secrets := []string{x.Target.APIKey}
	for _, v := range x.Target.Headers {
		secrets = append(secrets, v)
	}
	urls := append([]string{x.Target.URL, x.Vector.URL, x.Observe.OTLPEndpoint, x.Chaos.Stats}, x.Target.URLs...)
	urls = append(urls, x.Observe.Scrape...)
	for _, s := range x.Stages {
		if s.Faults != nil {
			urls = append(urls, s.Faults.URL)
		}
	}
	for _, u := range urls {
		secrets = append(secrets, scrub.URLSecrets(u)...)
	}
	return scrub.NewRedactor(secrets...)
}

// redactResult masks secrets in the result's free text: warnings and the
// error samples (the records' messages are redacted already; this covers
// what features add).
func redactResult(red *scrub.Redactor, res *result.Result) {
	for i, w := range res.Warnings {
		res.Warnings[i] = red.String(w)
	}
	for i := range res.Scenarios {
		for j, w := range res.Scenarios[i].Warnings {
			res.Scenarios[i].Warnings[j] = red.String(w)
		}
		for k, v := range res.Scenarios[i].Requests.ErrorSamples {
			res.Scenarios[i].Requests.ErrorSamples[k] = red.String(v)
		}
	}
	res.Provenance.Target = scrub.URL(res.Provenance.Target)
}

// redactingWriter masks secrets in every write: progress lines, warnings
// and the summary are written a line or a block at a time.
type redactingWriter struct {
	w   io.Writer
	red *scrub.Redactor
}

func (r redactingWriter) Write(p []byte) (int, error) {
	s := r.red.String(string(p))
	if _, err := io.WriteString(r.w, s); err != nil {
		return 0, err
	}
	return len(p), nil
}

// redactEnv wraps env's writers in the redaction.
func redactEnv(env Env, red *scrub.Redactor) Env {
	if env.Stdout != nil {
		env.Stdout = redactingWriter{env.Stdout, red}
	}
	if env.Stderr != nil {
		env.Stderr = redactingWriter{env.Stderr, red}
	}
	return env
}
