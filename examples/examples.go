// Package examples holds the example experiment files, embedded so that
// spate quickstart can run one without a checkout.
//
// Not a stage: the example inputs of the first one, experiment files.
// The data flow: experiment → workload → schedule → engine → client → record
// → metrics → verdict → outputs (docs/design.md).
package examples

import "embed"

// Files are the example experiments (*.yaml).
//
//go:embed *.yaml
var Files embed.FS
