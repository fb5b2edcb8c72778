package spate

import (
	"regexp"
	"testing"
)

func TestBuildInfo(t *testing.T) {
	b := BuildInfo()
	if b.Version != Version || b.Commit == "" || b.GoVersion == "" {
		t.Fatalf("%+v", b)
	}
	if !regexp.MustCompile(`^spate \S+ \(commit \S+, go\S+\)$`).MatchString(b.String()) {
		t.Errorf("%q", b.String())
	}
}
