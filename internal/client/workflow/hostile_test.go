package workflow

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spate-dev/spate/internal/record"
	"github.com/spate-dev/spate/internal/workload"
)

// TestHostileSpec: a workflow file nested too deep or too big is an error
// naming the file and the line, refused before go-yaml allocates for it
// (60 KB of nested brackets took it 1.4 GB, 2 MB of list items 1.2 GB).
func TestHostileSpec(t *testing.T) {
	p := filepath.Join(t.TempDir(), "w.yaml")
	for _, tc := range []struct{ name, yaml, want string }{
		{"nested brackets", "steps: " + strings.Repeat("[", 30_000) + strings.Repeat("]", 30_000) + "\n", "line 1: the YAML nests collections more than 100 deep"},
		{"nested lists", "steps:\n" + strings.Repeat("- ", 30_000) + "x\n", "line 2: the YAML nests collections more than 100 deep"},
		{"a million list items", "steps: [" + strings.Repeat("1,", 1_000_000) + "1]\n", "line 1: the YAML has more than 100000 keys"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := os.WriteFile(p, []byte(tc.yaml), 0o644); err != nil {
				t.Fatal(err)
			}
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			_, err := ReadFile(context.Background(), p)
			runtime.ReadMemStats(&after)
			if err == nil || !strings.Contains(err.Error(), "reading workflow "+p+": "+tc.want) {
				t.Errorf("error %.300v, want %q", err, tc.want)
			}
			if n := after.TotalAlloc - before.TotalAlloc; n > 32<<20 {
				t.Errorf("allocated %d MB", n>>20)
			}
		})
	}
}

// TestHostileBody: a step body whose template loops 100 billion times
// (it grew by 400 MB/s to a fatal out of memory, Ctrl-C or not) fails the
// request at the template's bound, and nothing is sent.
func TestHostileBody(t *testing.T) {
	var sent atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { sent.Add(1) }))
	defer srv.Close()
	s, err := Parse([]byte("steps:\n  - name: a\n    url: " + srv.URL + "\n    body: '{{range 100000000000}}x{{end}}'\n"))
	if err != nil {
		t.Fatal(err)
	}
	w, err := New(s, Config{})
	if err != nil {
		t.Fatal(err)
	}
	rec := &record.Record{}
	rec.Reset()
	rec.Sent = time.Now()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	w.Do(context.Background(), &workload.Request{Prompt: "p"}, rec)
	runtime.ReadMemStats(&after)
	if !rec.Failed() || !strings.Contains(rec.ErrMsg, "its {{range}} loops would run more than 1000000 times") {
		t.Errorf("record: err %q %s", rec.Err, rec.ErrMsg)
	}
	if n := sent.Load(); n != 0 {
		t.Errorf("%d requests sent", n)
	}
	if n := after.TotalAlloc - before.TotalAlloc; n > 32<<20 {
		t.Errorf("allocated %d MB", n>>20)
	}
}
