//go:build integration

package longtest

// On is true when the suite was built with -tags integration: the long
// tests run.
const On = true
