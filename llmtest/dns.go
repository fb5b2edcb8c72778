package llmtest

import (
	"context"
	"net"
	"sync"
	"time"
)

// DNS is a loopback DNS server (UDP) that answers every A query with
// 127.0.0.1, and every other query with no record, Delay after it came: a
// name lookup of known duration, for tests of what measures one.
type DNS struct {
	// Resolver looks names up with the server.
	Resolver *net.Resolver
	pc       net.PacketConn
	delay    time.Duration
	wg       sync.WaitGroup
}

// NewDNS starts a DNS server that answers after delay. Close it.
func NewDNS(delay time.Duration) (*DNS, error) {
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	d := &DNS{pc: pc, delay: delay}
	addr := pc.LocalAddr().String()
	d.Resolver = &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var nd net.Dialer
		return nd.DialContext(ctx, "udp", addr)
	}}
	d.wg.Add(1)
	go d.serve()
	return d, nil
}

// Close stops the server once its answers in flight are sent.
func (d *DNS) Close() {
	d.pc.Close()
	d.wg.Wait()
}

func (d *DNS) serve() {
	defer d.wg.Done()
	for {
		b := make([]byte, 512)
		n, from, err := d.pc.ReadFrom(b)
		if err != nil {
			return
		}
		d.wg.Add(1)
		go func() {
			defer d.wg.Done()
			time.Sleep(d.delay)
			if resp := dnsAnswer(b[:n]); resp != nil {
				_, _ = d.pc.WriteTo(resp, from)
			}
		}()
	}
}

// dnsAnswer is the answer to query q (RFC 1035 §4): its question, and
// for an A query the record 127.0.0.1; nil when q is not one question.
func dnsAnswer(q []byte) []byte {
	if len(q) < 12 || q[4] != 0 || q[5] != 1 {
		return nil
	}
	i := 12
	for i < len(q) && q[i] != 0 {
		i += int(q[i]) + 1
	}
	if i+5 > len(q) {
		return nil
	}
	question := q[12 : i+5]
	isA := q[i+1] == 0 && q[i+2] == 1
	resp := append([]byte{q[0], q[1], 0x81, 0x80, 0, 1, 0, 0, 0, 0, 0, 0}, question...)
	if isA {
		resp[7] = 1
		// The question's name (a pointer to offset 12), A, IN, TTL 60,
		// four bytes: 127.0.0.1.
		resp = append(resp, 0xc0, 12, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4, 127, 0, 0, 1)
	}
	return resp
}
