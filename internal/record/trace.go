package record

import (
	"encoding/hex"
	"math/rand/v2"
)

// NewTrace gives r a fresh W3C trace id and span id (random, non-zero) and
// returns the traceparent header value that carries them, sampled:
// "00-<trace id>-<span id>-01".
func (r *Record) NewTrace() string {
	for r.TraceID == ([16]byte{}) {
		putUint64(r.TraceID[:8], rand.Uint64())
		putUint64(r.TraceID[8:], rand.Uint64())
	}
	for r.SpanID == ([8]byte{}) {
		putUint64(r.SpanID[:], rand.Uint64())
	}
	return TraceParent(r.TraceID, r.SpanID)
}

// TraceParent formats a W3C traceparent header value for a sampled span.
func TraceParent(trace [16]byte, span [8]byte) string {
	var b [55]byte
	copy(b[:], "00-")
	hex.Encode(b[3:35], trace[:])
	b[35] = '-'
	hex.Encode(b[36:52], span[:])
	copy(b[52:], "-01")
	return string(b[:])
}

func putUint64(b []byte, v uint64) {
	for i := range 8 {
		b[i] = byte(v >> (56 - 8*i))
	}
}
