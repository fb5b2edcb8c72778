// Package rawhttp is a minimal HTTP/1.1 client for load generation whose
// responses are read by a reactor: one goroutine per few cores waits on
// epoll for every connection's socket, reads each ready socket once (one
// recvmsg(2) per readiness, edge-triggered, into a shared 64 KiB buffer),
// stamps the read, and parses the response there, handing body bytes to a
// Handler. The goroutine that sent the request parks once per response,
// not once per event, so a streamed response costs about one system call
// and no goroutine switch per server-sent event.
//
// Every read is stamped with the kernel's receive time of its last bytes
// (SO_TIMESTAMPNS), or, on a socket that gives none, with the time it
// returned, as a goroutine-per-connection reader stamps its reads; what a
// reactor adds is that a ready socket may wait while the reactor serves
// others. That wait is bounded per read (Read.Bound) and reported as the
// response's ReadLag (see Result), so that a run whose reads came late can
// be marked invalid rather than trusted.
//
// It speaks plain http:// only (no TLS, no proxies), sends requests the
// caller has formatted, and never pipelines. It is Linux-only; elsewhere
// Available reports false and callers use net/http. What net/http and
// fasthttp read (https:// targets) can still be stamped the same way: a
// StampedConn (StampDial, Stamp) is a TCP connection that reads with
// recvmsg(2) and keeps each read's receive time and bound for the reader
// above it.
//
// Stage: client (the reactor the openai and plainhttp clients read http://
// responses with).
// The data flow: experiment → workload → schedule → engine → client → record
// → metrics → verdict → outputs (docs/design.md).
package rawhttp
