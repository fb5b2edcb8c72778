package workload

import (
	"encoding/base64"
	"encoding/json"
	"image"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spate-dev/spate/experiment"
)

// parts returns the request's parts of one type, as sent.
func partsOf(t *testing.T, r *Request, typ string) []wirePart {
	t.Helper()
	var out []wirePart
	for _, m := range r.Messages {
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		var w struct {
			Content json.RawMessage `json:"content"`
		}
		if err := json.Unmarshal(b, &w); err != nil {
			t.Fatal(err)
		}
		var ps []wirePart
		if json.Unmarshal(w.Content, &ps) != nil {
			continue
		}
		for _, p := range ps {
			if p.Type == typ {
				out = append(out, p)
			}
		}
	}
	return out
}

// attached returns the request's parts of one type: as sent (read back
// from its JSON) when wire is true, else from its Parts, which
// Message.MarshalJSON writes one to one. Tests read the first requests
// from the wire and the rest from their parts: re-encoding megabytes of
// base64 for every request took most of a minute under -race.
func attached(t *testing.T, r *Request, typ string, wire bool) []wirePart {
	t.Helper()
	if wire {
		return partsOf(t, r, typ)
	}
	var out []wirePart
	for _, m := range r.Messages {
		for _, p := range m.Parts {
			if p.Type != typ {
				continue
			}
			w := wirePart{Type: p.Type, Text: p.Text}
			switch p.Type {
			case "image_url":
				w.ImageURL = &struct {
					URL string `json:"url"`
				}{p.ImageURL}
			case "input_audio":
				w.InputAudio = &wireAudio{Data: p.AudioData, Format: p.AudioFormat}
			}
			out = append(out, w)
		}
	}
	return out
}

// wireChecked is how many requests a test reads back from their JSON.
const wireChecked = 30

