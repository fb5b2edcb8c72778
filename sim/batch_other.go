//go:build !linux

package sim

import "fmt"

// newSender returns nil: off Linux every stream is written through its
// ResponseWriter.
func newSender(path string) (sender, error) {
	switch path {
	case WritePathURing, WritePathSend:
		return nil, fmt.Errorf("Config.WritePath %q is available on Linux only", path)
	}
	return nil, nil
}
