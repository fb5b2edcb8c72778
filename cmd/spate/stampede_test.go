package main

import (
	"bufio"
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/spate-dev/spate/result"
)

// TestStampedeBursts is issue 21's "hot-key bursts do not burst": with
// --stampede every=1s,width=100ms,rate=300 on a 20 req/s stage, every second
// from 1 s brings 30 extra requests within 100 ms, all for one key, a key
// no other request asks for (fresh); the per-second series shows the spike
// and the breakdown labels the burst's requests.
func TestStampedeBursts(t *testing.T) {
	srv := newCaptureServer(t)
	dir := t.TempDir()
	out, records := filepath.Join(dir, "r.json"), filepath.Join(dir, "rec.jsonl")
	// The bursts' schedule and labels are the subject: a busy machine may
	// make the stage invalid (the burst saturates the generator), which is
	// not (seen: exit 4, generator_saturated, three suites at once).
	code, _, stderr := cli(t, context.Background(), "run", "--allow-invalid", "--target", srv.URL+"/v1", "--model", "m", "--arrival", "constant", "--rate", "20",
		"--duration", "2500ms", "--stampede", "every=1s,width=100ms,rate=300", "--output-tokens", "2", "--input-tokens", "12",
		"--records", records, "--quiet", "--out", out)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	type rec struct {
		Seq      uint64            `json:"seq"`
		Intended float64           `json:"intended_ms"`
		Labels   map[string]string `json:"labels"`
	}
	f, err := os.Open(records)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	// Intended times are offsets from the stage's start; the schedule's
	// zero is the first base request's (the stage starts a few ms before
	// it on a busy machine).
	var recs []rec
	origin := -1.0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var r rec
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		recs = append(recs, r)
		if r.Labels["stampede"] == "base" && (origin < 0 || r.Intended < origin) {
			origin = r.Intended
		}
	}
	burstAt := map[int][]float64{} // second → intended times of burst requests
	base := 0
	for _, r := range recs {
		r.Intended -= origin
		switch r.Labels["stampede"] {
		case "burst":
			s := int(math.Round(r.Intended / 1000))
			burstAt[s] = append(burstAt[s], r.Intended)
		case "base":
			base++
		default:
			t.Fatalf("record %d has no stampede label: %v", r.Seq, r.Labels)
		}
	}
	if len(burstAt) != 2 || len(burstAt[1]) != 30 || len(burstAt[2]) != 30 || base != 50 {
		t.Fatalf("bursts by second %v (%d base requests), want 30 at 1 s and 30 at 2 s beside 50 base", lens(burstAt), base)
	}
	// Intended times are computed, not measured: each burst's 30
	// requests are due exactly every 100/30 ms from its second (records
	// carry microseconds).
	for s, at := range burstAt {
		slices.Sort(at)
		for k, ms := range at {
			if want := float64(s*1000) + float64(k)*100/30; math.Abs(ms-want) > 0.002 {
				t.Errorf("burst %d request %d intended at %.3f ms from the base schedule's zero, want %.3f", s, k, ms, want)
			}
		}
	}
	// One key a burst, never asked for outside it.
	prompts := map[string]int{}
	for _, m := range srv.messages(t) {
		prompts[m[len(m)-1].Content]++
	}
	repeated := 0
	for _, n := range prompts {
		switch {
		case n == 30:
			repeated++
		case n != 1:
			t.Errorf("a prompt was asked for %d times, want 30 (a burst's key) or once", n)
		}
	}
	if repeated != 2 {
		t.Errorf("%d prompts asked for 30 times, want one key per burst (2)", repeated)
	}
	// The series shows the spike; the breakdown labels it.
	res, err := result.Read(out)
	if err != nil {
		t.Fatal(err)
	}
	sc0 := res.Scenarios[0]
	if sc0.Load.Stampede == "" || len(sc0.Series.SentPerS) < 3 || sc0.Series.SentPerS[1] < 40 || sc0.Series.SentPerS[0] > 25 {
		t.Errorf("load %+v, sent per second %v: want the stampede named and a spike at 1 s", sc0.Load.Stampede, sc0.Series)
	}
	if b := sc0.Breakdown["stampede"]; b == nil || b["burst"].Requests.Total != 60 || b["base"].Requests.Total != 50 {
		t.Errorf("breakdown by stampede %+v, want 60 burst and 50 base requests", sc0.Breakdown["stampede"])
	}
}

func lens(m map[int][]float64) map[int]int {
	out := map[int]int{}
	for k, v := range m {
		out[k] = len(v)
	}
	return out
}
