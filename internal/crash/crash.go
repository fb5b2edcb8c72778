// Package crash sets how the spate process ends when it crashes: a bug
// (an unrecovered panic) or a fatal error of the Go runtime (out of
// memory, a stack overflow).
//
// Go ends a crashed process with exit code 2, which is spate's usage
// error: a CI pipeline would tell its user to fix a command line that was
// right. ByAbort makes a crash end the process by SIGABRT instead, as
// GOTRACEBACK=crash does, with every goroutine's stack on stderr; a shell
// shows it as exit status 134, and no exit code of spate's means it.
//
// Stage: none of the data flow; the process around it (docs/design.md).
package crash

import "runtime/debug"

// ByAbort makes a crash of this process end it by SIGABRT. A GOTRACEBACK
// the user set that shows more stays (the setting only ever rises). It
// is process-wide: the spate command calls it, the Go API does not.
func ByAbort() { debug.SetTraceback("crash") }
