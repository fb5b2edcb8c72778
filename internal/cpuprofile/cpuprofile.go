// Package cpuprofile writes a Go CPU profile of the running process, for
// the bench/ scripts' --cpuprofile.
package cpuprofile

import (
	"fmt"
	"os"
	"runtime/pprof"
)

// Start profiles the process's CPU into the file at path and returns the
// function that stops it and closes the file; an empty path profiles
// nothing (stop does nothing).
func Start(path string) (stop func(), err error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return func() {}, fmt.Errorf("--cpuprofile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return func() {}, fmt.Errorf("--cpuprofile: %w", err)
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}
