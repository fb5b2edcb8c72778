package k8sjob

import (
	"testing"
	"time"
)

// TestCheckFlags checks the errors of spate k8s job's --shards and
// --start-delay word for word.
func TestCheckFlags(t *testing.T) {
	for _, tc := range []struct {
		shards int
		delay  time.Duration
		err    string
	}{
		{shards: 1},
		{shards: 4, delay: 30 * time.Second},
		{shards: 0, err: "--shards N is required: the number of pods, at least 1"},
		{shards: -2, delay: -time.Second, err: "--shards N is required: the number of pods, at least 1"},
		{shards: 2, delay: -1500 * time.Millisecond, err: "--start-delay -1.5s: must not be negative"},
		{shards: 2, delay: -time.Nanosecond, err: "--start-delay -1ns: must not be negative"},
	} {
		err := CheckFlags(tc.shards, tc.delay)
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != tc.err {
			t.Errorf("CheckFlags(%d, %v) = %q, want %q", tc.shards, tc.delay, got, tc.err)
		}
	}
}

// TestComplete checks the Job's default name and the start time: now plus
// the delay, rounded up to the next whole second, in UTC.
func TestComplete(t *testing.T) {
	now := time.Date(2026, 12, 6, 9, 0, 0, 400e6, time.FixedZone("CET", 3600))
	for _, tc := range []struct {
		name, path string
		delay      time.Duration
		wantName   string
		wantAt     string // "" for none
	}{
		{path: "exp/Peak Load.yaml", delay: 30 * time.Second, wantName: "spate-peak-load", wantAt: "2026-12-06T08:00:31Z"},
		{name: "mine", path: "x.yaml", delay: 0, wantName: "mine"},
		{path: "x.yaml", delay: 600 * time.Millisecond, wantName: "spate-x", wantAt: "2026-12-06T08:00:02Z"},
	} {
		o := Options{Name: tc.name}
		o.Complete(tc.path, tc.delay, now)
		at := ""
		if o.StartAt != nil {
			at = o.StartAt.Format(time.RFC3339Nano)
		}
		if o.Name != tc.wantName || at != tc.wantAt {
			t.Errorf("Complete(%q, %v): name %q start %q, want %q %q", tc.path, tc.delay, o.Name, at, tc.wantName, tc.wantAt)
		}
	}
}
