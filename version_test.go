package spate

import (
	"regexp"
	"runtime/debug"
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

func TestFromBuildInfo(t *testing.T) {
	base := Build{Version: defaultVersion, Commit: "unknown", GoVersion: "go1.0"}
	for _, c := range []struct {
		name string
		info debug.BuildInfo
		want Build
	}{
		{"clone", debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"},
			Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "0123456789abcdef"}}},
			Build{defaultVersion, "0123456", "go1.26.8"}},
		{"go install @v1.2.3", debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v1.2.3"}},
			Build{"1.2.3", "unknown", "go1.26.8"}},
		{"nothing recorded", debug.BuildInfo{}, base},
	} {
		if got := fromBuildInfo(base, &c.info); got != c.want {
			t.Errorf("%s: got %+v, want %+v", c.name, got, c.want)
		}
	}
	set := base
	set.Version = "9.9.9"
	if got := fromBuildInfo(set, &debug.BuildInfo{Main: debug.Module{Version: "v1.2.3"}}); got.Version != "9.9.9" {
		t.Errorf("a version set with -ldflags gave way to the module's: %+v", got)
	}
}
