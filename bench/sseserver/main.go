//go:build linux

// Command sseserver is a minimal OpenAI-style streaming server for the
// client benchmarks (bench/fidelity.sh): every request gets TOKENS
// content events, the first TTFT after the request arrived and then one
// every ITL, on an absolute schedule, and nothing else is computed. Its
// pacer threads sleep with nanosleep(2) on locked OS threads with a 1 ns
// timer slack and write each due frame with one write(2), so that it costs
// little and keeps time; how late its writes were is served at /stats, so
// a benchmark can tell the client's error from the server's. With -truth
// it also keeps, per request (by the trace id of its traceparent header),
// when the request arrived and when each event was written, served as JSON
// lines at /truth: the timings the client should have measured. With
// -tls-cert PATH it serves TLS (HTTP/1.1) with a fresh self-signed
// certificate for 127.0.0.1, written to PATH for clients to trust
// (SSL_CERT_FILE=PATH for Go programs, curl --cacert PATH).
//
//	sseserver -addr 127.0.0.1:18100 -ttft 100ms -itl 20ms -tokens 64 [-threads 1] [-truth] [-tls-cert PATH]
package main

import (
	"bufio"
	"container/heap"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"flag"
	"fmt"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"os"
	"runtime"
	"sort"
	"sync"
	"syscall"
	"time"
	"unsafe"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:18100", "listen address (loopback)")
	ttft := flag.Duration("ttft", 100*time.Millisecond, "time to first token")
	itl := flag.Duration("itl", 20*time.Millisecond, "inter-token latency")
	tokens := flag.Int("tokens", 64, "content events per response")
	threads := flag.Int("threads", 1, "pacer threads")
	truth := flag.Bool("truth", false, "keep every request's write times for /truth")
	certOut := flag.String("tls-cert", "", "serve TLS, writing the self-signed certificate (PEM) to this file")
	flag.Parse()
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatal(err)
	}
	s := &server{ttft: *ttft, itl: *itl, tokens: *tokens, truth: *truth}
	if *certOut != "" {
		if s.tls, err = selfSigned(*certOut); err != nil {
			log.Fatal(err)
		}
	}
	for range *threads {
		p := &pacer{}
		s.pacers = append(s.pacers, p)
		go p.run()
	}
	for {
		c, err := ln.Accept()
		if err != nil {
			log.Fatal(err)
		}
		go s.serve(c)
	}
}

type server struct {
	ttft, itl time.Duration
	tokens    int
	pacers    []*pacer
	next      int
	mu        sync.Mutex
	truth     bool
	done      []*stream   // finished streams, when truth is kept
	tls       *tls.Config // nil: cleartext
}

// selfSigned makes a TLS configuration with a new certificate for
// 127.0.0.1 and localhost, and writes the certificate to path as PEM.
func selfSigned(path string) (*tls.Config, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "sseserver"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
		DNSNames:              []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		return nil, err
	}
	return &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}, NextProtos: []string{"http/1.1"}}, nil
}

// readConn is a connection whose reads go through r (the stamped reader),
// for the TLS server above it.
type readConn struct {
	net.Conn
	r io.Reader
}

func (c readConn) Read(p []byte) (int, error) { return c.r.Read(p) }

// frame is one content event as an HTTP chunk.
var frame = func() []byte {
	ev := "data: {\"object\":\"chat.completion.chunk\",\"model\":\"sseserver\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\" the\"}}]}\n\n"
	return fmt.Appendf(nil, "%x\r\n%s\r\n", len(ev), ev)
}()

// tail ends a response: usage, [DONE] and the last chunk.
func tail(n int) []byte {
	ev := fmt.Sprintf("data: {\"model\":\"sseserver\",\"choices\":[],\"usage\":{\"prompt_tokens\":1,\"completion_tokens\":%d,\"total_tokens\":%d}}\n\ndata: [DONE]\n\n", n, n+1)
	return fmt.Appendf(nil, "%x\r\n%s\r\n0\r\n\r\n", len(ev), ev)
}

