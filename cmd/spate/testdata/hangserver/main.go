// Command hangserver is the server of the signal test that holds
// thousands of requests in flight: it lists a model and never answers a
// completion, holding at most -max connections open at once (the others
// wait in the kernel's accept queue: in flight for the client, holding
// none of this process's file descriptors). It prints its URL, then the
// number of completions it holds each time that changes (at most every
// 10 ms). It runs as a process of its own, built without the race
// detector, so that tearing down as many connections as spate does takes
// neither the test process's processors nor its scheduler: the test
// times spate's exit from there.
package main

import (
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"
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
	err = http.Serve(bl, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			fmt.Fprint(w, `{"data":[{"id":"x"}]}`)
			return
		}
		io.Copy(io.Discard, r.Body) // the server notices the client leave once the body is read
		open.Add(1)
		defer open.Add(-1)
		<-r.Context().Done()
	}))
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
