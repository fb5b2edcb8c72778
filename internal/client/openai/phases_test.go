package openai

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/spate-dev/spate/internal/client/rawhttp"
	"github.com/spate-dev/spate/internal/metrics"
	"github.com/spate-dev/spate/internal/record"
	"github.com/spate-dev/spate/internal/workload"
	"github.com/spate-dev/spate/llmtest"
)

// phasedServer answers every chat stream after firstByte, and, when tls,
// delays each TLS handshake by handshake (GetConfigForClient sleeps before
// the server's hello). keepAlive false closes each connection after its
// response, so that every request opens one.
func phasedServer(t *testing.T, firstByte, handshake time.Duration, tlsOn, keepAlive bool) *httptest.Server {
	t.Helper()
	body := "data: " + wireChunkA + "\n\ndata: " + wireChunkB + "\n\ndata: " + wireUsage + "\n\ndata: [DONE]\n\n"
	s := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(firstByte)
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write([]byte(body))
	}))
	s.Config.SetKeepAlivesEnabled(keepAlive)
	if tlsOn {
		s.TLS = &tls.Config{GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			time.Sleep(handshake)
			return nil, nil
		}}
		s.StartTLS()
	} else {
		s.Start()
	}
	t.Cleanup(s.Close)
	return s
}

// TestHTTPPhasesAgainstKnownServer proves the HTTP phases (docs/figures.md,
// "HTTP phases") against loopback servers that delay the first byte of
// each response by 40 ms and, over TLS, each handshake by 30 ms: the
// medians of the recorded phases and of the stage's figures are those
// delays within a few ms (no phase is ever shorter than its delay; a
// handshake's own computation, measured on a control server with no
// delay, is allowed beside its delay; the upper bounds are judged on the
// best of a few tries, see phasesTries). A request on a reused connection
// has no DNS, connect or TLS phase (absent, not 0): the figures of those
// phases count the requests that opened a connection.
func TestHTTPPhasesAgainstKnownServer(t *testing.T) {
	for _, tc := range []phasesCase{
		{"raw reader, keep-alive", false, false, true, 1},
		{"raw reader, a connection each", false, false, false, phasesN},
		{"net/http, keep-alive", true, false, true, 1},
		{"net/http over TLS, a connection each", true, true, false, phasesN},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !tc.netHTTP && !rawhttp.Available() {
				t.Skip("no reactor here")
			}
			// Under load (three suites at once on 2 cores, load ~10) the
			// medians of a whole try were seen 8 to 19 ms over the 55 ms
			// bound: first byte 66.1 ms (raw reader, keep-alive; its
			// first_byte_ms p50 66.2 ms) and 55.7 ms (net/http over TLS,
			// where the handshake, 61.3 ms, was still within the control's
			// 25.8 ms + 30 ms + 7.5 ms): the machine stalled the 9
			// requests of the try, the server's 40 ms timer and the
			// client's read woke late, in both subtests at once. Such a
			// stall does not last through every try, so the upper bounds
			// are judged on the best of phasesTries fresh tries (a fresh
			// server, client and collector each), every try logged. The
			// lower bounds (no phase shorter than its planted delay) hold
			// in every try, as do the phases' presence and counts. A real
			// defect (a phase counted in the wrong bucket, a fixed delay
			// added to one, the handshake in the first byte) shifts every
			// request of every try and fails all of them.
			var all []string
			for try := 1; try <= phasesTries; try++ {
				problems := httpPhasesTry(t, tc, try)
				if len(problems) == 0 {
					return
				}
				for _, p := range problems {
					all = append(all, fmt.Sprintf("try %d: %s", try, p))
					t.Logf("try %d: %s (judged on the best of %d tries)", try, p, phasesTries)
				}
			}
			t.Errorf("no try of %d within the upper bounds:\n%s", phasesTries, strings.Join(all, "\n"))
		})
	}
}

const (
	phasesFirstByte = 40 * time.Millisecond // the servers' delay of each response's first byte
	phasesHandshake = 30 * time.Millisecond // and, over TLS, of each handshake
	phasesN         = 9                     // requests per try
	phasesTol       = 15 * time.Millisecond // a median is its delay to tol/2 above, plus the handshake's work over TLS
	phasesTries     = 3                     // tries, at most, to meet the upper bounds
)

