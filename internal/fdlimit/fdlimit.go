// Package fdlimit tells whether this process can hold a number of requests
// in flight: each holds a file descriptor (its connection), and a process
// may open no more than its RLIMIT_NOFILE. A load over the limit fails on
// the machine that sends it (EMFILE), not at the target, so it is refused
// before it starts.
//
// Stage: experiment (checks before a run), engine (what the machine can
// hold).
// The data flow: experiment → workload → schedule → engine → client → record
// → metrics → verdict → outputs (docs/design.md).
package fdlimit

import "fmt"

// Margin is the file descriptors kept for the process's own files beside
// its requests' connections: standard streams, the result, records and
// report files, a scrape or metrics listener, the chaos proxy's listener,
// the runtime's poller.
const Margin = 256

// Limit is a process's RLIMIT_NOFILE.
type Limit struct {
	Soft, Hard uint64 // the limit in force, and the most it may be raised to
}

// Current returns this process's limit; ok is false where it is unknown
// (the check is then skipped). The Go runtime raises the soft limit to the
// hard one as the process starts, so Soft is usually Hard.
func Current() (l Limit, ok bool) { return current() }

// Check returns an error when n requests in flight, set by setting (e.g.
// "--concurrency"), need more file descriptors than l allows less Margin,
// saying the limit and how to raise it.
func (l Limit) Check(setting string, n int) error {
	if n <= 0 || l.Soft == 0 || uint64(n)+Margin <= l.Soft {
		return nil
	}
	most := uint64(0)
	if l.Soft > Margin {
		most = l.Soft - Margin
	}
	return fmt.Errorf("%s %d needs a file descriptor a request in flight, but this process may open %d (RLIMIT_NOFILE, hard limit %d), %d of them kept for its own files: use at most %d, or raise the limit with ulimit -n before running spate",
		setting, n, l.Soft, l.Hard, Margin, most)
}
