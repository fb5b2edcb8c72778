// Package examples holds the example experiment files, embedded so that
// spate quickstart can run one without a checkout.
package examples

import "embed"

// Files are the example experiments (*.yaml).
//
//go:embed *.yaml
var Files embed.FS
