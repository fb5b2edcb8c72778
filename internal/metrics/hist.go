// Package metrics turns request records into the figures of docs/design.md §3:
// HDR histograms of every latency, counts, rates, goodput and a per-second
// time line. It does no I/O.
//
// Stage: metrics.
// The data flow: experiment → workload → schedule → engine → client → record
// → metrics → verdict → outputs (docs/design.md).
package metrics

import (
	"encoding/base64"
	"fmt"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/spate-dev/spate/result"
)

// Latencies are recorded in microseconds from 1 µs to 1 hour with three
// significant figures (at most 0.1 % error on any percentile).
const (
	latencyMax = int64(time.Hour / time.Microsecond)
	countMax   = 1 << 24
	sigFigs    = 3
)

// Hist is an HDR histogram of one figure.
type Hist struct {
	h     *hdr.Histogram
	scale float64 // divisor from recorded unit to reported unit
}

func newLatencyHist() *Hist { return &Hist{h: hdr.New(1, latencyMax, sigFigs), scale: 1000} }
func newCountHist() *Hist   { return &Hist{h: hdr.New(1, countMax, sigFigs), scale: 1} }

// recordDuration records d, clamped into the histogram's range.
func (h *Hist) recordDuration(d time.Duration) {
	_ = h.h.RecordValue(us(d)) // in range by construction
}

func (h *Hist) recordCount(n int64) {
	if n > countMax {
		n = countMax
	}
	_ = h.h.RecordValue(n)
}

// Summary returns the distribution's summary in reported units.
func (h *Hist) Summary() result.Dist { return Summarize(h.h, h.scale) }

// Summarize summarises an HDR histogram, dividing values by scale.
func Summarize(h *hdr.Histogram, scale float64) result.Dist {
	n := h.TotalCount()
	if n == 0 {
		return result.Dist{}
	}
	q := func(p float64) float64 { return float64(h.ValueAtPercentile(p)) / scale }
	return result.Dist{
		Count:  n,
		Mean:   h.Mean() / scale,
		Stddev: h.StdDev() / scale,
		Min:    float64(h.Min()) / scale,
		P50:    q(50),
		P90:    q(90),
		P95:    q(95),
		P99:    q(99),
		P999:   q(99.9),
		Max:    float64(h.Max()) / scale,
	}
}

// Encode returns the histogram in HdrHistogram's V2 compressed encoding,
// base64, as the result file stores it.
func (h *Hist) Encode() (string, error) {
	b, err := h.h.Encode(hdr.V2CompressedEncodingCookieBase)
	if err != nil {
		return "", fmt.Errorf("encoding histogram: %w", err)
	}
	return string(b), nil
}

// Decode reads a histogram written by Encode.
func Decode(s string) (*hdr.Histogram, error) {
	if _, err := base64.StdEncoding.DecodeString(s); err != nil {
		return nil, fmt.Errorf("decoding histogram: %w", err)
	}
	h, err := hdr.Decode([]byte(s))
	if err != nil {
		return nil, fmt.Errorf("decoding histogram: %w", err)
	}
	return h, nil
}
