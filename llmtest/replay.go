package llmtest

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"sync"
	"time"
)

// Replay is a loopback server that answers every request with the same
// bytes, byte for byte, as a recorded server or a hostile one would: it
// reads the request whole, writes the bytes in one write and closes the
// connection. What net/http's servers cannot send (stray bytes after a
// response, bytes that are not HTTP, a recording off the wire) it sends.
type Replay struct {
	// URL is the server's base URL (http://127.0.0.1:PORT).
	URL string
	ln  net.Listener
	wg  sync.WaitGroup
}

// NewReplay starts a Replay of resp; Close stops it.
func NewReplay(resp []byte) *Replay {
	return NewRouted(func(*http.Request, []byte) []byte { return resp })
}

// NewRouted starts a Replay that answers each request with the bytes
// route picks for it (from its method, URL and body), as a recorded
// server with several endpoints would; Close stops it.
func NewRouted(route func(req *http.Request, body []byte) []byte) *Replay {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic("llmtest: listening on loopback: " + err.Error())
	}
	r := &Replay{URL: "http://" + ln.Addr().String(), ln: ln}
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			r.wg.Add(1)
			go func() {
				defer r.wg.Done()
				defer c.Close()
				_ = c.SetDeadline(time.Now().Add(10 * time.Second))
				req, err := http.ReadRequest(bufio.NewReader(c))
				if err != nil {
					return
				}
				body, _ := io.ReadAll(io.LimitReader(req.Body, 1<<20))
				_, _ = c.Write(route(req, body))
			}()
		}
	}()
	return r
}

// Close stops the server and waits for its connections to end.
func (r *Replay) Close() {
	r.ln.Close()
	r.wg.Wait()
}
