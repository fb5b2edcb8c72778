package result

import (
	"math"
	"strconv"
)

// ServerInfo is what the server said of itself in passing, in its
// answer to the model listing every run sends (GET /models): spate run
// writes it in the provenance, spate doctor shows it.
type ServerInfo struct {
	// Software names the server when something in the answer says which
	// it is ("llama.cpp", "vLLM", "Ollama", "spate sim", ...); "" when
	// nothing does.
	Software string `json:"software,omitempty"`
	// Evidence is what named it, e.g. `Server: llama.cpp` or
	// `owned_by: vllm` (several joined by ", ").
	Evidence string `json:"evidence,omitempty"`
	// HTTP is the protocol the server answered with ("HTTP/1.1",
	// "HTTP/2.0").
	HTTP string `json:"http,omitempty"`
	// MaxContext is the context length, in tokens, the listing gives the
	// model (0 when it gives none), and MaxContextFrom the field it came
	// from ("max_model_len", "meta.n_ctx_train", ...).
	MaxContext     int    `json:"max_context,omitempty"`
	MaxContextFrom string `json:"max_context_from,omitempty"`
	// ClockOffsetS is how far the server's clock (its Date header, which
	// has whole seconds) is ahead of this machine's, and ClockErrorS the
	// bound on that estimate (half a second of the header's rounding plus
	// half the round trip). Both are absent when the server sent no Date.
	ClockOffsetS *float64 `json:"clock_offset_s,omitempty"`
	ClockErrorS  *float64 `json:"clock_error_s,omitempty"`
}

// Clock says what the clock fields mean, e.g. "12.3 s ahead of this
// machine's (± 0.6 s)", "within ± 0.6 s of this machine's", or "unknown
// (the server sent no Date header)".
func (in ServerInfo) Clock() string {
	if in.ClockOffsetS == nil || in.ClockErrorS == nil {
		return "not known: the server sent no Date header"
	}
	off, e := *in.ClockOffsetS, *in.ClockErrorS
	switch {
	case math.Abs(off) <= e:
		return "within ± " + secs(e) + " of this machine's"
	case off > 0:
		return secs(off) + " ahead of this machine's (± " + secs(e) + ")"
	default:
		return secs(-off) + " behind this machine's (± " + secs(e) + ")"
	}
}

func secs(x float64) string { return strconv.FormatFloat(x, 'f', 1, 64) + " s" }
