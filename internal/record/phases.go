package record

import "time"

// Phase names one HTTP phase of a request (docs/figures.md, "HTTP
// phases").
type Phase uint8

// The HTTP phases, in the order they happen.
const (
	// PhaseDNS is the name lookup of a new connection (absent on a reused
	// one, and when the target is an IP address).
	PhaseDNS Phase = iota
	// PhaseConnect is the TCP connect of a new connection.
	PhaseConnect
	// PhaseTLS is the TLS handshake of a new https connection.
	PhaseTLS
	// PhaseWrite is from the connection ready to the request written
	// whole.
	PhaseWrite
	// PhaseFirstByte is from the request written to the first byte of the
	// response (the server's time to first byte).
	PhaseFirstByte
	// NumPhases is the number of phases.
	NumPhases
)

// String names the phase as the result file's load.http_phases does.
func (p Phase) String() string {
	switch p {
	case PhaseDNS:
		return "dns"
	case PhaseConnect:
		return "connect"
	case PhaseTLS:
		return "tls"
	case PhaseWrite:
		return "write"
	case PhaseFirstByte:
		return "first_byte"
	}
	return "unknown"
}

// Phases are the HTTP phases of one request: each a duration, or absent
// (a reused connection has no DNS, connect or TLS phase; a phase is not
// 0 for being absent). The zero value has every phase absent.
type Phases struct {
	d   [NumPhases]time.Duration
	has uint8
}

// Set records phase p as having taken d (a negative d, from a clock
// step, is taken as 0).
func (ps *Phases) Set(p Phase, d time.Duration) {
	if p >= NumPhases {
		return
	}
	ps.d[p] = max(d, 0)
	ps.has |= 1 << p
}

// Get returns phase p's duration, and whether it happened.
func (ps *Phases) Get(p Phase) (time.Duration, bool) {
	if p >= NumPhases || ps.has&(1<<p) == 0 {
		return 0, false
	}
	return ps.d[p], true
}

// Any reports whether any phase was recorded.
func (ps *Phases) Any() bool { return ps.has != 0 }
