// Command httpserver is the loopback server of bench/wrk-compare.sh: it
// answers every request with a small fixed body, as cheaply as net/http can.
package main

import (
	"flag"
	"log"
	"net/http"
	"strconv"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:18080", "listen address (keep it on loopback)")
	size := flag.Int("size", 64, "response body size in bytes")
	flag.Parse()
	body := make([]byte, *size)
	for i := range body {
		body[i] = 'x'
	}
	n := strconv.Itoa(len(body))
	log.Fatal(http.ListenAndServe(*addr, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", n)
		w.Write(body)
	})))
}
