package k8sjob

import (
	"errors"
	"fmt"
	"time"
)

// CheckFlags reports spate k8s job flags no manifest can be made with,
// before the experiment file is read: --shards below 1, a negative
// --start-delay. The errors name the flag (the command's usage errors).
func CheckFlags(shards int, delay time.Duration) error {
	if shards < 1 {
		return errors.New("--shards N is required: the number of pods, at least 1")
	}
	if delay < 0 {
		return fmt.Errorf("--start-delay %s: must not be negative", delay)
	}
	return nil
}

// Complete fills in what the flags left out: the Job's name from the
// experiment file's path (NameFor) when no --name is given, and the pods'
// common start time delay after now, rounded up to the next whole second
// (none when delay is 0).
func (o *Options) Complete(path string, delay time.Duration, now time.Time) {
	if o.Name == "" {
		o.Name = NameFor(path)
	}
	if delay > 0 {
		at := now.Add(delay).UTC().Truncate(time.Second).Add(time.Second)
		o.StartAt = &at
	}
}
