// Command hangserver serves llmtest.Hang as a process of its own, for
// tests that hold thousands of requests in flight: it lists a model and
// never answers a completion, holding at most -max connections open at
// once (the others wait in the kernel's accept queue: in flight for the
// client, holding none of this process's file descriptors). It prints its
// URL, then the number of completions it holds each time that changes (at
// most every 10 ms). Built without the race detector and apart from the
// test, tearing down as many connections as the client does takes neither
// the test process's processors nor its scheduler, which times the
// client.
package main

import (
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spate-dev/spate/llmtest"
)

func main() {
	max := flag.Int("max", 1000, "connections held open at most")
	flag.Parse()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, "hangserver:", err)
		os.Exit(1)
	}
	var open atomic.Int64
	fmt.Printf("http://%s/v1\n", ln.Addr())
	go func() {
		last := int64(-1)
		for range time.Tick(10 * time.Millisecond) {
			if n := open.Load(); n != last {
				last = n
				fmt.Println(n)
			}
		}
	}()
	bl := &boundedListener{Listener: ln, slots: make(chan struct{}, *max)}
	err = http.Serve(bl, llmtest.Hang(&open))
	fmt.Fprintln(os.Stderr, "hangserver:", err)
	os.Exit(1)
}

// boundedListener accepts a connection only while fewer than cap(slots)
// it accepted are open.
type boundedListener struct {
	net.Listener
	slots chan struct{}
}

// Accept waits for a free slot, then for a connection.
func (l *boundedListener) Accept() (net.Conn, error) {
	l.slots <- struct{}{}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.slots
		return nil, err
	}
	return &slotConn{Conn: c, release: sync.OnceFunc(func() { <-l.slots })}, nil
}

// slotConn gives its listener's slot back when closed.
type slotConn struct {
	net.Conn
	release func()
}

// Close closes the connection and frees its slot.
func (c *slotConn) Close() error {
	err := c.Conn.Close()
	c.release()
	return err
}
