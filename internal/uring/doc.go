// Package uring is a minimal io_uring (Linux ≥ 5.6): one submission and
// completion ring pair mapped into the process, raw access to its entries,
// io_uring_enter(2) with an optional timeout, a table of registered files
// and a ring of provided buffers (Linux ≥ 5.19) for multishot receives.
// It holds no goroutine and no lock: a Ring belongs to one goroutine (with
// SetupSingleIssuer, to one locked thread).
//
// The simulator submits each tick's token writes with it (package sim);
// bench/simcap reads streams with multishot receives.
package uring
