package main

import (
	"os"
	"runtime/debug"
)

// loadGCPercent is the garbage collector's target in the spate process,
// unless GOGC says otherwise: a load generator's live heap is small and
// steady (a record per request in flight, histograms, the tokenizer), so
// collecting at 100 % growth spends CPU for little memory. 150 % saves
// about 5 % of the CPU per streamed token (bench/stream-cpu.sh) and keeps
// resident memory under 100 MB (bench/mem.sh); 200 % saves a little more
// but comes near that. It is process-wide, so it is set here, for the
// command only: programs that call the Go API (package spate) keep their
// own setting. docs/run.md says so.
const loadGCPercent = 150

// tuneGC sets the collector for the process.
func tuneGC() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(loadGCPercent)
	}
}
