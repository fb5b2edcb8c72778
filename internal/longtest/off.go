//go:build !integration

package longtest

// On is true when the suite was built with -tags integration: the long
// tests run. Without the tag they are skipped.
const On = false
