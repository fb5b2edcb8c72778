package sim

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"math"
	"testing"
	"time"
)

type embedOut struct {
	Data []struct {
		Index     int             `json:"index"`
		Embedding json.RawMessage `json:"embedding"`
	} `json:"data"`
	Model string     `json:"model"`
	Usage embedUsage `json:"usage"`
}

func getEmbeddings(t testing.TB, url, body string) embedOut {
	t.Helper()
	status, _, b := post(t, newClient(1), url+"/v1/embeddings", body)
	if status != 200 {
		t.Fatalf("status %d: %s", status, b)
	}
	var out embedOut
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func floats(t testing.TB, raw json.RawMessage) []float32 {
	t.Helper()
	var v []float32
	if err := json.Unmarshal(raw, &v); err == nil {
		return v
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatalf("embedding is neither floats nor base64: %s", raw)
	}
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	v = make([]float32, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v
}

// TestEmbeddingSimilarity checks that paraphrases are closer than unrelated
// texts, that vectors are unit length and deterministic across servers.
func TestEmbeddingSimilarity(t *testing.T) {
	_, url := startServer(t, Deterministic(0, 0, 1))
	_, url2 := startServer(t, Deterministic(time.Millisecond, 0, 1))
	texts := []string{
		"The cat sat on the mat by the door.",
		"A cat was sitting on the mat near the door.",
		"Quarterly revenue grew by twelve percent year over year.",
		"Revenue for the quarter grew twelve percent over last year.",
	}
	in, _ := json.Marshal(texts)
	out := getEmbeddings(t, url, `{"model":"emb","input":`+string(in)+`}`)
	if len(out.Data) != 4 || out.Model != "emb" || out.Usage.PromptTokens <= 0 || out.Usage.TotalTokens != out.Usage.PromptTokens {
		t.Fatalf("response: %+v", out)
	}
	v := make([][]float32, 4)
	for i, d := range out.Data {
		if d.Index != i {
			t.Errorf("data[%d].index = %d", i, d.Index)
		}
		v[i] = floats(t, d.Embedding)
		if len(v[i]) != DefaultEmbeddingDim {
			t.Fatalf("dim %d, want %d", len(v[i]), DefaultEmbeddingDim)
		}
		if n := cosine(v[i], v[i]); math.Abs(math.Sqrt(dot(v[i], v[i]))-1) > 1e-5 || n < 0.999 {
			t.Errorf("vector %d not unit length", i)
		}
	}
	catSim, revSim := cosine(v[0], v[1]), cosine(v[2], v[3])
	cross := []float64{cosine(v[0], v[2]), cosine(v[0], v[3]), cosine(v[1], v[2]), cosine(v[1], v[3])}
	t.Logf("paraphrase cosines %.3f %.3f; unrelated %.3f", catSim, revSim, cross)
	for _, c := range cross {
		if catSim < c+0.3 || revSim < c+0.3 {
			t.Errorf("paraphrases (%.3f, %.3f) not clearly closer than unrelated texts (%.3f)", catSim, revSim, c)
		}
	}
	// Deterministic: the same text on another server, base64-encoded and
	// alone, gives the same vector.
	out2 := getEmbeddings(t, url2, `{"input":"The cat sat on the mat by the door.","encoding_format":"base64"}`)
	w := floats(t, out2.Data[0].Embedding)
	for i := range w {
		if w[i] != v[0][i] {
			t.Fatalf("vector differs across servers at %d: %v vs %v", i, w[i], v[0][i])
		}
	}
	if got := getEmbeddings(t, url, `{"input":[[1,2,3]],"dimensions":16}`); len(floats(t, got.Data[0].Embedding)) != 16 || got.Usage.PromptTokens != 3 {
		t.Errorf("token-id input with dimensions 16: %+v", got)
	}
}

func dot(a, b []float32) float64 {
	var s float64
	for i := range a {
		s += float64(a[i]) * float64(b[i])
	}
	return s
}

// TestEmbeddingErrors checks invalid inputs get 400 with OpenAI's error JSON.
func TestEmbeddingErrors(t *testing.T) {
	_, url := startServer(t, Deterministic(0, 0, 1))
	for _, body := range []string{`{}`, `{"input":""}`, `{"input":[]}`, `{"input":5}`, `{"input":"x","dimensions":0}`, `{"input":"x","encoding_format":"hex"}`, `{"input":`} {
		status, _, b := post(t, newClient(1), url+"/v1/embeddings", body)
		var e errorBody
		if status != 400 || json.Unmarshal(b, &e) != nil || e.Error.Type != "invalid_request_error" {
			t.Errorf("%s: status %d, body %s", body, status, b)
		}
	}
}
