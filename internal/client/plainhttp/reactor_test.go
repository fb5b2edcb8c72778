package plainhttp

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/spate-dev/spate/internal/client/rawhttp"
	"github.com/spate-dev/spate/internal/record"
	"github.com/spate-dev/spate/internal/workload"
)

// forceFastHTTP makes the tests' clients use fasthttp (see
// TestFastHTTPPath); tests do not run in parallel.
var forceFastHTTP bool

// TestFastHTTPPath runs the client tests again on the fasthttp path, which
// serves where the reactor cannot (not Linux, https).
func TestFastHTTPPath(t *testing.T) {
	forceFastHTTP = true
	defer func() { forceFastHTTP = false }()
	for _, tc := range []struct {
		name string
		fn   func(*testing.T)
	}{
		{"ttfb and end", TestTimeToFirstByteAndEnd},
		{"errors", TestErrors},
		{"trace header", TestTraceHeader},
	} {
		t.Run(tc.name, tc.fn)
	}
}

func TestReactorPathInUse(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/x" {
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	c, err := New(Config{BaseURL: srv.URL + "/api/"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if (c.raw != nil) != rawhttp.Available() {
		t.Fatalf("reactor path %v, available %v", c.raw != nil, rawhttp.Available())
	}
	for _, path := range []string{"/x", "/x"} {
		rec := &record.Record{}
		rec.Reset()
		rec.Sent = time.Now()
		c.Do(context.Background(), &workload.Request{Path: path}, rec)
		if rec.Failed() || rec.Status != 200 || rec.FirstToken.IsZero() || rec.End.Before(rec.FirstToken) {
			t.Fatalf("%s: %+v", path, rec)
		}
	}
}
