//go:build !unix

package fdlimit

// current knows no limit where there is no RLIMIT_NOFILE.
func current() (Limit, bool) { return Limit{}, false }
