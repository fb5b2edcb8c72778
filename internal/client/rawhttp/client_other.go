//go:build !linux

package rawhttp

import (
	"context"
	"net"
	"time"
)

// Available reports whether the reactor works here: not on this platform.
func Available() bool { return false }

// Client is unavailable on this platform: New fails with ErrUnsupported.
type Client struct{}

// New fails with ErrUnsupported on this platform.
func New(Config) (*Client, error) { return nil, ErrUnsupported }

// Do fails with ErrUnsupported on this platform.
func (*Client) Do(context.Context, *Request) (Result, error) { return Result{}, ErrUnsupported }

// Close does nothing on this platform.
func (*Client) Close() error { return nil }

// SetWakeStall does nothing on this platform (there is no reactor).
func SetWakeStall(time.Duration) (restore func()) { return func() {} }

// SetNoKernelStamps does nothing on this platform (there is no reactor).
func SetNoKernelStamps() (restore func()) { return func() {} }

// StampedConn is never made on this platform (StampDial returns its dialer
// as it is); its methods exist so that callers build everywhere.
type StampedConn struct{ net.Conn }

// Last returns no read on this platform.
func (*StampedConn) Last() Read { return Read{} }

// Lag returns 0 on this platform.
func (*StampedConn) Lag() time.Duration { return 0 }

// newStampedConn fails on this platform (StampDial does not call it).
func newStampedConn(*net.TCPConn) (*StampedConn, error) { return nil, ErrUnsupported }
