package record

import (
	"encoding/binary"
	"math/rand/v2"
)

// NewTrace gives r a fresh W3C trace id and span id (random, non-zero) and
// returns the traceparent header value that carries them, sampled:
// "00-<trace id>-<span id>-01".
func (r *Record) NewTrace() string {
	var b [traceParentLen]byte
	return string(r.AppendNewTrace(b[:0]))
}

// AppendNewTrace is NewTrace appending the header value to b: a client
// that writes its own request formats it in place, allocating nothing.
func (r *Record) AppendNewTrace(b []byte) []byte {
	for r.TraceID == ([16]byte{}) {
		putUint64(r.TraceID[:8], rand.Uint64())
		putUint64(r.TraceID[8:], rand.Uint64())
	}
	for r.SpanID == ([8]byte{}) {
		putUint64(r.SpanID[:], rand.Uint64())
	}
	return AppendTraceParent(b, r.TraceID, r.SpanID)
}

// traceParentLen is the length of a traceparent header value.
const traceParentLen = 55

// TraceParent formats a W3C traceparent header value for a sampled span.
func TraceParent(trace [16]byte, span [8]byte) string {
	var b [traceParentLen]byte
	return string(AppendTraceParent(b[:0], trace, span))
}

// AppendTraceParent appends TraceParent(trace, span) to b.
func AppendTraceParent(b []byte, trace [16]byte, span [8]byte) []byte {
	var v [traceParentLen]byte
	v[0], v[1], v[2] = '0', '0', '-'
	putHex64(v[3:19], binary.BigEndian.Uint64(trace[:8]))
	putHex64(v[19:35], binary.BigEndian.Uint64(trace[8:]))
	v[35] = '-'
	putHex64(v[36:52], binary.BigEndian.Uint64(span[:]))
	v[52], v[53], v[54] = '-', '0', '1'
	return append(b, v[:]...)
}

// putHex64 writes x in 16 lower-case hex digits to dst.
func putHex64(dst []byte, x uint64) {
	binary.BigEndian.PutUint64(dst[:8], hexWord(uint32(x>>32)))
	binary.BigEndian.PutUint64(dst[8:16], hexWord(uint32(x)))
}

// hexWord returns the 8 lower-case hex digits of v, the first in the
// most significant byte: its nibbles spread one to a byte, each then
// offset to '0' or, from 10 on, to 'a'.
func hexWord(v uint32) uint64 {
	x := uint64(v)
	x = (x | x<<16) & 0x0000ffff0000ffff
	x = (x | x<<8) & 0x00ff00ff00ff00ff
	x = (x | x<<4) & 0x0f0f0f0f0f0f0f0f
	letters := ((x + 0x0606060606060606) >> 4) & 0x0101010101010101 // 1 in each byte from 10 on
	return x + 0x3030303030303030 + letters*('a'-'0'-10)
}

func putUint64(b []byte, v uint64) { binary.BigEndian.PutUint64(b, v) }
