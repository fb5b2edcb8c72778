// Package observe scrapes the system under test's Prometheus endpoints
// during each stage of a run, on the stage's own clock (offsets from the
// stage's start, as the scenario's per-second series), and turns what it
// scraped into named series (KV cache usage, queue depth, token rates, ...)
// and derived figures in result.Server.
//
// The package is split as parse (selector.go, exposition.go), compute
// (known.go, series.go, figures.go) and I/O (scrape.go, observer.go).
//
// Stage: metrics (the server's own, on the run's timeline).
// The data flow: experiment → workload → schedule → engine → client → record
// → metrics → verdict → outputs (docs/design.md).
package observe
