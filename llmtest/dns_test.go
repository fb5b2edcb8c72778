package llmtest

import (
	"context"
	"testing"
	"time"
)

// TestDNSAnswersAfterItsDelay: a lookup through the server gives
// 127.0.0.1, no sooner than its delay.
func TestDNSAnswersAfterItsDelay(t *testing.T) {
	const delay = 20 * time.Millisecond
	d, err := NewDNS(delay)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	start := time.Now()
	addrs, err := d.Resolver.LookupHost(context.Background(), "model.test")
	if took := time.Since(start); err != nil || len(addrs) != 1 || addrs[0] != "127.0.0.1" || took < delay {
		t.Fatalf("%v %v after %v, want [127.0.0.1] after %v or more", addrs, err, took, delay)
	}
}

// FuzzDNSAnswer: any query gets an answer or none, never a panic, and an
// answer carries the query's id.
func FuzzDNSAnswer(f *testing.F) {
	f.Add([]byte("\x12\x34\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00\x05model\x04test\x00\x00\x01\x00\x01"))
	f.Add([]byte("\x00\x01\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00\x05"))
	f.Fuzz(func(t *testing.T, q []byte) {
		if r := dnsAnswer(q); r != nil && (r[0] != q[0] || r[1] != q[1]) {
			t.Fatalf("answer id %x, query's %x", r[:2], q[:2])
		}
	})
}
