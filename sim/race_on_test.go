//go:build race

package sim

// raceEnabled is true under the race detector, which slows the test client
// and server several times; load in timing tests is scaled down under it.
const raceEnabled = true
