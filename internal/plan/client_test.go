package plan

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/spate-dev/spate/experiment"
	"github.com/spate-dev/spate/internal/client/rawhttp"
	"github.com/spate-dev/spate/internal/record"
	"github.com/spate-dev/spate/internal/workload"
	"github.com/spate-dev/spate/llmtest"
)

// TestCloseStopsTheClients: a run's protocol clients are usable until the
// run is closed, and closing it stops them (their reactors, where the
// platform has one): the client's life ends with the run's. The benchmark
// knobs SPATE_NETHTTP and SPATE_FASTHTTP keep the clients off the reactor.
func TestCloseStopsTheClients(t *testing.T) {
	srv := llmtest.NewServer(llmtest.Config{TTFT: time.Millisecond, ITL: time.Millisecond, Tokens: 2})
	defer srv.Close()
	tests := []struct {
		name, api, url string
		env            string // a knob set to 1: no reactor
	}{
		{"streamed", "chat", srv.BaseURL(), ""},
		{"plain http", "http", srv.URL + "/v1/models", ""},
		{"streamed, net/http", "chat", srv.BaseURL(), envNetHTTP},
		{"plain http, fasthttp", "http", srv.URL + "/v1/models", envFastHTTP},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.env != "" {
				t.Setenv(tc.env, "1")
			}
			r, err := Build(context.Background(), &experiment.Experiment{
				Target: experiment.Target{URL: tc.url, API: tc.api},
				Stages: []experiment.Stage{{Name: "main", Concurrency: 1, Requests: 1}},
			}, Env{})
			if err != nil {
				t.Fatal(err)
			}
			do := func() *record.Record {
				rec := &record.Record{}
				rec.Reset()
				rec.Sent = time.Now()
				r.Plan.Client.Do(context.Background(), &workload.Request{Prompt: "p", MaxTokens: 2}, rec)
				return rec
			}
			if rec := do(); rec.Failed() {
				t.Fatalf("before Close: %s %s", rec.Err, rec.ErrMsg)
			}
			r.Close()
			rec := do()
			if !rawhttp.Available() || tc.env != "" {
				// net/http and fasthttp clients have nothing to stop.
				if rec.Failed() {
					t.Fatalf("after Close, without a reactor: %s %s", rec.Err, rec.ErrMsg)
				}
				return
			}
			if !rec.Failed() || !strings.Contains(rec.ErrMsg, rawhttp.ErrClosed.Error()) {
				t.Fatalf("after Close: failed %v, %s %s; want %q", rec.Failed(), rec.Err, rec.ErrMsg, rawhttp.ErrClosed)
			}
		})
	}
}

// TestTargetWithoutV1: a --target without the /v1 its server lists models
// under fails the run's start with the /v1 to add, not "(or pass
// --model)", which would have left every request a 404.
func TestTargetWithoutV1(t *testing.T) {
	srv := llmtest.NewServer(llmtest.Config{TTFT: time.Millisecond, ITL: time.Millisecond, Tokens: 2})
	defer srv.Close()
	r, err := Build(context.Background(), &experiment.Experiment{
		Target: experiment.Target{URL: srv.URL, API: "chat"},
		Stages: []experiment.Stage{{Name: "main", Concurrency: 1, Requests: 1}},
	}, Env{})
	if err == nil {
		r.Close()
		t.Fatal("the run started")
	}
	if msg := err.Error(); !strings.Contains(msg, "did you mean --target "+srv.URL+"/v1?") || strings.Contains(msg, "pass --model") {
		t.Errorf("error %q, want one saying did you mean --target %s/v1, not to pass --model", msg, srv.URL)
	}
}

// TestUnreachableTargetSaysSo: a target nothing listens on is unreachable,
// and passing --model would not help, so the error does not suggest it.
func TestUnreachableTargetSaysSo(t *testing.T) {
	r, err := Build(context.Background(), &experiment.Experiment{
		Target: experiment.Target{URL: "http://127.0.0.1:1/v1", API: "chat"},
		Stages: []experiment.Stage{{Name: "main", Concurrency: 1, Requests: 1}},
	}, Env{})
	if err == nil {
		r.Close()
		t.Fatal("the run started")
	}
	if msg := err.Error(); !strings.Contains(msg, "is unreachable") || strings.Contains(msg, "pass --model") {
		t.Errorf("error %q: want unreachable, without passing --model", msg)
	}
}