func (s *server) serve(tcp net.Conn) {
	defer tcp.Close()
	sr := newStampedReader(tcp)
	var rd io.Reader = tcp
	if sr != nil {
		rd = sr
	}
	c := tcp // where the responses are written
	if s.tls != nil {
		tc := tls.Server(readConn{tcp, rd}, s.tls)
		if err := tc.Handshake(); err != nil {
			return
		}
		c, rd = tc, tc
	}
	br := bufio.NewReader(rd)
	end := tail(s.tokens)
	for {
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		if _, err := io.Copy(io.Discard, req.Body); err != nil {
			return
		}
		// The request's arrival: the kernel's receive time of its last
		// bytes, where the socket gives it (not when this goroutine got
		// to read them).
		arrived := time.Now()
		if sr != nil && br.Buffered() == 0 && !sr.last.IsZero() {
			arrived = sr.last
		}
		if req.URL.Path == "/truth" {
			s.mu.Lock()
			var b []byte
			for _, st := range s.done {
				b = fmt.Appendf(b, `{"trace_id":%q,"arrived_ns":%d,"writes_ns":[`, st.trace, st.start.UnixNano())
				for i, w := range st.writes {
					if i > 0 {
						b = append(b, ',')
					}
					b = fmt.Appendf(b, "%d", w.Sub(st.start).Nanoseconds()+st.start.UnixNano())
				}
				b = append(b, "]}\n"...)
			}
			s.mu.Unlock()
			fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Type: application/x-ndjson\r\nContent-Length: %d\r\n\r\n%s", len(b), b)
			continue
		}
		if req.URL.Path == "/stats" || req.URL.Path == "/health" {
			b, _ := json.Marshal(s.stats())
			fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(b), b)
			continue
		}
		if _, err := io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"); err != nil {
			return
		}
		st := &stream{c: c, start: arrived, ttft: s.ttft, itl: s.itl, n: s.tokens, tail: end, done: make(chan error, 1)}
		if s.truth {
			st.trace = traceID(req.Header.Get("Traceparent"))
			st.writes = make([]time.Time, 0, s.tokens)
		}
		s.mu.Lock()
		p := s.pacers[s.next%len(s.pacers)]
		s.next++
		s.mu.Unlock()
		p.add(st)
		err = <-st.done
		if s.truth {
			s.mu.Lock()
			s.done = append(s.done, st)
			s.mu.Unlock()
		}
		if err != nil {
			return
		}
	}
}

// stats are the pacers' write lateness so far, in microseconds.
func (s *server) stats() map[string]any {
	var all []int64
	for _, p := range s.pacers {
		p.mu.Lock()
		all = append(all, p.late...)
		p.mu.Unlock()
	}
	sort.Slice(all, func(i, j int) bool { return all[i] < all[j] })
	q := func(f float64) int64 {
		if len(all) == 0 {
			return 0
		}
		return all[min(int(f*float64(len(all))), len(all)-1)]
	}
	return map[string]any{"writes": len(all), "late_p50_us": q(0.5), "late_p99_us": q(0.99), "late_max_us": q(1)}
}

type stream struct {
	c         net.Conn
	start     time.Time
	ttft, itl time.Duration
	n, i      int
	tail      []byte
	due       time.Time
	done      chan error
	trace     string      // the request's trace id, when truth is kept
	writes    []time.Time // when each event was written, when truth is kept
}

// traceID is the trace id of a W3C traceparent header.
func traceID(tp string) string {
	if len(tp) >= 35 {
		return tp[3:35]
	}
	return ""
}

// pacer writes its streams' frames when due, from one locked OS thread.
type pacer struct {
	mu       sync.Mutex
	incoming []*stream
	late     []int64 // µs, a sample of every write (bounded)
	h        streamHeap
}

