package vector

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spate-dev/spate/internal/capread"
	"github.com/spate-dev/spate/internal/scrub"
)

// DefaultCanaries are the fixed texts embedded to watch an embedding
// model for drift: short and long, plain and technical, several languages.
var DefaultCanaries = []string{
	"The quick brown fox jumps over the lazy dog.",
	"How do I reset my password?",
	"Refunds are issued to the original payment method within five business days.",
	"func main() { fmt.Println(\"hello, world\") }",
	"SELECT id, name FROM users WHERE created_at > now() - interval '1 day';",
	"La tour Eiffel mesure environ trois cent trente mètres.",
	"机器学习模型的推理延迟取决于批大小。",
	"Photosynthesis converts light energy into chemical energy stored in glucose.",
}

// Baseline is the embeddings of canary texts at one time: what later
// embeddings of the same texts are compared with.
type Baseline struct {
	Model    string    `json:"model"`
	Target   string    `json:"target"` // base URL, credentials removed
	TakenAt  time.Time `json:"taken_at"`
	Canaries []Canary  `json:"canaries"`
}

// Canary is one text and its embedding.
type Canary struct {
	Text   string    `json:"text"`
	Vector []float32 `json:"vector"`
}

// ReadBaseline reads a baseline file; the read ends when ctx is done.
func ReadBaseline(ctx context.Context, path string) (*Baseline, error) {
	b, err := capread.ReadFile(ctx, path, capread.DataLimit, "")
	if err != nil {
		return nil, fmt.Errorf("reading drift baseline: %w", err)
	}
	var bl Baseline
	if err := json.Unmarshal(b, &bl); err != nil {
		return nil, fmt.Errorf("reading drift baseline %s: %w", path, err)
	}
	if len(bl.Canaries) == 0 {
		return nil, fmt.Errorf("reading drift baseline %s: no canaries", path)
	}
	return &bl, nil
}

// Write writes the baseline as JSON.
func (b *Baseline) Write(path string) error {
	out, err := json.MarshalIndent(b, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding drift baseline: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("writing drift baseline %s: %w", path, err)
	}
	if err := os.WriteFile(path, append(out, '\n'), 0o644); err != nil {
		return fmt.Errorf("writing drift baseline: %w", err)
	}
	return nil
}

// Embedder embeds texts through an OpenAI-compatible /v1/embeddings.
type Embedder struct {
	BaseURL, Model, APIKey string
	Client                 *http.Client
}

// Embed returns the embedding of each text, in order.
func (e *Embedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	hc := e.Client
	if hc == nil {
		hc = newHTTPClient()
	}
	body, err := json.Marshal(map[string]any{"model": e.Model, "input": texts, "encoding_format": "float"})
	if err != nil {
		return nil, err
	}
	url := strings.TrimRight(e.BaseURL, "/") + "/embeddings"
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(string(body)))
	if err != nil {
		return nil, fmt.Errorf("embedding canaries: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	if e.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+e.APIKey)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("embedding canaries at %s: %w", scrub.URL(url), err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, fmt.Errorf("embedding canaries: reading the response: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("embedding canaries at %s: %w", scrub.URL(url), &httpStatusError{resp.StatusCode, string(b)})
	}
	var out struct {
		Data []struct {
			Index     int       `json:"index"`
			Embedding []float32 `json:"embedding"`
		} `json:"data"`
	}
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, fmt.Errorf("embedding canaries: bad response %.120q: %w", b, err)
	}
	if len(out.Data) != len(texts) {
		return nil, fmt.Errorf("embedding canaries: %d embeddings for %d texts", len(out.Data), len(texts))
	}
	vecs := make([][]float32, len(texts))
	for _, d := range out.Data {
		if d.Index < 0 || d.Index >= len(texts) || vecs[d.Index] != nil || len(d.Embedding) == 0 {
			return nil, errors.New("embedding canaries: the response's indexes do not match the texts")
		}
		vecs[d.Index] = d.Embedding
	}
	return vecs, nil
}

