package record

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"testing"
	"time"
)

func TestHTTPStatus(t *testing.T) {
	for code, want := range map[int]ErrorKind{429: "http_429", 500: "http_500", 404: "http_404", 302: "http_302", 599: "http_599"} {
		if got := HTTPStatus(code); got != want {
			t.Errorf("HTTPStatus(%d) = %q, want %q", code, got, want)
		}
	}
}

func TestDerivedFigures(t *testing.T) {
	t0 := time.Unix(100, 0)
	r := &Record{}
	r.Reset()
	r.Intended, r.Sent = t0, t0.Add(2*time.Millisecond)
	r.FirstToken = r.Sent.Add(50 * time.Millisecond)
	r.End = r.FirstToken.Add(90 * time.Millisecond)
	r.OutputTokens = 10
	if ttft, ok := r.TTFT(); !ok || ttft != 50*time.Millisecond {
		t.Errorf("TTFT %v", ttft)
	}
	if tpot, ok := r.TPOT(); !ok || tpot != 10*time.Millisecond {
		t.Errorf("TPOT %v", tpot)
	}
	if r.Lag() != 2*time.Millisecond || r.E2E() != 140*time.Millisecond {
		t.Errorf("lag %v e2e %v", r.Lag(), r.E2E())
	}
	r.OutputTokens = 1
	if _, ok := r.TPOT(); ok {
		t.Error("TPOT defined for one token")
	}
}

func TestWriter(t *testing.T) {
	t0 := time.Unix(100, 0)
	var b bytes.Buffer
	w := NewWriter(&b, t0)
	r := &Record{}
	r.Reset()
	r.Seq, r.Intended, r.Sent = 7, t0.Add(time.Second), t0.Add(time.Second+time.Millisecond)
	r.FirstToken, r.End = r.Sent.Add(20*time.Millisecond), r.Sent.Add(40*time.Millisecond)
	r.Gaps = []time.Duration{10 * time.Millisecond, 10 * time.Millisecond}
	r.OutputTokens, r.OutputSource = 3, TokensUsage
	r.FinishReason, r.RequestedOutput, r.Entropy, r.EntropyTokens = "length", 3, 1.25, 3
	r.Phases.Set(PhaseWrite, 250*time.Microsecond)
	r.Phases.Set(PhaseFirstByte, 15*time.Millisecond)
	w.Write("main", r)
	r.Fail(HTTPStatus(503), "HTTP 503", r.End)
	w.Write("main", r)
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	lines := bytes.Split(bytes.TrimSpace(b.Bytes()), []byte("\n"))
	if len(lines) != 2 {
		t.Fatalf("%d lines", len(lines))
	}
	var l map[string]any
	if err := json.Unmarshal(lines[0], &l); err != nil {
		t.Fatal(err)
	}
	if l["seq"].(float64) != 7 || l["ttft_ms"].(float64) != 20 || l["intended_ms"].(float64) != 1000 || l["output_source"] != "usage" || len(l["itl_ms"].([]any)) != 2 ||
		l["finish_reason"] != "length" || l["max_tokens"].(float64) != 3 || l["entropy"].(float64) != 1.25 || l["entropy_tokens"].(float64) != 3 {
		t.Fatalf("line %s", lines[0])
	}
	// Phases it had, and none it did not (a reused connection: no
	// connect, not 0).
	if !bytes.Contains(lines[0], []byte(`"http_phases":{"write_ms":0.25,"first_byte_ms":15}`)) {
		t.Fatalf("line %s: want http_phases with write and first byte alone", lines[0])
	}
	if !bytes.Contains(lines[1], []byte(`"error":"http_503"`)) {
		t.Fatalf("line %s", lines[1])
	}
}

func TestNewTrace(t *testing.T) {
	var a, b Record
	ha, hb := a.NewTrace(), b.NewTrace()
	if len(ha) != 55 || ha[:3] != "00-" || ha[52:] != "-01" {
		t.Fatalf("traceparent %q: want 00-<32 hex>-<16 hex>-01", ha)
	}
	if ha == hb || a.TraceID == b.TraceID {
		t.Fatalf("two records got the same trace: %q", ha)
	}
	if got := TraceParent(a.TraceID, a.SpanID); got != ha {
		t.Fatalf("TraceParent = %q, want %q", got, ha)
	}
	want := "00-0102030405060708090a0b0c0d0e0f10-a1a2a3a4a5a6a7a8-01"
	if got := TraceParent([16]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}, [8]byte{0xa1, 0xa2, 0xa3, 0xa4, 0xa5, 0xa6, 0xa7, 0xa8}); got != want {
		t.Fatalf("TraceParent = %q, want %q", got, want)
	}
}

// TestAppendNewTrace: the header value appended in place is NewTrace's,
// after what the buffer held, and every byte value is hex as
// encoding/hex has it.
func TestAppendNewTrace(t *testing.T) {
	var r Record
	b := r.AppendNewTrace([]byte("Traceparent: "))
	if want := "Traceparent: " + TraceParent(r.TraceID, r.SpanID); string(b) != want || r.TraceID == ([16]byte{}) || r.SpanID == ([8]byte{}) {
		t.Fatalf("appended %q, want %q", b, want)
	}
	for x := range 256 {
		var trace [16]byte
		var span [8]byte
		for i := range trace {
			trace[i] = byte(x + i)
		}
		for i := range span {
			span[i] = byte(x * (i + 1))
		}
		want := "00-" + hex.EncodeToString(trace[:]) + "-" + hex.EncodeToString(span[:]) + "-01"
		if got := string(AppendTraceParent(nil, trace, span)); got != want {
			t.Fatalf("AppendTraceParent = %q, want %q", got, want)
		}
	}
}
