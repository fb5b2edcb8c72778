package plainhttp

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/spate-dev/spate/internal/record"
	"github.com/spate-dev/spate/internal/workload"
	"github.com/spate-dev/spate/llmtest"
)

// notHTTP answers every request with bytes that are not an HTTP
// response.
func notHTTP(t *testing.T) string {
	return replay(t, []byte("\x00\xffSSH-2.0-OpenSSH_9.6\r\n\r\nnot http at all\r\n\r\n"))
}

// strayAfter answers every request with a complete response followed by
// bytes nobody asked for, in one write.
func strayAfter(t *testing.T) string {
	return replay(t, []byte("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok\r\n"))
}

// replay serves resp byte for byte (llmtest.Replay) until the test ends.
func replay(t *testing.T, resp []byte) string {
	t.Helper()
	s := llmtest.NewReplay(resp)
	t.Cleanup(s.Close)
	return s.URL
}

// TestHostileServer: on both paths, a reset before any response is
// connect_reset, a 429's Retry-After is kept for the retries, a complete
// response followed by a stray CRLF succeeds (the reactor failed it as
// stream_broken, "data after the end of the response"), and (on the
// reactor path) bytes that are not HTTP are bad_response.
func TestHostileServer(t *testing.T) {
	h := llmtest.NewHostile()
	defer h.Close()
	garbage := notHTTP(t)
	stray := strayAfter(t)
	limited := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "1")
		w.WriteHeader(http.StatusTooManyRequests)
	}))
	defer limited.Close()
	for _, fast := range []bool{false, true} {
		for _, tc := range []struct {
			name, base, path string
			kind             record.ErrorKind
			retryAfter       time.Duration
		}{
			{"reset", h.BaseURL(llmtest.Reset), "/x", record.ConnectReset, 0},
			{"retry-after", limited.URL, "/", record.RateLimited, time.Second},
			{"not http", garbage, "/", record.BadResponse, 0},
			{"stray CRLF after the response", stray, "/", record.OK, 0},
		} {
			if fast && tc.kind == record.BadResponse {
				continue // fasthttp's parse errors are not told apart
			}
			name := tc.name
			if fast {
				name += " fasthttp"
			}
			t.Run(name, func(t *testing.T) {
				c, err := New(Config{BaseURL: tc.base, Timeout: 5 * time.Second, FastHTTP: fast})
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				rec := do(t, c, context.Background(), &workload.Request{Method: "POST", Path: tc.path, Body: []byte(`{}`)})
				if rec.Err != tc.kind || rec.RetryAfter != tc.retryAfter {
					t.Errorf("kind %q (%s), retry after %v; want %q, %v", rec.Err, rec.ErrMsg, rec.RetryAfter, tc.kind, tc.retryAfter)
				}
			})
		}
	}
}
