// Package longtest tells tests whether the long ones run. The default suite
// (the README's test command) skips tests and table rows that take seconds
// of real time; .ci/run turns them on with -tags integration, race detector
// included, so every test still runs on CI.
package longtest

import "testing"

// Skip skips t unless the suite was built with -tags integration, saying
// why and how to run it.
func Skip(t testing.TB) {
	t.Helper()
	if !On {
		t.Skip("long test: runs with -tags integration (.ci/run)")
	}
}
