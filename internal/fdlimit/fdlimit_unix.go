//go:build unix

package fdlimit

import "syscall"

func current() (Limit, bool) {
	var r syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &r); err != nil {
		return Limit{}, false
	}
	return Limit{Soft: uint64(r.Cur), Hard: uint64(r.Max)}, true
}
