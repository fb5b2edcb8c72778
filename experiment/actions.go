package experiment

import (
	"errors"
	"time"
)

// The verdicts a run ends with, the keys of an experiment's actions.
const (
	VerdictPass    = "pass"    // every threshold passed on a valid measurement
	VerdictFail    = "fail"    // a threshold failed
	VerdictInvalid = "invalid" // thresholds passed, but a stage's measurement was not valid
	VerdictError   = "error"   // the run could not complete (interrupted, nothing succeeded, ...)
)

// Action is one thing to do on a verdict, once the result is written:
// exactly one of Command or Webhook.
type Action struct {
	// Command is run without a shell, as argv; it sees SPATE_VERDICT,
	// SPATE_RESULT and SPATE_FINGERPRINT in its environment.
	Command []string `yaml:"command" json:"command,omitempty"`
	// Webhook receives a POST of the verdict as JSON.
	Webhook string `yaml:"webhook" json:"webhook,omitempty"`
	// Timeout bounds the action (default one minute).
	Timeout time.Duration `yaml:"timeout" json:"timeout,omitempty"`
}

// Check reports an action that is not exactly one of command or webhook.
func (a Action) Check() error {
	if (len(a.Command) > 0) == (a.Webhook != "") {
		return errors.New("an action is exactly one of command: [argv...] or webhook: URL")
	}
	if a.Timeout < 0 {
		return errors.New("an action's timeout must not be negative")
	}
	return nil
}