// phasesCase is one client and server of TestHTTPPhasesAgainstKnownServer.
type phasesCase struct {
	name      string
	netHTTP   bool
	tls       bool
	keepAlive bool
	conns     int // requests that opened a connection
}

// httpPhasesTry makes phasesN requests to a fresh server and checks their
// phases and the stage's figures: the phases' presence and counts and
// their lower bounds fail t; the upper bounds of the medians, the timing
// a loaded machine stretches, are returned as problems.
func httpPhasesTry(t *testing.T, tc phasesCase, try int) []string {
	const firstByte, handshake, n, tol = phasesFirstByte, phasesHandshake, phasesN, phasesTol
	var problems []string
	// upTo checks lo ≤ got ≤ hi: below lo fails t (nothing is faster
	// than the server's delay), above hi is a problem of this try.
	upTo := func(what string, got, lo, hi time.Duration) {
		t.Helper()
		if got < lo {
			t.Errorf("try %d: %s = %v, shorter than the server's delay %v", try, what, got, lo)
		}
		if got > hi {
			problems = append(problems, fmt.Sprintf("%s = %v, want %v to %v", what, got, lo, hi))
		}
	}
	s := phasedServer(t, firstByte, handshake, tc.tls, tc.keepAlive)
	// A name, not an address: the connection has a DNS phase.
	client := func(s *httptest.Server) *Client {
		return newClient(t, strings.Replace(s.URL, "127.0.0.1", "localhost", 1), func(c *Config) {
			c.NetHTTP = tc.netHTTP
			if tc.tls {
				pool := x509.NewCertPool()
				pool.AddCert(s.Certificate())
				tr := NewTransport()
				tr.TLSClientConfig = &tls.Config{RootCAs: pool, ServerName: "example.com"}
				c.HTTP = &http.Client{Transport: tr}
			}
		})
	}
	c := client(s)
	defer c.Close()
	// Over TLS a handshake is the planted delay plus its own
	// computation (key exchange and signatures, both sides
	// race-built), which a loaded machine stretches (47.7 ms
	// seen for 30 ms beside two other suites): a control server
	// with no planted delay, asked in turn with the other,
	// measures that part under the same load.
	var ctrl *Client
	var ctrlTLS []time.Duration
	if tc.tls {
		ctrl = client(phasedServer(t, 0, 0, true, false))
		defer ctrl.Close()
	}
	t0 := time.Now()
	rc := metrics.New(metrics.Config{Start: t0, Mode: "closed", Concurrency: 1})
	var tlsD, fb, conn []time.Duration
	for range n {
		rec := do(c, &workload.Request{Prompt: "p", MaxTokens: 16})
		rc.Sent(rec.Sent, rec.Intended, false)
		rc.Record(rec)
		if rec.Failed() {
			t.Fatalf("%s: %s", rec.Err, rec.ErrMsg)
		}
		d, ok := rec.Phases.Get(record.PhaseFirstByte)
		if !ok {
			t.Fatal("no first-byte phase")
		}
		fb = append(fb, d)
		if _, ok := rec.Phases.Get(record.PhaseWrite); !ok {
			t.Error("no write phase")
		}
		_, dns := rec.Phases.Get(record.PhaseDNS)
		cd, connected := rec.Phases.Get(record.PhaseConnect)
		if dns != connected {
			t.Errorf("dns %v, connect %v: a connection opened to a name has both", dns, connected)
		}
		if connected {
			conn = append(conn, cd)
		}
		td, ok := rec.Phases.Get(record.PhaseTLS)
		if ok != (tc.tls && connected) {
			t.Errorf("tls phase %v, want %v", ok, tc.tls && connected)
		}
		if ok {
			tlsD = append(tlsD, td)
		}
		if ctrl != nil {
			cr := do(ctrl, &workload.Request{Prompt: "p", MaxTokens: 16})
			cd, ok := cr.Phases.Get(record.PhaseTLS)
			if cr.Failed() || !ok {
				t.Fatalf("control: %s %s, tls phase %v", cr.Err, cr.ErrMsg, ok)
			}
			ctrlTLS = append(ctrlTLS, cd)
		}
	}
	if len(conn) != tc.conns {
		t.Errorf("%d requests opened a connection, want %d", len(conn), tc.conns)
	}
	upTo("median first byte", median(fb), firstByte, firstByte+tol)
	// A TLS phase is never shorter than its delay, nor longer
	// than that plus the handshake's computation (the control's
	// median) by more than tol/2.
	var work time.Duration
	if tc.tls {
		work = median(ctrlTLS)
		upTo("median TLS handshake", median(tlsD), handshake, handshake+work+tol/2)
	}
	sc, _, err := rc.Scenario("s", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	p := sc.Load.HTTPPhases
	if p == nil || p.FirstByteMS == nil || p.WriteMS == nil || p.ConnectMS == nil || p.DNSMS == nil {
		t.Fatalf("http_phases %+v: want dns, connect, write and first byte", p)
	}
	ms := func(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }
	upTo("first_byte_ms p50", ms(p.FirstByteMS.P50), firstByte, firstByte+tol)
	if p.FirstByteMS.Count != int64(n) {
		t.Errorf("first_byte_ms over %d requests, want %d", p.FirstByteMS.Count, n)
	}
	if p.ConnectMS.Count != int64(tc.conns) || p.DNSMS.Count != int64(tc.conns) {
		t.Errorf("connect over %d requests, dns over %d, want %d", p.ConnectMS.Count, p.DNSMS.Count, tc.conns)
	}
	tlsFig, tlsMed := "-", time.Duration(0)
	if tc.tls {
		tlsMed = median(tlsD)
		if p.TLSMS == nil {
			t.Error("tls_ms: absent")
		} else {
			tlsFig = fmt.Sprintf("%.3fms", p.TLSMS.P50)
			upTo("tls_ms p50", ms(p.TLSMS.P50), handshake, handshake+work+tol/2)
			if p.TLSMS.Count != n {
				t.Errorf("tls_ms over %d requests, want %d", p.TLSMS.Count, n)
			}
		}
	} else if p.TLSMS != nil {
		t.Errorf("tls_ms %+v over clear HTTP", p.TLSMS)
	}
	t.Logf("try %d: median first byte %v (first_byte_ms p50 %.3fms)", try, median(fb), p.FirstByteMS.P50)
	if tc.tls {
		t.Logf("try %d: TLS handshake median %v (tls_ms p50 %s), the control's (no delay) %v", try, tlsMed, tlsFig, work)
	}
	return problems
}

// TestDNSPhaseOverNetHTTP: net/http's trace hooks give the name lookup
// of each new connection against a DNS server that answers 25 ms after
// each query: the stage's dns_ms p50 is 25 ms within a few ms above, over
// every request (each opened a connection).
func TestDNSPhaseOverNetHTTP(t *testing.T) {
	const lookup, n = 25 * time.Millisecond, 7
	dns, err := llmtest.NewDNS(lookup)
	if err != nil {
		t.Fatal(err)
	}
	defer dns.Close()
	s := phasedServer(t, 0, 0, false, false)
	_, port, _ := net.SplitHostPort(s.Listener.Addr().String())
	tr := NewTransport()
	tr.DialContext = (&net.Dialer{Timeout: 5 * time.Second, Resolver: dns.Resolver}).DialContext
	c := newClient(t, "http://"+net.JoinHostPort("phases.test", port), func(c *Config) { c.HTTP = &http.Client{Transport: tr} })
	defer c.Close()
	rc := metrics.New(metrics.Config{Start: time.Now(), Mode: "closed", Concurrency: 1})
	for range n {
		rec := do(c, &workload.Request{Prompt: "p", MaxTokens: 16})
		if rec.Failed() {
			t.Fatalf("%s: %s", rec.Err, rec.ErrMsg)
		}
		rc.Sent(rec.Sent, rec.Intended, false)
		rc.Record(rec)
	}
	sc, _, err := rc.Scenario("s", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	p := sc.Load.HTTPPhases
	if p == nil || p.DNSMS == nil || p.DNSMS.Count != n {
		t.Fatalf("http_phases %+v: want dns_ms over %d requests", p, n)
	}
	near(t, "dns_ms p50", time.Duration(p.DNSMS.P50*float64(time.Millisecond)), lookup+7500*time.Microsecond, 7500*time.Microsecond)
}