// Drift compares embeddings of the canaries now with a baseline.
type Drift struct {
	TakenAt time.Time `json:"taken_at"`
	// MeanCosineDrift and MaxCosineDrift are over canaries of
	// 1 − cos(baseline, now): 0 when nothing moved.
	MeanCosineDrift float64 `json:"mean_cosine_drift"`
	MaxCosineDrift  float64 `json:"max_cosine_drift"`
	// MaxNormShift is the largest |‖now‖ / ‖baseline‖ − 1|.
	MaxNormShift float64       `json:"max_norm_shift"`
	Canaries     []CanaryDrift `json:"canaries"`

	// MeanNormShift is the seed's mean L2-norm shift (004 §2.4, gate
	// > 0.18: recalibrate the embedding model): the mean of the canaries'
	// norms now minus their mean in the baseline, in embedding units.
	MeanNormShift float64 `json:"mean_norm_shift"`
	// CentroidShift is ‖mean(now) − mean(baseline)‖ and MeanDisplacement
	// the mean of ‖now − baseline‖ over canaries: movements that the norm
	// shift of unit-normalised embeddings (always about 0) cannot show.
	CentroidShift    float64 `json:"centroid_shift"`
	MeanDisplacement float64 `json:"mean_displacement"`
	// Normalised is set when the baseline's embeddings have unit norm:
	// their norm shift says nothing then.
	Normalised bool `json:"normalised,omitempty"`
}

// DefaultMaxNormShift is the seed's gate on the mean L2-norm shift.
const DefaultMaxNormShift = 0.18

// CanaryDrift is one canary's change.
type CanaryDrift struct {
	Text         string  `json:"text"`
	BaselineNorm float64 `json:"baseline_norm"`
	Norm         float64 `json:"norm"`
	// NormShift is ‖now‖ / ‖baseline‖ − 1.
	NormShift float64 `json:"norm_shift"`
	// CosineDrift is 1 − cos(baseline, now).
	CosineDrift float64 `json:"cosine_drift"`
}

// CompareDrift compares now (one vector per baseline canary, in order)
// with the baseline.
func CompareDrift(base *Baseline, now [][]float32, at time.Time) (*Drift, error) {
	if len(now) != len(base.Canaries) {
		return nil, fmt.Errorf("comparing drift: %d embeddings for %d canaries", len(now), len(base.Canaries))
	}
	d := &Drift{TakenAt: at, Normalised: true}
	var meanBase, meanNow float64
	var centroid []float64
	for i, c := range base.Canaries {
		if len(now[i]) != len(c.Vector) {
			return nil, fmt.Errorf("comparing drift: canary %d has %d dimensions now, %d in the baseline: another model?", i+1, len(now[i]), len(c.Vector))
		}
		nb, nn := norm(c.Vector), norm(now[i])
		cd := CanaryDrift{Text: c.Text, BaselineNorm: nb, Norm: nn}
		if nb > 0 {
			cd.NormShift = nn/nb - 1
		}
		cd.CosineDrift = max(Cosine.Distance(c.Vector, now[i]), 0) // rounding can make 1 − cos of equal vectors a hair negative
		d.MeanCosineDrift += cd.CosineDrift
		d.MaxCosineDrift = max(d.MaxCosineDrift, cd.CosineDrift)
		d.MaxNormShift = max(d.MaxNormShift, math.Abs(cd.NormShift))
		d.Canaries = append(d.Canaries, cd)
		meanBase += nb
		meanNow += nn
		d.Normalised = d.Normalised && math.Abs(nb-1) < 0.01
		if centroid == nil {
			centroid = make([]float64, len(c.Vector))
		}
		var disp float64
		for j := range c.Vector {
			diff := float64(now[i][j]) - float64(c.Vector[j])
			centroid[j] += diff
			disp += diff * diff
		}
		d.MeanDisplacement += math.Sqrt(disp)
	}
	k := float64(len(base.Canaries))
	d.MeanCosineDrift /= k
	d.MeanDisplacement /= k
	d.MeanNormShift = (meanNow - meanBase) / k
	var c2 float64
	for _, v := range centroid {
		c2 += (v / k) * (v / k)
	}
	d.CentroidShift = math.Sqrt(c2)
	return d, nil
}

