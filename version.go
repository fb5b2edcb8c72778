package spate

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
)

// Version is spate's version, recorded in every result (set at build time
// with -ldflags '-X github.com/spate-dev/spate.Version=...').
var Version = defaultVersion

// defaultVersion is Version when the build sets none.
const defaultVersion = "0.1.0-dev"

// Build describes the binary: spate's version, the VCS commit it was built
// from ("unknown" when the build did not record one) and the Go version.
type Build struct {
	Version   string
	Commit    string
	GoVersion string
}

// BuildInfo returns the version, commit and Go version of the running
// binary, from runtime/debug.ReadBuildInfo.
func BuildInfo() Build {
	b := Build{Version: Version, Commit: "unknown", GoVersion: runtime.Version()}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return b
	}
	return fromBuildInfo(b, info)
}

// fromBuildInfo fills b from the build information the binary carries.
func fromBuildInfo(b Build, info *debug.BuildInfo) Build {
	if info.GoVersion != "" {
		b.GoVersion = info.GoVersion
	}
	// go install .../cmd/spate@v1.2.3 records the module's version; a
	// build from a clone records "(devel)" and keeps Version.
	if v := info.Main.Version; b.Version == defaultVersion && v != "" && v != "(devel)" {
		b.Version = strings.TrimPrefix(v, "v")
	}
	for _, s := range info.Settings {
		if s.Key == "vcs.revision" && s.Value != "" {
			b.Commit = s.Value
			if len(b.Commit) > 7 {
				b.Commit = b.Commit[:7]
			}
		}
	}
	return b
}

// String is the version line of spate --version:
// "spate 0.1.0-dev (commit abc1234, go1.26.8)".
func (b Build) String() string {
	return fmt.Sprintf("spate %s (commit %s, %s)", b.Version, b.Commit, b.GoVersion)
}
