package vector_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/spate-dev/spate/internal/client/rawhttp"
	"github.com/spate-dev/spate/internal/client/vector"
	"github.com/spate-dev/spate/internal/client/vector/qdranttest"
	"github.com/spate-dev/spate/internal/record"
)

// TestProbeEndsAtItsLastRead: a search's latency ends when its answer's
// last bytes came, not when the probe next ran and decoded it. Every read
// of the probe's connection is held 80 ms after its wake-up
// (rawhttp.SetWakeStall); the fake Qdrant answers 30 ms into each search.
// With the kernel's receive stamps the latency still ends within the
// server's write; without them it ends at the late read, and its range
// (EndBound, and the same on its TTFT) holds the write.
func TestProbeEndsAtItsLastRead(t *testing.T) {
	if !rawhttp.Available() {
		t.Skip("reads are stamped on Linux only")
	}
	fake := &qdranttest.Server{Delay: 30 * time.Millisecond}
	wrote := make(chan [2]time.Time, 1) // around a search answer's write
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fake.ServeHTTP(w, r)
		if strings.HasSuffix(r.URL.Path, "/points/search") {
			w0 := time.Now()
			w.(http.Flusher).Flush()
			wrote <- [2]time.Time{w0, time.Now()}
		}
	}))
	defer srv.Close()
	ctx := context.Background()
	ds, truth := stampsDataset(t)
	for _, kernel := range []bool{true, false} {
		t.Run(fmt.Sprintf("kernel stamps %v", kernel), func(t *testing.T) {
			if !kernel {
				defer rawhttp.SetNoKernelStamps()()
			}
			idx, err := vector.Open(ctx, "qdrant://"+strings.TrimPrefix(srv.URL, "http://")+"/spate_test")
			if err != nil {
				t.Fatal(err)
			}
			defer idx.Close()
			if err := idx.Load(ctx, ds, vector.Cosine); err != nil {
				t.Fatal(err)
			}
			probe, err := vector.NewProbe(idx, ds, truth, 5)
			if err != nil {
				t.Fatal(err)
			}
			searchOnce(t, probe) // the connection, unheld
			<-wrote
			restore := rawhttp.SetWakeStall(80 * time.Millisecond)
			rec := searchOnce(t, probe)
			restore()
			checkEndsAtLastRead(t, kernel, rec, <-wrote)
		})
	}
}

// stampsDataset is the small dataset the stamp tests search, with its
// truth at k = 5.
func stampsDataset(t *testing.T) (*vector.Dataset, *vector.Truth) {
	t.Helper()
	ds, err := vector.Generate(vector.GenConfig{N: 50, Queries: 4, Dim: 4, Clusters: 2, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	truth, err := vector.BruteForce(ds, vector.Cosine, 5)
	if err != nil {
		t.Fatal(err)
	}
	return ds, truth
}

// searchOnce runs probe's first query (ef 64) and returns its record.
func searchOnce(t *testing.T, probe *vector.Probe) *record.Record {
	t.Helper()
	r, err := probe.Source(64, 0).Request(0)
	if err != nil {
		t.Fatal(err)
	}
	rec := &record.Record{}
	rec.Reset()
	rec.Sent = time.Now()
	probe.Do(context.Background(), r, rec)
	if rec.Failed() {
		t.Fatalf("%s %s", rec.Err, rec.ErrMsg)
	}
	return rec
}

// checkEndsAtLastRead checks the record of a search whose reads were held
// 80 ms against the times around the server's write of its answer (w):
// with kernel stamps its latency ends within the write, with no bound;
// without, it ends at the late read, and its range (EndBound, and the
// same on its TTFT) holds the write.
func checkEndsAtLastRead(t *testing.T, kernel bool, rec *record.Record, w [2]time.Time) {
	t.Helper()
	lo, hi := w[0].Sub(rec.Sent), w[1].Sub(rec.Sent)
	e2e := rec.E2E()
	if rec.ReadLag <= 0 {
		t.Errorf("read lag %v, want it measured", rec.ReadLag)
	}
	if kernel {
		if e2e < lo-time.Millisecond || e2e > hi+20*time.Millisecond {
			t.Errorf("latency %v, want within the server's write (%v…%v, −1 ms…+20 ms): it was read 80 ms late", e2e, lo, hi)
		}
		if rec.EndBound != 0 || rec.LateFirst {
			t.Errorf("a kernel-stamped end carries end bound %v, late first %v; want none", rec.EndBound, rec.LateFirst)
		}
		return
	}
	if rec.EndBound < 70*time.Millisecond || !rec.LateFirst || rec.FirstBound != rec.EndBound {
		t.Fatalf("end bound %v, late first %v, first bound %v; want a bound of at least 70 ms (the 80 ms hold) on the end and the first byte alike",
			rec.EndBound, rec.LateFirst, rec.FirstBound)
	}
	if e2e-rec.EndBound > hi+time.Millisecond || e2e < lo {
		t.Errorf("latency %v less its bound %v, want the range to hold the server's write (%v…%v)", e2e, rec.EndBound, lo, hi)
	}
}
