package workload

import (
	"fmt"
	"math"
	"strings"

	"github.com/spate-dev/spate/experiment"
	"github.com/spate-dev/spate/internal/metrics/check"
	"github.com/spate-dev/spate/internal/workload/payload"
)

// finishing is what Build adds to every request of a workload.
type finishing struct {
	system     string
	systemTmpl *payload.Template // system as a template, filled per request, or nil
	checks     *check.Set
	images     []imageData
	imageCount int
	weights    experiment.Weights
	seed       uint64
	// shaping is the workload's own sampling and constraints (an intent's
	// win); tok counts prompts the constraints cut.
	shaping shaping
	tok     Counter
}

// finish returns a Source that adds the system prompt, images and checks
// to src's requests and scores their complexity and normalised tokens.
func finish(src Source, f finishing) Source {
	var imgKeys []string
	for _, im := range f.images {
		imgKeys = append(imgKeys, im.key)
	}
	key := fmt.Sprintf("finish/v1 system=%q images=%d:%s weights=%+v", f.system, f.imageCount, strings.Join(imgKeys, ","), f.weights) + f.shaping.key()
	if f.checks != nil {
		for _, c := range f.checks.Checks {
			key += " check=" + c.Name()
		}
	}
	return SourceFunc{
		Sha256: digest([]byte(src.Digest()), []byte(key)),
		F: func(n uint64) (*Request, error) {
			r, err := src.Request(n)
			if err != nil {
				return nil, err
			}
			c := *r
			if c.PromptTemplate != nil && (f.system != "" || f.imageCount > 0) {
				// The prompt goes into messages here: fill it first, as
				// WithTemplates would (the same data, the same draws).
				if c.Prompt, err = c.PromptTemplate.Execute(payload.NewData(n, c.Vars, f.seed)); err != nil {
					return nil, err
				}
				c.PromptTemplate = nil
			}
			if system := f.system; system != "" {
				if f.systemTmpl != nil {
					// Its own random source: a prompt template of the same
					// request draws from another.
					if system, err = f.systemTmpl.Execute(payload.NewData(n, r.Vars, f.seed^0x5157)); err != nil {
						return nil, err
					}
				}
				c.Messages = withSystem(c.Messages, c.Prompt, system, len(c.Turns) > 0)
			}
			if f.checks != nil {
				c.Checks, c.KeepAnswer = mergeChecks(c.Checks, f.checks), true
			}
			f.shaping.sample(&c, f.seed, n)
			if cons := c.constraints; cons != nil {
				if did := cons.apply(&c, f.tok); did != "" {
					c.Labels = append(append([]Label(nil), c.Labels...), Label{Key: "constraint", Value: did})
				}
			}
			patches := 0
			if f.imageCount > 0 && len(f.images) > 0 {
				var parts []Part
				rnd := newRand(f.seed^0x1A6E, n)
				for i := 0; i < f.imageCount; i++ {
					im := f.images[rnd.IntN(len(f.images))]
					parts = append(parts, Part{Type: "image_url", ImageURL: im.url})
					patches += im.patches(f.weights)
				}
				c.Messages = withImages(c.Messages, c.Prompt, parts)
			}
			text := c.InputTokens
			if text == 0 {
				text = estimateTokens(&c)
			}
			c.NormTokens = float64(text)*f.weights.Text + float64(patches)*f.weights.ImagePatch
			c.Complexity = Complexity(&c)
			return &c, nil
		},
	}
}

// withSystem puts a system message first: before the existing messages,
// or before the prompt as a user message (not for conversations, whose
// turns are added by the engine after Messages).
func withSystem(msgs []Message, prompt, system string, conversation bool) []Message {
	if len(msgs) > 0 && msgs[0].Role == "system" {
		return msgs
	}
	out := []Message{{Role: "system", Content: system}}
	if len(msgs) == 0 && !conversation {
		return append(out, Message{Role: "user", Content: prompt})
	}
	return append(out, msgs...)
}

// withImages adds image parts to the last user message (made from the
// prompt when there are no messages).
func withImages(msgs []Message, prompt string, parts []Part) []Message {
	out := append([]Message(nil), msgs...)
	if len(out) == 0 || out[len(out)-1].Role != "user" {
		out = append(out, Message{Role: "user", Content: prompt})
	}
	last := &out[len(out)-1]
	if len(last.Parts) == 0 {
		last.Parts = []Part{{Type: "text", Text: last.Content}}
		last.Content = ""
	} else {
		last.Parts = append([]Part(nil), last.Parts...)
	}
	last.Parts = append(last.Parts, parts...)
	return out
}

func mergeChecks(a, b *check.Set) *check.Set {
	if a == nil {
		return b
	}
	return &check.Set{Checks: append(append([]*check.Check(nil), a.Checks...), b.Checks...)}
}

// estimateTokens guesses a request's text tokens when the source did not
// count them: about four characters a token.
func estimateTokens(r *Request) int {
	chars := len(r.Prompt)
	for _, m := range r.Messages {
		chars += len(m.Text())
	}
	for _, t := range r.Turns {
		chars += len(t.Prompt)
	}
	return int(math.Ceil(float64(chars) / 4))
}
