package llmtest

import (
	"fmt"
	"io"
	"net/http"
	"sync/atomic"
)

// Hang is a target that lists one model ("x") and never answers a
// completion: each request other than a GET is read whole and then held
// until its client leaves, counted in open meanwhile. Tests of
// interruption, cancellation and file limits hold requests in flight
// with it.
func Hang(open *atomic.Int64) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			fmt.Fprint(w, `{"data":[{"id":"x"}]}`)
			return
		}
		io.Copy(io.Discard, r.Body) // the server notices the client leave once the body is read
		open.Add(1)
		defer open.Add(-1)
		<-r.Context().Done()
	})
}