func (p *pacer) add(st *stream) {
	st.due = st.start.Add(st.ttft)
	p.mu.Lock()
	p.incoming = append(p.incoming, st)
	p.mu.Unlock()
}

const maxSamples = 1 << 20

func (p *pacer) run() {
	runtime.LockOSThread()
	_, _, _ = syscall.RawSyscall(syscall.SYS_PRCTL, 29 /* PR_SET_TIMERSLACK */, 1, 0)
	var late []int64
	for {
		p.mu.Lock()
		for _, st := range p.incoming {
			heap.Push(&p.h, st)
		}
		p.incoming = p.incoming[:0]
		if len(late) > 0 {
			if len(p.late) < maxSamples {
				p.late = append(p.late, late...)
			}
			late = late[:0]
		}
		p.mu.Unlock()
		now := time.Now()
		for len(p.h) > 0 && !p.h[0].due.After(now) {
			st := p.h[0]
			late = append(late, int64(now.Sub(st.due)/time.Microsecond))
			st.i++
			var err error
			if st.i == st.n {
				_, err = st.c.Write(append(append([]byte(nil), frame...), st.tail...))
			} else {
				_, err = st.c.Write(frame)
			}
			if st.writes != nil {
				st.writes = append(st.writes, time.Now())
			}
			if err != nil || st.i == st.n {
				heap.Pop(&p.h)
				st.done <- err
				continue
			}
			st.due = st.start.Add(st.ttft + time.Duration(st.i)*st.itl)
			heap.Fix(&p.h, 0)
			now = time.Now()
		}
		wait := time.Millisecond // at most, to take in new streams
		if len(p.h) > 0 {
			wait = min(wait, time.Until(p.h[0].due))
		}
		if wait > 0 {
			ts := syscall.NsecToTimespec(int64(wait))
			_ = syscall.Nanosleep(&ts, nil)
		}
	}
}

type streamHeap []*stream

func (h streamHeap) Len() int           { return len(h) }
func (h streamHeap) Less(i, j int) bool { return h[i].due.Before(h[j].due) }
func (h streamHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *streamHeap) Push(x any)        { *h = append(*h, x.(*stream)) }
func (h *streamHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// stampedReader reads a TCP connection with recvmsg(2) and keeps the
// kernel's receive time of the last read (SO_TIMESTAMPNS), on the
// monotonic clock.
type stampedReader struct {
	rc   syscall.RawConn
	oob  []byte
	last time.Time
}

func newStampedReader(c net.Conn) *stampedReader {
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return nil
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		return nil
	}
	_ = rc.Control(func(fd uintptr) {
		_ = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_TIMESTAMPNS, 1)
	})
	return &stampedReader{rc: rc, oob: make([]byte, 128)}
}

func (r *stampedReader) Read(p []byte) (int, error) {
	var n, oobn int
	var err error
	rerr := r.rc.Read(func(fd uintptr) bool {
		n, oobn, _, _, err = syscall.Recvmsg(int(fd), p, r.oob, 0)
		return err != syscall.EAGAIN
	})
	if rerr != nil {
		return 0, rerr
	}
	if err != nil {
		return 0, err
	}
	if n == 0 {
		return 0, io.EOF
	}
	now := time.Now()
	r.last = now
	if msgs, perr := syscall.ParseSocketControlMessage(r.oob[:oobn]); perr == nil {
		for _, m := range msgs {
			if m.Header.Level == syscall.SOL_SOCKET && m.Header.Type == syscall.SCM_TIMESTAMPNS && len(m.Data) >= 16 {
				ts := (*syscall.Timespec)(unsafe.Pointer(&m.Data[0]))
				if w := now.UnixNano() - ts.Nano(); w >= 0 && w < int64(10*time.Second) {
					r.last = now.Add(-time.Duration(w))
				}
			}
		}
	}
	return n, nil
}
