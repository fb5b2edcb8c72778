package openai

import (
	"crypto/tls"
	"net"
	"net/http/httptrace"
	"sync/atomic"
	"time"

	"github.com/spate-dev/spate/internal/record"
)

// phaseTrace collects a net/http request's phases from its
// httptrace.ClientTrace hooks. The hooks run on the transport's
// goroutines, which Do does not wait for: each moment is kept atomically,
// as an offset from the request's send (0: not seen).
type phaseTrace struct {
	sent time.Time
	// The moments, in nanoseconds after sent (at least 1).
	dnsStart, dnsDone, connStart, connDone, tlsStart, tlsDone, gotConn, wrote, firstByte atomic.Int64
	reused                                                                               atomic.Bool
}

func (p *phaseTrace) now() int64 { return max(int64(time.Since(p.sent)), 1) }

// hooks returns the trace's hooks, wrote also called when the request is
// written (Do's own use of WroteRequest), got with the connection the
// request got (GotConn, on the goroutine that called Do).
func (p *phaseTrace) hooks(wrote func(int64), got func(net.Conn)) *httptrace.ClientTrace {
	return &httptrace.ClientTrace{
		DNSStart: func(httptrace.DNSStartInfo) { p.dnsStart.CompareAndSwap(0, p.now()) },
		DNSDone: func(i httptrace.DNSDoneInfo) {
			if i.Err == nil {
				p.dnsDone.Store(p.now())
			}
		},
		ConnectStart: func(string, string) { p.connStart.CompareAndSwap(0, p.now()) },
		ConnectDone: func(_, _ string, err error) {
			if err == nil {
				p.connDone.Store(p.now())
			}
		},
		TLSHandshakeStart: func() { p.tlsStart.CompareAndSwap(0, p.now()) },
		TLSHandshakeDone: func(_ tls.ConnectionState, err error) {
			if err == nil {
				p.tlsDone.Store(p.now())
			}
		},
		GotConn: func(i httptrace.GotConnInfo) {
			p.reused.Store(i.Reused)
			p.gotConn.Store(p.now())
			got(i.Conn)
		},
		WroteRequest: func(i httptrace.WroteRequestInfo) {
			t := p.now()
			if i.Err == nil {
				p.wrote.Store(t)
			}
			wrote(t)
		},
		GotFirstResponseByte: func() { p.firstByte.CompareAndSwap(0, p.now()) },
	}
}

// fill records the phases seen into ps: DNS, connect and TLS only when
// the request's connection was opened for it (its hooks saw them, and
// the connection it got was not a reused one).
func (p *phaseTrace) fill(ps *record.Phases) {
	span := func(ph record.Phase, a, b *atomic.Int64) {
		if s, e := a.Load(), b.Load(); s > 0 && e >= s {
			ps.Set(ph, time.Duration(e-s))
		}
	}
	got := p.gotConn.Load()
	if got > 0 && !p.reused.Load() {
		span(record.PhaseDNS, &p.dnsStart, &p.dnsDone)
		span(record.PhaseConnect, &p.connStart, &p.connDone)
		span(record.PhaseTLS, &p.tlsStart, &p.tlsDone)
	}
	if got > 0 {
		span(record.PhaseWrite, &p.gotConn, &p.wrote)
	}
	span(record.PhaseFirstByte, &p.wrote, &p.firstByte)
}
