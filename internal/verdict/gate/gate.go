// Package gate turns a result into a verdict a pipeline can act on, and
// runs the actions an experiment file maps each verdict to: a command (say,
// promote a canary or roll back) or a webhook POST, each with a timeout.
//
// Stage: verdict.
// The data flow: experiment → workload → schedule → engine → client → record
// → metrics → verdict → outputs (docs/design.md).
package gate

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"time"

	"github.com/spate-dev/spate/experiment"
	"github.com/spate-dev/spate/internal/verdict"
	"github.com/spate-dev/spate/result"
)

// Verdicts (the keys of an experiment's actions): see package verdict.
const (
	Pass    = verdict.Pass
	Fail    = verdict.Fail
	Invalid = verdict.Invalid
	Error   = verdict.Error
)

// DefaultTimeout bounds an action that sets none.
const DefaultTimeout = time.Minute

// Verdict decides the verdict of a finished run; runErr is the run's own
// error, if any (verdict.Of).
func Verdict(r *result.Result, runErr error) string { return verdict.Of(r, runErr) }

// Payload is what a webhook receives.
type Payload struct {
	Verdict     string   `json:"verdict"`
	Experiment  string   `json:"experiment,omitempty"`
	Fingerprint string   `json:"fingerprint,omitempty"`
	Result      string   `json:"result,omitempty"` // path of the result file
	Failed      []string `json:"failed_thresholds,omitempty"`
	// Unjudged lists the thresholds that could not be judged (their
	// figure was not measured), per stage, with why.
	Unjudged []string `json:"unjudged_thresholds,omitempty"`
}

// Outcome is how one action went.
type Outcome struct {
	Action  string  `json:"action"` // the command line or webhook URL
	OK      bool    `json:"ok"`
	Error   string  `json:"error,omitempty"`
	Output  string  `json:"output,omitempty"` // the end of a command's output
	Seconds float64 `json:"seconds"`
}

// Run runs actions in order for payload p and reports each. It stops at
// nothing: every action runs even if an earlier one failed.
func Run(ctx context.Context, actions []experiment.Action, p Payload) []Outcome {
	var outs []Outcome
	for _, a := range actions {
		timeout := a.Timeout
		if timeout == 0 {
			timeout = DefaultTimeout
		}
		actx, cancel := context.WithTimeout(ctx, timeout)
		t0 := time.Now()
		var o Outcome
		var err error
		if len(a.Command) > 0 {
			o.Action = fmt.Sprint(a.Command)
			o.Output, err = runCommand(actx, a.Command, p)
		} else {
			o.Action = a.Webhook
			err = post(actx, a.Webhook, p)
		}
		cancel()
		o.Seconds = time.Since(t0).Seconds()
		o.OK = err == nil
		if err != nil {
			o.Error = err.Error()
		}
		outs = append(outs, o)
	}
	return outs
}

func runCommand(ctx context.Context, argv []string, p Payload) (string, error) {
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), "SPATE_VERDICT="+p.Verdict, "SPATE_RESULT="+p.Result, "SPATE_FINGERPRINT="+p.Fingerprint)
	cmd.WaitDelay = time.Second
	b, err := cmd.CombinedOutput()
	out := tail(b, 500)
	if ctx.Err() != nil {
		return out, fmt.Errorf("timed out: %w", ctx.Err())
	}
	if err != nil {
		return out, fmt.Errorf("%w: %s", err, out)
	}
	return out, nil
}

func post(ctx context.Context, url string, p Payload) error {
	b, err := json.Marshal(p)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(b))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("webhook answered HTTP %d", resp.StatusCode)
	}
	return nil
}

func tail(b []byte, n int) string {
	b = bytes.TrimSpace(b)
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}

// FailedThresholds lists the expressions of failed thresholds, per stage
// (not those that could not be judged: verdict.Unjudged lists them).
func FailedThresholds(r *result.Result) []string {
	var out []string
	for _, sc := range r.Scenarios {
		for _, t := range sc.Thresholds {
			if !t.Pass && !t.Unjudged {
				out = append(out, sc.Name+": "+t.Expr)
			}
		}
	}
	return out
}
