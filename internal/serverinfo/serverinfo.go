// Package serverinfo reads what a server says about itself in passing, in
// the answer to a model listing (GET /v1/models) that every run sends
// anyway: the software its Server header and the listing's owned_by name,
// the HTTP version it answered with, its clock (the Date header), and the
// context length it gives the model. spate doctor and spate run read the
// same answer the same way, so the result's provenance and the doctor's
// table agree.
//
// Stage: before the pipeline (a look at the target); docs/design.md.
package serverinfo

import (
	"math"
	"net/http"
	"strings"
	"time"

	"github.com/valyala/fastjson"

	"github.com/spate-dev/spate/internal/scrub"
	"github.com/spate-dev/spate/result"
)

// sign is a value of a field of the answer that names the software.
type sign struct {
	field    string // "server" (the header, lower case) or "owned_by"
	value    string // lower case; a header matches when it starts with it
	software string
}

// signs are the known values, from the servers' recorded answers
// (testdata of the packages that replay them) and their documentation.
var signs = []sign{
	{"server", "llama.cpp", "llama.cpp"},
	{"owned_by", "llamacpp", "llama.cpp"},
	{"owned_by", "vllm", "vLLM"},
	{"owned_by", "sglang", "SGLang"},
	{"owned_by", "library", "Ollama"},
	{"owned_by", "ollama", "Ollama"},
	{"owned_by", "organization_owner", "LM Studio"},
	{"owned_by", "spate", "spate sim"},
	{"owned_by", "openai", "OpenAI"},
	{"owned_by", "system", "OpenAI"},
}

// contextFields are the listing fields that give a model's context
// length, in the order they are believed: vLLM's and SGLang's
// max_model_len is what the server enforces; llama.cpp's n_ctx_train is
// what the model was trained for (its slots may have less: /props).
var contextFields = [][]string{
	{"max_model_len"},
	{"context_length"},
	{"context_window"},
	{"max_context_length"},
	{"meta", "n_ctx_train"},
}

// Read reads the answer resp (its body b) to a model listing sent at sent
// and received whole at got, for model (the first listed when "").
func Read(resp *http.Response, b []byte, model string, sent, got time.Time) result.ServerInfo {
	var in result.ServerInfo
	if resp == nil {
		return in
	}
	in.HTTP = resp.Proto
	var evidence []string
	note := func(field, value string) {
		v := strings.ToLower(strings.TrimSpace(value))
		for _, s := range signs {
			if s.field == field && (v == s.value || field == "server" && strings.HasPrefix(v, s.value)) {
				if in.Software == "" {
					in.Software = s.software
				}
				if s.software == in.Software {
					evidence = append(evidence, fieldName(field)+": "+scrub.Text(value, 40))
				}
				return
			}
		}
	}
	note("server", resp.Header.Get("Server"))
	if m := entry(b, model); m != nil {
		note("owned_by", string(m.GetStringBytes("owned_by")))
		for _, f := range contextFields {
			if n := m.GetInt(f...); n > 0 {
				in.MaxContext, in.MaxContextFrom = n, strings.Join(f, ".")
				break
			}
		}
	}
	in.Evidence = strings.Join(evidence, ", ")
	if d, err := http.ParseTime(resp.Header.Get("Date")); err == nil && !got.Before(sent) {
		rtt := got.Sub(sent).Seconds()
		mid := sent.Add(got.Sub(sent) / 2)
		off := d.Add(500 * time.Millisecond).Sub(mid).Seconds()
		e := 0.5 + rtt/2
		off, e = round3(off), round3(e)
		in.ClockOffsetS, in.ClockErrorS = &off, &e
	}
	return in
}

// entry is the listing's entry of model, or its first when model is ""
// or not listed; nil when b is no listing.
func entry(b []byte, model string) *fastjson.Value {
	var p fastjson.Parser
	v, err := p.ParseBytes(b)
	if err != nil {
		return nil
	}
	data := v.GetArray("data")
	for _, m := range data {
		if model != "" && string(m.GetStringBytes("id")) == model {
			return m
		}
	}
	if len(data) > 0 {
		return data[0]
	}
	return nil
}

func fieldName(f string) string {
	if f == "server" {
		return "Server"
	}
	return f
}

func round3(x float64) float64 { return math.Round(x*1000) / 1000 }