// TestImageCountsAndSizes draws images per request from a distribution
// that may draw 0, and sizes by weight; normalised tokens follow each
// request's images.
func TestImageCountsAndSizes(t *testing.T) {
	b, err := Build(experiment.Workload{InputTokens: "100", Images: &experiment.Images{Counts: "uniform:0:3",
		Sizes: []experiment.ImageSize{{Width: 512, Height: 512, Weight: 3}, {Width: 1024, Height: 1024, Weight: 1}}},
		Weights: &experiment.Weights{ImageMode: "tile", ImagePixels: 512, PatchPixels: 512}}, BuildOptions{Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	counts := map[int]int{}
	small, large := 0, 0
	// 2000 requests keep the shares' bounds below at 5 standard errors or
	// more. Each distinct image is decoded once.
	const n = 2000
	decoded := map[string]image.Config{}
	for i := uint64(0); i < n; i++ {
		r, err := b.Source.Request(i)
		if err != nil {
			t.Fatal(err)
		}
		var ims []string
		for _, p := range attached(t, r, "image_url", i < wireChecked) {
			ims = append(ims, p.ImageURL.URL)
		}
		counts[len(ims)]++
		patches := 0
		for _, url := range ims {
			cfg, ok := decoded[url]
			if !ok {
				if !strings.HasPrefix(url, "data:image/png;base64,") {
					t.Fatalf("image url %.40q", url)
				}
				raw, _ := base64.StdEncoding.DecodeString(strings.TrimPrefix(url, "data:image/png;base64,"))
				if cfg, _, err = imageDecodeConfig(raw); err != nil {
					t.Fatal(err)
				}
				decoded[url] = cfg
			}
			switch cfg.Width {
			case 512:
				small++
				patches++
			case 1024:
				large++
				patches += 4
			default:
				t.Fatalf("image of %dx%d", cfg.Width, cfg.Height)
			}
		}
		if want := 100 + 64*float64(patches); r.NormTokens != want {
			t.Fatalf("request %d: normalised tokens %v, want %v", i, r.NormTokens, want)
		}
	}
	for k := 0; k <= 3; k++ {
		if got := float64(counts[k]) / n; math.Abs(got-0.25) > 0.05 {
			t.Errorf("%d images in %.3f of requests, want 0.25 ± 0.05 (%v)", k, got, counts)
		}
	}
	if len(counts) != 4 {
		t.Errorf("image counts %v, want 0 to 3", counts)
	}
	if share := float64(small) / float64(small+large); math.Abs(share-0.75) > 0.05 {
		t.Errorf("512×512 in %.3f of images, want 0.75 ± 0.05", share)
	}
}

// TestAudioInputs attaches synthetic WAV clips as input_audio parts and
// WAV files as they are; each second counts framesPerSecond × the audio
// frame weight in normalised tokens.
func TestAudioInputs(t *testing.T) {
	b, err := Build(experiment.Workload{InputTokens: "50", Audio: &experiment.Audio{Counts: "choice:1@0.5,2@0.5", Seconds: "uniform:1:3", SampleRate: 8000}}, BuildOptions{Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	decoded := map[string]float64{} // seconds by clip: each is decoded once
	for i := uint64(0); i < 200; i++ {
		r, err := b.Source.Request(i)
		if err != nil {
			t.Fatal(err)
		}
		clips := attached(t, r, "input_audio", i < wireChecked)
		if len(clips) < 1 || len(clips) > 2 {
			t.Fatalf("request %d: %d clips", i, len(clips))
		}
		secs := 0.0
		for _, c := range clips {
			if c.InputAudio.Format != "wav" {
				t.Fatalf("format %q", c.InputAudio.Format)
			}
			s, ok := decoded[c.InputAudio.Data]
			if !ok {
				raw, err := base64.StdEncoding.DecodeString(c.InputAudio.Data)
				if err != nil {
					t.Fatal(err)
				}
				if s, err = wavSeconds(raw); err != nil {
					t.Fatal(err)
				}
				if len(raw) != 44+2*8000*int(s) {
					t.Fatalf("a %.1f s clip of %d bytes", s, len(raw))
				}
				decoded[c.InputAudio.Data] = s
			}
			seen[int(s)] = true
			secs += s
		}
		if want := 50 + secs*DefaultAudioFPS*8; r.NormTokens != want {
			t.Fatalf("request %d: normalised tokens %v, want %v", i, r.NormTokens, want)
		}
	}
	if !seen[1] || !seen[2] || !seen[3] || len(seen) != 3 {
		t.Errorf("clip lengths %v, want 1, 2 and 3 s", seen)
	}

	// A file is sent as it is, counted by its length.
	wav := filepath.Join(t.TempDir(), "a.wav")
	file := SyntheticWAV(2.5, 16000, 1)
	if err := os.WriteFile(wav, file, 0o644); err != nil {
		t.Fatal(err)
	}
	b, err = Build(experiment.Workload{InputTokens: "10", Audio: &experiment.Audio{Files: []string{wav}, FramesPerSecond: 100}}, BuildOptions{Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	r, err := b.Source.Request(0)
	if err != nil {
		t.Fatal(err)
	}
	clips := partsOf(t, r, "input_audio")
	if len(clips) != 1 || clips[0].InputAudio.Data != base64.StdEncoding.EncodeToString(file) {
		t.Fatalf("clips %d, want the file once", len(clips))
	}
	if want := 10 + 2.5*100*8.0; r.NormTokens != want {
		t.Fatalf("normalised tokens %v, want %v", r.NormTokens, want)
	}

	// Not a WAV: an error naming the file.
	bad := filepath.Join(t.TempDir(), "b.wav")
	_ = os.WriteFile(bad, []byte("ID3 not a wav"), 0o644)
	if _, err := Build(experiment.Workload{Audio: &experiment.Audio{Files: []string{bad}}}, BuildOptions{}); err == nil || !strings.Contains(err.Error(), "b.wav") {
		t.Fatalf("err %v, want one naming b.wav", err)
	}
}

// FuzzWAVSeconds feeds the WAV reader arbitrary bytes: it must not panic.
func FuzzWAVSeconds(f *testing.F) {
	f.Add(SyntheticWAV(0.01, 8000, 1))
	f.Add([]byte("RIFF\x00\x00\x00\x00WAVEdata\xff\xff\xff\xff"))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := wavSeconds(b)
		if err == nil && (s < 0 || math.IsNaN(s)) {
			t.Fatalf("%v seconds", s)
		}
	})
}
