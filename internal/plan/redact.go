package plan

import (
	"io"
	"reflect"

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
	for _, actions := range x.Actions {
		for _, a := range actions {
			urls = append(urls, a.Webhook)
		}
	}
	for _, u := range urls {
		secrets = append(secrets, scrub.URLSecrets(u)...)
	}
	return scrub.NewRedactor(secrets...)
}

// redactResult masks secrets in every string of the result, wherever a
// feature put it (warnings, error samples, the server's and the chaos
// proxy's sections, the gate's actions, ...): one redaction at the one
// place every result passes before it is written or reported, so that a
// field added later cannot leak. The histograms are left alone: base64,
// no text, and a pattern could match inside one and corrupt it.
func redactResult(red *scrub.Redactor, res *result.Result) {
	hists := res.Histograms
	res.Histograms = nil
	redactValue(red, reflect.ValueOf(res).Elem())
	res.Histograms = hists
	res.Provenance.Target = scrub.URL(res.Provenance.Target)
}

// redactValue masks secrets in every string v holds, recursively: struct
// fields, slices, map values (and map keys that are strings, which hold
// error kinds and labels: left as they are) and pointers.
func redactValue(red *scrub.Redactor, v reflect.Value) {
	switch v.Kind() {
	case reflect.String:
		if v.CanSet() {
			if s := v.String(); s != "" {
				if r := red.String(s); r != s {
					v.SetString(r)
				}
			}
		}
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			e := v.Elem()
			if v.Kind() == reflect.Interface && e.Kind() != reflect.Pointer {
				// A value in an interface cannot be set in place: a copy,
				// redacted, set back.
				c := reflect.New(e.Type()).Elem()
				c.Set(e)
				redactValue(red, c)
				if v.CanSet() {
					v.Set(c)
				}
				return
			}
			redactValue(red, e)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				redactValue(red, v.Field(i))
			}
		}
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			redactValue(red, v.Index(i))
		}
	case reflect.Map:
		for _, k := range v.MapKeys() {
			e := v.MapIndex(k)
			c := reflect.New(e.Type()).Elem()
			c.Set(e)
			redactValue(red, c)
			v.SetMapIndex(k, c)
		}
	}
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
