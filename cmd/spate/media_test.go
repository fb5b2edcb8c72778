package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/spate-dev/spate/sim"
)

// TestAudioAndImagesEndToEnd sends the audio example workload to the
// simulator: every request carries 1 or 2 input_audio clips and 0 to 2
// images, all succeed, and normalised tokens are reported.
func TestAudioAndImagesEndToEnd(t *testing.T) {
	// Not a timing test: it runs beside the others (validity is not its subject).
	t.Parallel()
	s, err := sim.New(sim.Deterministic(time.Millisecond, time.Millisecond, 4))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var mu sync.Mutex
	clips, images := map[int]int{}, map[int]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(b))
		var body struct {
			Messages []struct {
				Content json.RawMessage `json:"content"`
			} `json:"messages"`
		}
		if json.Unmarshal(b, &body) == nil && len(body.Messages) > 0 {
			var parts []struct {
				Type       string `json:"type"`
				InputAudio *struct {
					Data, Format string
				} `json:"input_audio"`
			}
			_ = json.Unmarshal(body.Messages[len(body.Messages)-1].Content, &parts)
			a, im := 0, 0
			for _, p := range parts {
				switch {
				case p.Type == "input_audio" && p.InputAudio != nil && p.InputAudio.Format == "wav" && len(p.InputAudio.Data) > 40000:
					a++
				case p.Type == "image_url":
					im++
				}
			}
			mu.Lock()
			clips[a]++
			images[im]++
			mu.Unlock()
		}
		s.ServeHTTP(w, r)
	}))
	defer srv.Close()
	out := filepath.Join(t.TempDir(), "r.json")
	code, stdout, stderr := cli(t, context.Background(), "run", "--allow-invalid", "--target", srv.URL+"/v1", "--workload", filepath.Join("..", "..", "examples", "workloads", "audio.yaml"),
		"--concurrency", "2", "--requests", "16", "--out", out, "--quiet")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	sc := readResult(t, out).Scenarios[0]
	if sc.Requests.Succeeded != 16 {
		t.Fatalf("%d of 16 succeeded", sc.Requests.Succeeded)
	}
	if sc.Throughput.NormalizedTokensPerS <= sc.Throughput.InputTokensPerS {
		t.Errorf("normalised tokens %.1f/s not above input tokens %.1f/s", sc.Throughput.NormalizedTokensPerS, sc.Throughput.InputTokensPerS)
	}
	mu.Lock()
	defer mu.Unlock()
	if clips[1] == 0 || clips[2] == 0 || clips[1]+clips[2] != 16 {
		t.Errorf("requests by clip count %v, want 1 or 2 on all 16", clips)
	}
	if images[0] == 0 || images[1]+images[2] == 0 {
		t.Errorf("requests by image count %v, want 0 to 2", images)
	}
}
