package sim

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"math"
	"strconv"
	"unicode"
	"unicode/utf8"
)

// maxEmbeddingDim bounds the length of an embedding vector.
const maxEmbeddingDim = 8192

// maxEmbeddingInputs bounds the number of inputs of one request (OpenAI's).
const maxEmbeddingInputs = 2048

// embedRequest is the JSON body of /v1/embeddings.
type embedRequest struct {
	Model          string          `json:"model"`
	Input          json.RawMessage `json:"input"`
	EncodingFormat string          `json:"encoding_format"`
	Dimensions     *int64          `json:"dimensions"`
}

// embedInput is one input: its text (token ids become words "#id") and its
// token count.
type embedInput struct {
	text   string
	tokens int
}

// parseEmbedRequest parses and validates an embeddings request.
func parseEmbedRequest(body []byte, defaultDim int) (model string, inputs []embedInput, dim int, base64Out bool, aerr *apiError) {
	var w embedRequest
	if err := json.Unmarshal(body, &w); err != nil {
		return "", nil, 0, false, jsonError(err)
	}
	switch w.EncodingFormat {
	case "", "float":
	case "base64":
		base64Out = true
	default:
		return "", nil, 0, false, badRequest("encoding_format", "encoding_format must be \"float\" or \"base64\", got %q.", w.EncodingFormat)
	}
	dim = defaultDim
	if w.Dimensions != nil {
		if *w.Dimensions < 1 || *w.Dimensions > maxEmbeddingDim {
			return "", nil, 0, false, badRequest("dimensions", "dimensions must be in [1, %d], got %d.", maxEmbeddingDim, *w.Dimensions)
		}
		dim = int(*w.Dimensions)
	}
	raw := bytes.TrimSpace(w.Input)
	if len(raw) == 0 || isJSONNull(raw) {
		return "", nil, 0, false, badRequest("input", "input is required.")
	}
	var (
		s    string
		ss   []string
		ids  []int64
		idss [][]int64
	)
	switch {
	case json.Unmarshal(raw, &s) == nil:
		inputs = []embedInput{{text: s}}
	case json.Unmarshal(raw, &ss) == nil:
		for _, t := range ss {
			inputs = append(inputs, embedInput{text: t})
		}
	case json.Unmarshal(raw, &ids) == nil:
		inputs = []embedInput{idsInput(ids)}
	case json.Unmarshal(raw, &idss) == nil:
		for _, x := range idss {
			inputs = append(inputs, idsInput(x))
		}
	default:
		return "", nil, 0, false, badRequest("input", "input must be a string, an array of strings, or token ids.")
	}
	if len(inputs) == 0 || len(inputs) > maxEmbeddingInputs {
		return "", nil, 0, false, badRequest("input", "input must hold 1 to %d items, got %d.", maxEmbeddingInputs, len(inputs))
	}
	for i := range inputs {
		if inputs[i].tokens == 0 {
			inputs[i].tokens = countTokens(inputs[i].text)
		}
		if inputs[i].tokens == 0 {
			return "", nil, 0, false, badRequest("input", "input[%d] is empty.", i)
		}
	}
	return w.Model, inputs, dim, base64Out, nil
}

func idsInput(ids []int64) embedInput {
	var b []byte
	for _, id := range ids {
		b = append(b, " #"...)
		b = strconv.AppendInt(b, id, 10)
	}
	return embedInput{text: string(b), tokens: len(ids)}
}

// embed returns a deterministic, L2-normalised embedding of text: signed
// feature hashing of its lower-cased words (weight 1), word bigrams (0.5)
// and character trigrams of each word (0.25) into dim buckets. Texts that
// share words and spellings get a high cosine similarity; unrelated texts get
// a cosine near 0.
func embed(text string, dim int) []float32 {
	v := make([]float64, dim)
	var prev, cur []byte
	word := make([]byte, 0, 32)
	flush := func() {
		if len(word) == 0 {
			return
		}
		cur = append(cur[:0], word...)
		addFeature(v, featureHash('w', cur, nil), 1)
		if prev != nil {
			addFeature(v, featureHash('b', prev, cur), 0.5)
		}
		padded := make([]byte, 0, len(cur)+2)
		padded = append(append(append(padded, '<'), cur...), '>')
		for i := 0; i+3 <= len(padded); i++ {
			addFeature(v, featureHash('c', padded[i:i+3], nil), 0.25)
		}
		prev = append(prev[:0], cur...)
		word = word[:0]
	}
	for _, r := range text {
		if unicode.IsLetter(r) || unicode.IsDigit(r) || r == '#' {
			word = utf8.AppendRune(word, unicode.ToLower(r))
			continue
		}
		flush()
	}
	flush()
	var norm float64
	for _, x := range v {
		norm += x * x
	}
	out := make([]float32, dim)
	if norm == 0 {
		out[0] = 1 // no features at all: a fixed unit vector
		return out
	}
	inv := 1 / math.Sqrt(norm)
	for i, x := range v {
		out[i] = float32(x * inv)
	}
	return out
}

// featureHash is FNV-1a over a kind byte and one or two byte strings.
func featureHash(kind byte, a, b []byte) uint64 {
	h := uint64(fnvOffset)
	h = (h ^ uint64(kind)) * fnvPrime
	for _, c := range a {
		h = (h ^ uint64(c)) * fnvPrime
	}
	if b != nil {
		h = (h ^ 0xff) * fnvPrime
		for _, c := range b {
			h = (h ^ uint64(c)) * fnvPrime
		}
	}
	return mix64(h)
}

func addFeature(v []float64, h uint64, w float64) {
	i := h % uint64(len(v))
	if h>>63 == 1 {
		w = -w
	}
	v[i] += w
}

// cosine returns the cosine similarity of two vectors of equal length.
func cosine(a, b []float32) float64 {
	var dot, na, nb float64
	for i := range a {
		dot += float64(a[i]) * float64(b[i])
		na += float64(a[i]) * float64(a[i])
		nb += float64(b[i]) * float64(b[i])
	}
	if na == 0 || nb == 0 {
		return 0
	}
	return dot / math.Sqrt(na*nb)
}

// embedding response JSON.
type embedResponse struct {
	Object string       `json:"object"`
	Data   []embedDatum `json:"data"`
	Model  string       `json:"model"`
	Usage  embedUsage   `json:"usage"`
}

type embedDatum struct {
	Object    string `json:"object"`
	Index     int    `json:"index"`
	Embedding any    `json:"embedding"` // []float32, or a base64 string
}

type embedUsage struct {
	PromptTokens int `json:"prompt_tokens"`
	TotalTokens  int `json:"total_tokens"`
}

// embedBase64 encodes a vector as OpenAI does: little-endian float32 bytes
// in standard base64.
func embedBase64(v []float32) string {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return base64.StdEncoding.EncodeToString(b)
}
