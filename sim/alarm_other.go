//go:build !linux

package sim

import "time"

// newAlarm returns the portable alarm.
func newAlarm(epoch time.Time, _, _ bool) alarm { return newSleepAlarm(epoch) }