// WriteDrift prints a drift comparison, one line per canary and a total.
func WriteDrift(w io.Writer, d *Drift) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "canary\tnorm (baseline)\tnorm now\tnorm shift\tcosine drift\n")
	for _, c := range d.Canaries {
		text := c.Text
		if r := []rune(text); len(r) > 40 {
			text = string(r[:39]) + "…"
		}
		fmt.Fprintf(tw, "%s\t%.4f\t%.4f\t%+.4f%%\t%.6f\n", text, c.BaselineNorm, c.Norm, 100*c.NormShift, c.CosineDrift)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if _, err := fmt.Fprintf(w, "drift: mean cosine %.6f, max cosine %.6f, max norm shift %.4f%%\n", d.MeanCosineDrift, d.MaxCosineDrift, 100*d.MaxNormShift); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "mean L2-norm shift %+.4f, centroid shift %.4f, mean displacement %.4f\n", d.MeanNormShift, d.CentroidShift, d.MeanDisplacement)
	if err == nil && d.Normalised {
		_, err = fmt.Fprintln(w, "note: the baseline's embeddings have unit norm: their L2-norm shift stays about 0 whatever the model does; watch the cosine drift and the centroid shift")
	}
	return err
}

// DriftWatch is spate vector drift: it embeds the canaries through
// Embedder and, when Baseline's file is missing (or Update), writes them as
// the baseline; otherwise it compares them with it Count times (at least
// once), Every apart.
type DriftWatch struct {
	Embedder *Embedder
	Baseline string // the baseline file
	Target   string // the API, credentials removed, recorded in a new baseline
	Update   bool
	Every    time.Duration
	Count    int
}

// Worst is the largest drift a watch saw over its comparisons.
type Worst struct {
	// Cosine is the largest cosine drift of any canary.
	Cosine float64
	// MeanNormShift is the mean L2-norm shift of largest magnitude (its
	// sign kept).
	MeanNormShift float64
}

// Gate is the verdict on a watch: an error saying which drift went past
// its bound (the cosine drift of --max-drift, the mean L2-norm shift of
// --max-norm-shift, either way), nil when neither did.
func (w Worst) Gate(maxCosine, maxNormShift float64) error {
	if w.Cosine > maxCosine {
		return fmt.Errorf("max cosine drift %.6f > --max-drift %g", w.Cosine, maxCosine)
	}
	if math.Abs(w.MeanNormShift) > maxNormShift {
		return fmt.Errorf("mean L2-norm shift %+.4f beyond --max-norm-shift %g: recalibrate the embedding model", w.MeanNormShift, maxNormShift)
	}
	return nil
}

// Run does the watch, printing to w, and returns the largest drift of any
// comparison (zero when it wrote a baseline).
func (d DriftWatch) Run(ctx context.Context, w io.Writer) (worst Worst, err error) {
	base, err := ReadBaseline(ctx, d.Baseline)
	if d.Update || errors.Is(err, fs.ErrNotExist) {
		vecs, err := d.Embedder.Embed(ctx, DefaultCanaries)
		if err != nil {
			return Worst{}, err
		}
		b := &Baseline{Model: d.Embedder.Model, Target: d.Target, TakenAt: time.Now().UTC()}
		for i, t := range DefaultCanaries {
			b.Canaries = append(b.Canaries, Canary{Text: t, Vector: vecs[i]})
		}
		if err := b.Write(d.Baseline); err != nil {
			return Worst{}, err
		}
		fmt.Fprintf(w, "baseline of %d canaries (%d dimensions) written to %s\n", len(vecs), len(vecs[0]), d.Baseline)
		return Worst{}, nil
	}
	if err != nil {
		return Worst{}, err
	}
	texts := make([]string, len(base.Canaries))
	for i, c := range base.Canaries {
		texts[i] = c.Text
	}
	for n := 0; n < max(d.Count, 1); n++ {
		if n > 0 {
			select {
			case <-time.After(d.Every):
			case <-ctx.Done():
				return worst, ctx.Err()
			}
		}
		vecs, err := d.Embedder.Embed(ctx, texts)
		if err != nil {
			return worst, err
		}
		dr, err := CompareDrift(base, vecs, time.Now().UTC())
		if err != nil {
			return worst, err
		}
		fmt.Fprintf(w, "%s against the baseline of %s (%s)\n", dr.TakenAt.Format(time.RFC3339), base.TakenAt.Format(time.RFC3339), base.Model)
		if err := WriteDrift(w, dr); err != nil {
			return worst, err
		}
		worst.Cosine = max(worst.Cosine, dr.MaxCosineDrift)
		if math.Abs(dr.MeanNormShift) > math.Abs(worst.MeanNormShift) {
			worst.MeanNormShift = dr.MeanNormShift
		}
	}
	return worst, nil
}
