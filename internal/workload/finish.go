package workload

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"strings"

	"github.com/spate-dev/spate/experiment"
	"github.com/spate-dev/spate/internal/metrics/check"
	"github.com/spate-dev/spate/internal/workload/payload"
)

// finishing is what Build adds to every request of a workload.
type finishing struct {
	system     string
	systemTmpl *payload.Template // system as a template, filled per request, or nil
	// systemTokens is the system prompt's length in tokens: generated
	// words, or counted once with the workload's tokenizer.
	systemTokens int
	checks       *check.Set
	images       []imageData
	imageCount   count // images per request
	audio        *audioSet
	audioCount   count // clips per request
	weights      experiment.Weights
	seed         uint64
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
	key := fmt.Sprintf("finish/v1 system=%q images=%s:%s weights=%+v", f.system, f.imageCount.key(), strings.Join(imgKeys, ","), f.weights) + f.shaping.key()
	if f.audio != nil {
		key += fmt.Sprintf(" audio=%s:%s", f.audioCount.key(), f.audio.key())
	}
	imgPick := weightedPicker(f.images)
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
			rnd := newRand(f.seed^0x1A6E, n)
			nImages, nClips := 0, 0
			if len(f.images) > 0 {
				nImages = f.imageCount.draw(rnd)
			}
			if f.audio != nil {
				nClips = f.audioCount.draw(rnd)
			}
			if c.PromptTemplate != nil && (f.system != "" || nImages+nClips > 0) {
				// The prompt goes into messages here: fill it first, as
				// WithTemplates would (the same data, the same draws).
				if c.Prompt, err = c.PromptTemplate.Execute(payload.NewData(n, c.Vars, f.seed)); err != nil {
					return nil, err
				}
				c.PromptTemplate = nil
			}
			addedSystem := false
			if system := f.system; system != "" {
				if f.systemTmpl != nil {
					// Its own random source: a prompt template of the same
					// request draws from another.
					if system, err = f.systemTmpl.Execute(payload.NewData(n, r.Vars, f.seed^0x5157)); err != nil {
						return nil, err
					}
				}
				addedSystem = len(c.Messages) == 0 || c.Messages[0].Role != "system"
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
			patches, frames := 0, 0.0
			var parts []Part
			for i := 0; i < nImages; i++ {
				im := f.images[imgPick(rnd)]
				parts = append(parts, Part{Type: "image_url", ImageURL: im.url})
				patches += im.patches(f.weights)
			}
			for i := 0; i < nClips; i++ {
				clip := f.audio.clip(rnd.IntN, func() int { return f.audio.seconds.Sample(rnd) })
				parts = append(parts, Part{Type: "input_audio", AudioData: clip.data, AudioFormat: clip.format})
				frames += f.audio.frames(clip)
			}
			if len(parts) > 0 {
				c.Messages = withImages(c.Messages, c.Prompt, parts)
			}
			// Each text once: a known prompt length plus the system prompt
			// it now carries, else an estimate of the text sent.
			text := c.InputTokens
			switch {
			case text > 0 && addedSystem && len(c.Turns) == 0:
				text += f.systemTokens
				c.InputTokens = text
			case text == 0:
				text = estimateTokens(&c)
			}
			text += c.DocumentTokens
			c.NormTokens = float64(text)*f.weights.Text + float64(patches)*f.weights.ImagePatch + frames*f.weights.AudioFrame
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

// count is a number of attachments per request: fixed, or drawn from a
// length distribution that may draw 0.
type count struct {
	fixed int
	dist  *Lengths
}

// newCount is n, or the distribution spec when it is set.
func newCount(n int, spec string) (count, error) {
	if n < 0 {
		return count{}, fmt.Errorf("count %d: want >= 0", n)
	}
	if spec == "" {
		return count{fixed: n}, nil
	}
	l, err := ParseLengths(spec)
	if err != nil {
		return count{}, err
	}
	l.Min = 0
	if l.Mean > 256 {
		return count{}, fmt.Errorf("%q: at most 256 attachments a request", spec)
	}
	return count{dist: &l}, nil
}

func (c count) draw(r *rand.Rand) int {
	if c.dist == nil {
		return c.fixed
	}
	return min(c.dist.Sample(r), 256)
}

func (c count) key() string {
	if c.dist == nil {
		return fmt.Sprint(c.fixed)
	}
	return c.dist.key()
}

// weightedPicker draws an index of images by their weights, or uniformly
// when none has one.
func weightedPicker(images []imageData) func(*rand.Rand) int {
	var cum []float64
	sum := 0.0
	for _, im := range images {
		sum += im.weight
		cum = append(cum, sum)
	}
	if sum == 0 {
		return func(r *rand.Rand) int { return r.IntN(len(images)) }
	}
	return func(r *rand.Rand) int {
		return min(sort.SearchFloat64s(cum, r.Float64()*sum), len(images)-1)
	}
}

// withImages adds image and audio parts to the last user message (made from the
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
// count them: about four characters a token, of each text sent once (the
// messages, which hold the prompt once a system prompt or an image made
// them, else the prompt; and a conversation's turns).
func estimateTokens(r *Request) int {
	chars := 0
	if len(r.Messages) > 0 {
		for _, m := range r.Messages {
			chars += len(m.Text())
		}
	} else {
		chars = len(r.Prompt)
	}
	for _, t := range r.Turns {
		chars += len(t.Prompt)
	}
	return int(math.Ceil(float64(chars) / 4))
}
