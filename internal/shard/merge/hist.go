package merge

import (
	"fmt"
	"strings"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/spate-dev/spate/internal/metrics"
)

// countMetrics are the histograms kept in plain counts, not microseconds.
var countMetrics = map[string]bool{
	metrics.TokensPerChunk: true, metrics.OutputTokens: true, metrics.InputTokens: true,
}

// mergeHists adds up, metric by metric, the shards' histograms (HDR V2
// base64, as result.Result.Histograms holds them). Every count lands in the
// same bucket it had in its shard: the merged histogram is the one a single
// process recording all the samples would have kept.
func mergeHists(parts []map[string]string) (map[string]*hdr.Histogram, error) {
	out := map[string]*hdr.Histogram{}
	for i, m := range parts {
		for k, enc := range m {
			h, err := metrics.Decode(enc)
			if err != nil {
				return nil, fmt.Errorf("histogram %s of input %d: %w", k, i+1, err)
			}
			acc, ok := out[k]
			if !ok {
				out[k] = h
				continue
			}
			if dropped := acc.Merge(h); dropped > 0 {
				return nil, fmt.Errorf("histogram %s of input %d: %d values outside the merged histogram's range (shards recorded with different settings?)", k, i+1, dropped)
			}
		}
	}
	return out, nil
}

// encodeHists encodes merged histograms for the result file.
func encodeHists(hs map[string]*hdr.Histogram) (map[string]string, error) {
	out := make(map[string]string, len(hs))
	for k, h := range hs {
		b, err := h.Encode(hdr.V2CompressedEncodingCookieBase)
		if err != nil {
			return nil, fmt.Errorf("encoding merged histogram %s: %w", k, err)
		}
		out[k] = string(b)
	}
	return out, nil
}

// scaleOf is the divisor from a histogram's recorded unit to the unit the
// result reports: 1 for counts, 1000 for latencies (recorded in µs,
// reported in ms, the metrics whose names end in _ms).
func scaleOf(key string) float64 {
	if countMetrics[key] || !strings.HasSuffix(key, "_ms") {
		return 1
	}
	return 1000
}
