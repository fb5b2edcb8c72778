//go:build !race

package rawhttp

// raceBuild says the race detector is on (see StampedConn.Read).
const raceBuild = false
