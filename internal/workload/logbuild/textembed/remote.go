package textembed

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/spate-dev/spate/internal/scrub"
)

// DefaultBatch is the default number of texts sent in one embeddings
// request.
const DefaultBatch = 64

// Remote embeds texts through an OpenAI-compatible /v1/embeddings
// endpoint, Batch texts a request, one request at a time.
type Remote struct {
	// BaseURL is the API root, e.g. http://127.0.0.1:8000/v1.
	BaseURL string
	// Model is the embedding model to ask for.
	Model string
	// APIKey is sent as a bearer token when set; it is never printed.
	APIKey string
	// Batch is the number of texts per request (0: DefaultBatch).
	Batch int
	// Timeout bounds one request (0: one minute).
	Timeout time.Duration
	// HTTP is the client to send with (nil: http.DefaultClient).
	HTTP *http.Client
}

var _ Embedder = Remote{}

// Name implements Embedder.
func (r Remote) Name() string {
	return fmt.Sprintf("%s embeddings of model %s", scrub.URL(strings.TrimRight(r.BaseURL, "/")), r.Model)
}

type embeddingsRequest struct {
	Model          string   `json:"model,omitempty"`
	Input          []string `json:"input"`
	EncodingFormat string   `json:"encoding_format"`
}

type embeddingsResponse struct {
	Data []struct {
		Index     int       `json:"index"`
		Embedding []float64 `json:"embedding"`
	} `json:"data"`
}

// Embed implements Embedder.
func (r Remote) Embed(ctx context.Context, texts []string) ([]Vector, error) {
	batch := r.Batch
	if batch <= 0 {
		batch = DefaultBatch
	}
	out := make([]Vector, 0, len(texts))
	dim := -1
	for start := 0; start < len(texts); start += batch {
		end := min(start+batch, len(texts))
		vs, err := r.embedBatch(ctx, texts[start:end])
		if err != nil {
			return nil, fmt.Errorf("embedding texts %d-%d of %d through %s: %w", start+1, end, len(texts), r.Name(), err)
		}
		for i, v := range vs {
			if dim < 0 {
				dim = len(v)
			}
			if len(v) != dim || dim == 0 {
				return nil, fmt.Errorf("embedding text %d through %s: vector of %d dims, want %d like the others", start+i+1, r.Name(), len(v), dim)
			}
			out = append(out, normalize(Dense(v)))
		}
	}
	return out, nil
}

func (r Remote) embedBatch(ctx context.Context, texts []string) ([][]float64, error) {
	body, err := json.Marshal(embeddingsRequest{Model: r.Model, Input: texts, EncodingFormat: "float"})
	if err != nil {
		return nil, err
	}
	timeout := r.Timeout
	if timeout <= 0 {
		timeout = time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(r.BaseURL, "/")+"/embeddings", bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("target %q is not a usable URL such as http://127.0.0.1:8000/v1", scrub.URL(r.BaseURL))
	}
	req.Header.Set("Content-Type", "application/json")
	if r.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+r.APIKey)
	}
	client := r.HTTP
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, redactErr(err, r)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 1<<30))
	if err != nil {
		return nil, redactErr(err, r)
	}
	if resp.StatusCode != http.StatusOK {
		msg := strings.TrimSpace(string(raw))
		if len(msg) > 300 {
			msg = msg[:300] + "…"
		}
		return nil, fmt.Errorf("HTTP %d: %s", resp.StatusCode, msg)
	}
	var er embeddingsResponse
	if err := json.Unmarshal(raw, &er); err != nil {
		return nil, fmt.Errorf("reading the response: %w", err)
	}
	if len(er.Data) != len(texts) {
		return nil, fmt.Errorf("the response holds %d embeddings for %d inputs", len(er.Data), len(texts))
	}
	out := make([][]float64, len(texts))
	for _, d := range er.Data {
		if d.Index < 0 || d.Index >= len(texts) || out[d.Index] != nil {
			return nil, fmt.Errorf("the response has a bad or repeated index %d", d.Index)
		}
		out[d.Index] = d.Embedding
	}
	return out, nil
}

// redactErr keeps the API key out of a transport error (net/http errors
// quote the URL, which never holds the key, but be safe about it).
func redactErr(err error, r Remote) error {
	if r.APIKey == "" {
		return err
	}
	return fmt.Errorf("%s", strings.ReplaceAll(err.Error(), r.APIKey, "<redacted>"))
}
