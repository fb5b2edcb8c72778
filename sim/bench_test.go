package sim

import (
	"bufio"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"
)

// discardRW is a ResponseWriter that throws the bytes away, so that a
// benchmark sees the simulator's own per-token work without the socket.
type discardRW struct{ h http.Header }

func (d *discardRW) Header() http.Header         { return d.h }
func (d *discardRW) Write(b []byte) (int, error) { return len(b), nil }
func (d *discardRW) WriteHeader(int)             {}
func (d *discardRW) Flush()                      {}

// BenchmarkAppendToken is the cost of formatting one content event.
func BenchmarkAppendToken(b *testing.B) {
	g := &generation{ep: epChat, id: "chatcmpl-0123456789abcdef0123456789abcdef", created: 1700000000, model: "spate-sim", finish: "stop", n: 1 << 30}
	c := newChunker(g)
	v := newVocab()
	buf := make([]byte, 0, 1024)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		buf = c.appendToken(buf[:0], v.word(1, i), false)
	}
	b.SetBytes(int64(len(buf)))
}

// BenchmarkEmitToken is the simulator's whole per-token work in
// deterministic mode except the write system call: formatting, the
// ResponseWriter and flush calls, the write deadline upkeep and the
// Prometheus observations (one op = one token).
func BenchmarkEmitToken(b *testing.B) {
	s, err := New(Deterministic(0, 0, 0))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	g := &generation{ep: epChat, id: "chatcmpl-0123456789abcdef0123456789abcdef", created: 1700000000, model: "spate-sim", finish: "stop", n: 1 << 30, truncate: -1, stallAt: -1, arrival: time.Now(), st: newStream()}
	x := newSSEStream(s, g, &discardRW{h: http.Header{}})
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		x.mu.Lock()
		x.emit(i + 1)
		x.mu.Unlock()
	}
}

// BenchmarkStreamLoopback streams 128-token responses (TTFT = ITL = 0) over
// loopback to a client in the same process and reports the wall time per
// token of server and client together, writes and reads included.
func BenchmarkStreamLoopback(b *testing.B) {
	_, url := startServer(b, Deterministic(0, 0, 128))
	c := newClient(1)
	body := `{"messages":[{"role":"user","content":"hi"}],"stream":true}`
	b.ReportAllocs()
	for b.Loop() {
		resp, err := c.Post(url+"/v1/chat/completions", "application/json", strings.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		br := bufio.NewReader(resp.Body)
		n := 0
		for {
			line, err := br.ReadSlice('\n')
			if err != nil {
				break
			}
			if strings.HasPrefix(string(line), `data: {`) {
				n++
			}
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if n != 129 {
			b.Fatalf("%d events, want 129", n)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/128, "ns/token")
}

// BenchmarkEngineStep is one decode step of a full a100-llama8b batch (256
// sequences).
func BenchmarkEngineStep(b *testing.B) {
	cfg := mustPreset(b, "a100-llama8b")
	core := newEngineCore(cfg, 1)
	for i := range 256 {
		core.add(&seq{id: uint64(i), prompt: 512, target: 1 << 30})
	}
	var now time.Duration
	for range 20 { // admit and prefill all 256
		now += core.step(now).dur
	}
	if r, w := core.counts(); r != 256 || w != 0 {
		b.Fatalf("%d running, %d waiting", r, w)
	}
	b.ReportAllocs()
	for b.Loop() {
		now += core.step(now).dur
	}
}

// BenchmarkCountTokens is the prompt token count (no BPE) per byte of prose.
func BenchmarkCountTokens(b *testing.B) {
	text, err := os.ReadFile("testdata/prose.txt")
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		countTokens(string(text))
	}
}
