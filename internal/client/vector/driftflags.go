package vector

import (
	"errors"
	"time"

	"github.com/spate-dev/spate/internal/scrub"
)

// DriftFlags are the flags of spate vector drift.
type DriftFlags struct {
	// Target is --target, the API's base URL; Model is --model, the
	// embedding model; APIKey is --api-key.
	Target, Model, APIKey string
	// Baseline is --baseline, the baseline file; Update is --update.
	Baseline string
	Update   bool
	// Every and Count are --every and --count.
	Every time.Duration
	Count int
	// MaxDrift and MaxNormShift are --max-drift and --max-norm-shift, the
	// bounds of Worst.Gate.
	MaxDrift, MaxNormShift float64
}

// Watch checks the flags and returns the watch they ask for: the API key
// from getenv("OPENAI_API_KEY") when --api-key is not given, the target
// recorded with its credentials removed. The error names the flags that
// are missing (the command's usage error).
func (f DriftFlags) Watch(getenv func(string) string) (DriftWatch, error) {
	if f.Target == "" || f.Model == "" || f.Baseline == "" {
		return DriftWatch{}, errors.New("--target, --model and --baseline are required")
	}
	key := f.APIKey
	if key == "" {
		key = getenv("OPENAI_API_KEY")
	}
	return DriftWatch{
		Embedder: &Embedder{BaseURL: f.Target, Model: f.Model, APIKey: key}, Baseline: f.Baseline,
		Target: scrub.URL(f.Target), Update: f.Update, Every: f.Every, Count: f.Count,
	}, nil
}
