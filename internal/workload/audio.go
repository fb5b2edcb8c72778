package workload

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"sync"

	"github.com/spate-dev/spate/experiment"
)

// DefaultAudioFPS is the audio frames a second of audio counts in
// normalised tokens: the seeds' 2,400 frames per 30 s (a 12.5 ms hop).
// Whisper computes 100 mel frames a second; set framesPerSecond to match a
// model.
const DefaultAudioFPS = 80

// maxClipSeconds bounds a synthetic clip: 10 minutes of 16 kHz PCM16 is
// about 25 MB of base64 in every request that carries it.
const maxClipSeconds = 600

// audioClip is one clip to attach: its base64 data, format and length.
type audioClip struct {
	data    string // base64
	format  string // "wav"
	seconds float64
	key     string // identifies it in the digest
}

// audioSet makes the clips of a workload: files, or synthetic tones whose
// lengths are drawn per clip.
type audioSet struct {
	files   []audioClip
	seconds Lengths // synthetic lengths, whole seconds
	rate    int
	fps     float64
	seed    uint64

	mu    sync.Mutex
	tones map[int]audioClip // synthetic clips by length, made once
}

// newAudioSet reads the WAV files, or prepares synthetic tones.
func newAudioSet(ctx context.Context, spec experiment.Audio, seed uint64) (*audioSet, error) {
	a := &audioSet{rate: spec.SampleRate, fps: spec.FramesPerSecond, seed: seed, tones: map[int]audioClip{}}
	if a.rate == 0 {
		a.rate = 16000
	}
	if a.rate < 1000 || a.rate > 192000 {
		return nil, fmt.Errorf("audio.sampleRate %d: want 1000 to 192000 Hz", a.rate)
	}
	if a.fps == 0 {
		a.fps = DefaultAudioFPS
	}
	if a.fps < 0 || math.IsNaN(a.fps) || math.IsInf(a.fps, 0) {
		return nil, fmt.Errorf("audio.framesPerSecond %g: want a number above 0", a.fps)
	}
	for _, f := range spec.Files {
		b, err := readFile(ctx, f, Limits{})
		if err != nil {
			return nil, fmt.Errorf("audio: %w", err)
		}
		secs, err := wavSeconds(b)
		if err != nil {
			return nil, fmt.Errorf("audio: %s: %w", f, err)
		}
		a.files = append(a.files, audioClip{data: base64.StdEncoding.EncodeToString(b), format: "wav", seconds: secs, key: digest(b)[:16]})
	}
	if len(a.files) == 0 {
		var err error
		if a.seconds, err = lengthsOr(ctx, spec.Seconds, "5"); err != nil {
			return nil, fmt.Errorf("audio.seconds: %w", err)
		}
		if a.seconds.Mean > maxClipSeconds {
			return nil, fmt.Errorf("audio.seconds %s: synthetic clips are at most %d s", spec.Seconds, maxClipSeconds)
		}
	}
	return a, nil
}

// key identifies the set in the digest.
func (a *audioSet) key() string {
	k := fmt.Sprintf("rate=%d fps=%g", a.rate, a.fps)
	for _, c := range a.files {
		k += " " + c.key
	}
	if len(a.files) == 0 {
		k += " seconds=" + a.seconds.key()
	}
	return k
}

// clip draws one clip with r.
func (a *audioSet) clip(draw func(int) int, sample func() int) audioClip {
	if len(a.files) > 0 {
		return a.files[draw(len(a.files))]
	}
	secs := min(max(sample(), 1), maxClipSeconds)
	a.mu.Lock()
	defer a.mu.Unlock()
	c, ok := a.tones[secs]
	if !ok {
		b := SyntheticWAV(float64(secs), a.rate, a.seed)
		c = audioClip{data: base64.StdEncoding.EncodeToString(b), format: "wav", seconds: float64(secs), key: fmt.Sprintf("tone-%ds", secs)}
		a.tones[secs] = c
	}
	return c
}

// frames is the clip's audio frames in normalised tokens.
func (a *audioSet) frames(c audioClip) float64 { return c.seconds * a.fps }

// SyntheticWAV is a mono 16-bit PCM WAV of the given length: a 440 Hz tone
// with a little seeded noise (a pure tone may be dropped by a model's
// voice-activity gate). The same seed gives the same bytes.
func SyntheticWAV(seconds float64, rate int, seed uint64) []byte {
	n := int(math.Round(seconds * float64(rate)))
	var buf bytes.Buffer
	buf.Grow(44 + 2*n)
	le := binary.LittleEndian
	put32 := func(v uint32) { _ = binary.Write(&buf, le, v) }
	put16 := func(v uint16) { _ = binary.Write(&buf, le, v) }
	buf.WriteString("RIFF")
	put32(uint32(36 + 2*n))
	buf.WriteString("WAVEfmt ")
	put32(16)
	put16(1) // PCM
	put16(1) // mono
	put32(uint32(rate))
	put32(uint32(rate * 2)) // byte rate
	put16(2)                // block align
	put16(16)               // bits per sample
	buf.WriteString("data")
	put32(uint32(2 * n))
	r := newRand(seed^0xA0D1, 0)
	sample := make([]byte, 2)
	for i := 0; i < n; i++ {
		v := 0.5*math.Sin(2*math.Pi*440*float64(i)/float64(rate)) + 0.02*r.NormFloat64()
		v = max(-1, min(1, v))
		le.PutUint16(sample, uint16(int16(math.Round(v*32767))))
		buf.Write(sample)
	}
	return buf.Bytes()
}

// wavSeconds reads a RIFF WAVE file's length: its data bytes over its
// byte rate.
func wavSeconds(b []byte) (float64, error) {
	if len(b) < 12 || string(b[0:4]) != "RIFF" || string(b[8:12]) != "WAVE" {
		return 0, errors.New("not a WAV file (no RIFF WAVE header); give PCM WAV files")
	}
	var byteRate uint32
	for off := 12; off+8 <= len(b); {
		id, size := string(b[off:off+4]), binary.LittleEndian.Uint32(b[off+4:off+8])
		body := off + 8
		switch id {
		case "fmt ":
			if size < 16 || body+16 > len(b) {
				return 0, errors.New("WAV fmt chunk too short")
			}
			byteRate = binary.LittleEndian.Uint32(b[body+8 : body+12])
		case "data":
			if byteRate == 0 {
				return 0, errors.New("WAV data before its fmt chunk, or a byte rate of 0")
			}
			data := min(uint64(size), uint64(len(b)-body))
			return float64(data) / float64(byteRate), nil
		}
		next := uint64(body) + uint64(size) + uint64(size&1)
		if next > uint64(len(b)) {
			break
		}
		off = int(next)
	}
	return 0, errors.New("WAV file without a data chunk")
}
