package workload

import (
	"context"
	"errors"
	"fmt"
	"github.com/spate-dev/spate/experiment"
	"math"
	"math/rand/v2"
	"sort"
	"strings"
	"time"

	"github.com/spate-dev/spate/internal/metrics/check"
	"github.com/spate-dev/spate/internal/workload/payload"
)

// DefaultWeights are the seeds' normalised-token weights: a text token 1, a
// ViT-L/14 image patch 64 (a 224×224 input is 256 patches of 14×14), a
// mel frame 8.
var DefaultWeights = experiment.Weights{Text: 1, ImagePatch: 64, AudioFrame: 8, PatchPixels: 14, ImagePixels: 224, ImageMode: "resize"}

// BuildOptions are what Build needs beyond the spec.
type BuildOptions struct {
	Seed      uint64  // used when the spec has none
	Tokenizer Counter // counts dataset prompts (nil: unknown lengths)
	// Turns reads ShareGPT datasets as multi-turn conversations.
	Turns bool
	// Limits bound the files read and the prompts made (zero: defaults).
	Limits Limits
	// Context stops reading files when it is done (nil: never).
	Context context.Context
	// Burst, when set, reports the requests of stampede bursts (see
	// schedule.Stampede), which ask for one key a burst of kind BurstKeys
	// (FreshKeys or ExpiringKeys).
	Burst     func(n uint64) (int, bool)
	BurstKeys string
	// Vocab makes synthetic text (prompts, shared prefixes, system
	// prompts, later turns, documents) in a tokenizer's own counts
	// (--tokenizer server, see Calibrate); nil: OneTokenWords.
	Vocab *Vocab
}

// perRequest is the counter of what requests change as they are made
// during the run (a mutated prompt, a prompt cut to a context): o's
// tokenizer, unless its counts are requests to the server (Remote), which
// the run must not send one a request; then nil (not counted, or
// estimated).
func (o BuildOptions) perRequest() Counter {
	if _, remote := o.Tokenizer.(interface{ Remote() bool }); remote {
		return nil
	}
	return o.Tokenizer
}

// load is LoadOptions of a dataset under o's limits and context.
func (o BuildOptions) load(l LoadOptions) LoadOptions {
	l.Limits, l.Context = o.Limits, o.Context
	return l
}

// Built is a workload ready to run: its source, and for a timed trace the
// send times of its requests.
type Built struct {
	Source Source
	// Offsets, for a timed trace, are the requests' send times (scaled by
	// Speed); nil otherwise.
	Offsets []time.Duration
}

// Build turns a spec into a Source (deterministic in its seed).
func Build(s experiment.Workload, o BuildOptions) (Built, error) {
	seed := o.Seed
	if s.Seed != nil {
		seed = *s.Seed
	}
	promptLimit := o.Limits.WithDefaults().PromptTokens
	in, err := lengthsOr(o.Context, s.InputTokens, "256")
	if err == nil {
		in, err = in.Capped(promptLimit, "inputTokens")
	}
	if err != nil {
		return Built{}, fmt.Errorf("inputTokens %w", err)
	}
	out, err := lengthsOr(o.Context, s.OutputTokens, "128")
	if err != nil {
		return Built{}, fmt.Errorf("outputTokens %w", err)
	}
	checks, err := check.Compile(s.Checks)
	if err != nil {
		return Built{}, fmt.Errorf("checks: %w", err)
	}
	sh, err := parseShaping("", s.Mutate, s.Constraints, s.Temperature, s.TopP, s.Logprobs)
	if err != nil {
		return Built{}, err
	}
	var b Built
	var src Source
	if s.TraceBlockSize < 0 || s.TraceBlockSize > 0 && s.Dataset == "" {
		return Built{}, errors.New("traceBlockSize (--trace-block-size) is the block size of a Mooncake trace --dataset: give one, or leave it out")
	}
	switch {
	case len(s.Intents) > 0:
		if s.Dataset != "" {
			return Built{}, errors.New("dataset and intents are exclusive: give each intent its own dataset")
		}
		m, err := newMix(s, in, out, seed, o, sh)
		if err != nil {
			return Built{}, err
		}
		src = m
	case s.Dataset != "":
		d, err := LoadFormat(s.Dataset, o.load(LoadOptions{Format: s.DatasetFormat, Tokenizer: o.Tokenizer, Turns: o.Turns, Column: s.DatasetColumn, BlockSize: s.TraceBlockSize, Seed: seed}))
		if err != nil {
			return Built{}, err
		}
		if s.TraceBlockSize > 0 && d.format != FormatMooncake {
			return Built{}, fmt.Errorf("traceBlockSize (--trace-block-size) is the block size of a Mooncake trace; dataset %s is %s", s.Dataset, orJSONL(d.format))
		}
		offs, timed, err := d.Offsets()
		if err != nil {
			return Built{}, fmt.Errorf("dataset %s: %w", s.Dataset, err)
		}
		if timed {
			speed := s.Speed
			if speed <= 0 {
				speed = 1
			}
			for i := range offs {
				offs[i] = time.Duration(float64(offs[i]) / speed)
			}
			b.Offsets = offs
		}
		src = WithOutput(d, out, seed)
	default:
		src = Synthetic{Input: in, Output: out, Seed: seed, Prefix: s.SharedPrefix, Vocab: o.Vocab}
	}
	if sh.mutate != nil && len(s.Intents) == 0 {
		src = withMutation(src, *sh.mutate, seed, o.perRequest())
	}
	if s.SharedPrefix != nil {
		if err := checkSharedPrefix(s.SharedPrefix); err != nil {
			return Built{}, err
		}
		if s.SharedPrefix.Tokens > promptLimit {
			return Built{}, fmt.Errorf("sharedPrefix.tokens %d is over the promptTokens limit of %d: raise it with --limit promptTokens=N (limits.promptTokens)", s.SharedPrefix.Tokens, promptLimit)
		}
		if _, ok := src.(Synthetic); !ok && len(s.Intents) == 0 {
			return Built{}, errors.New("sharedPrefix applies to synthetic prompts, not to a dataset")
		}
	}
	pre := src
	if s.Popularity != nil {
		if src, err = withPopularity(src, *s.Popularity, seed); err != nil {
			return Built{}, err
		}
	}
	if o.Burst != nil {
		if o.BurstKeys != FreshKeys && o.BurstKeys != ExpiringKeys {
			return Built{}, fmt.Errorf("stampede keys %q: use fresh or expiring", o.BurstKeys)
		}
		src = withStampede(src, pre, o.BurstKeys, o.Burst, seed)
	}
	if s.Turns != nil {
		if src, err = withTurns(o.Context, src, *s.Turns, out, seed, promptLimit, o.Vocab); err != nil {
			return Built{}, err
		}
	}
	if s.Documents != nil {
		if src, err = withDocuments(o.Context, src, *s.Documents, seed, o.Vocab); err != nil {
			return Built{}, err
		}
	}
	var system string
	var systemTmpl *payload.Template
	var systemTokens int
	if sp := s.SystemPrompt; sp != nil {
		system = sp.Text
		if sp.Tokens > promptLimit {
			return Built{}, fmt.Errorf("systemPrompt.tokens %d is over the promptTokens limit of %d: raise it with --limit promptTokens=N (limits.promptTokens)", sp.Tokens, promptLimit)
		}
		switch {
		case system == "" && sp.Tokens > 0:
			system, systemTokens = o.Vocab.Text(newRand(seed^0x5157, 0), sp.Tokens)
		case o.Tokenizer != nil:
			if cc, ok := o.Tokenizer.(interface {
				CountContext(context.Context, string) (int, error)
			}); ok && o.Context != nil {
				// A server's tokenizer can fail: say so, not 0 tokens.
				if systemTokens, err = cc.CountContext(o.Context, system); err != nil {
					return Built{}, fmt.Errorf("systemPrompt.text: counting its tokens: %w", err)
				}
				break
			}
			systemTokens = o.Tokenizer.Count(system)
		default:
			systemTokens = estimateTokens(&Request{Prompt: system})
		}
		if payload.Has(system) {
			if systemTmpl, err = payload.Parse("systemPrompt.text", system); err != nil {
				return Built{}, err
			}
		}
	}
	w := DefaultWeights
	if s.Weights != nil {
		w = withDefaults(*s.Weights)
		if err := checkWeights(w); err != nil {
			return Built{}, err
		}
	}
	var imgs []imageData
	if s.Images != nil {
		if imgs, err = loadImages(o.Context, *s.Images, seed, o.Limits); err != nil {
			return Built{}, err
		}
	}
	fin := finishing{system: system, systemTmpl: systemTmpl, systemTokens: systemTokens, checks: checks, images: imgs, weights: w, seed: seed,
		shaping: sh, tok: o.perRequest()}
	if s.Images != nil {
		if fin.imageCount, err = newCount(s.Images.Count, s.Images.Counts); err != nil {
			return Built{}, fmt.Errorf("images.counts: %w", err)
		}
		if s.Images.Count == 0 && s.Images.Counts == "" {
			fin.imageCount.fixed = 1
		}
	}
	if s.Audio != nil {
		if fin.audio, err = newAudioSet(o.Context, *s.Audio, seed); err != nil {
			return Built{}, err
		}
		if fin.audioCount, err = newCount(s.Audio.Count, s.Audio.Counts); err != nil {
			return Built{}, fmt.Errorf("audio.counts: %w", err)
		}
		if s.Audio.Count == 0 && s.Audio.Counts == "" {
			fin.audioCount.fixed = 1
		}
	}
	b.Source = finish(src, fin)
	return b, nil
}

func orJSONL(format string) string {
	if format == "" {
		return FormatJSONL
	}
	return format
}

func lengthsOr(ctx context.Context, s, def string) (Lengths, error) {
	if s == "" {
		s = def
	}
	return ParseLengthsContext(ctx, s)
}

func checkSharedPrefix(p *experiment.SharedPrefix) error {
	if p.Groups < 1 || p.Tokens < 1 || p.Ratio < 0 || p.Ratio > 1 {
		return fmt.Errorf("sharedPrefix: want groups >= 1, tokens >= 1 and ratio in [0, 1], got %d, %d, %g", p.Groups, p.Tokens, p.Ratio)
	}
	return nil
}

func withDefaults(w experiment.Weights) experiment.Weights {
	d := DefaultWeights
	if w.Text > 0 {
		d.Text = w.Text
	}
	if w.ImagePatch > 0 {
		d.ImagePatch = w.ImagePatch
	}
	if w.AudioFrame > 0 {
		d.AudioFrame = w.AudioFrame
	}
	if w.PatchPixels > 0 {
		d.PatchPixels = w.PatchPixels
	}
	if w.ImagePixels > 0 {
		d.ImagePixels = w.ImagePixels
	}
	if w.ImageMode != "" {
		d.ImageMode = w.ImageMode
	}
	return d
}

// mix is a weighted mixture of intents.
type mix struct {
	names  []string
	cum    []float64 // cumulative weights, ending at 1
	srcs   []Source
	checks []*check.Set
	shapes []shaping // each intent's own sampling, model and constraints
	seed   uint64
	sha    string
}

func newMix(s experiment.Workload, in, out Lengths, seed uint64, o BuildOptions, all shaping) (*mix, error) {
	m := &mix{seed: seed}
	var sum float64
	seen := map[string]bool{}
	var keys []string
	for i, it := range s.Intents {
		where := fmt.Sprintf("intents[%d] (%s)", i, it.Name)
		if it.Name == "" {
			return nil, fmt.Errorf("intents[%d]: needs a name", i)
		}
		if seen[it.Name] {
			return nil, fmt.Errorf("%s: the name is used twice", where)
		}
		seen[it.Name] = true
		if it.Weight <= 0 || math.IsNaN(it.Weight) || math.IsInf(it.Weight, 0) {
			return nil, fmt.Errorf("%s: weight must be > 0", where)
		}
		iin, iout := in, out
		var err error
		if it.InputTokens != "" {
			if iin, err = ParseLengthsContext(o.Context, it.InputTokens); err == nil {
				iin, err = iin.Capped(o.Limits.WithDefaults().PromptTokens, "inputTokens")
			}
			if err != nil {
				return nil, fmt.Errorf("%s: inputTokens %w", where, err)
			}
		}
		if it.OutputTokens != "" {
			if iout, err = ParseLengthsContext(o.Context, it.OutputTokens); err != nil {
				return nil, fmt.Errorf("%s: outputTokens %w", where, err)
			}
		}
		cs, err := check.Compile(it.Checks)
		if err != nil {
			return nil, fmt.Errorf("%s: checks: %w", where, err)
		}
		sh, err := parseShaping(where+": ", it.Mutate, it.Constraints, it.Temperature, it.TopP, it.Logprobs)
		if err != nil {
			return nil, err
		}
		sh.model = it.Model
		isub := seed ^ uint64(i+1)*0x9E3779B97F4A7C15
		var src Source
		switch {
		case it.Dataset != "":
			d, err := LoadFormat(it.Dataset, o.load(LoadOptions{Tokenizer: o.Tokenizer}))
			if err != nil {
				return nil, fmt.Errorf("%s: %w", where, err)
			}
			src = WithOutput(d, iout, isub)
		case len(it.Prompts) > 0:
			ctx := Lengths{}
			if it.InputTokens != "" {
				ctx = iin
			}
			tmpls, err := promptTemplates(it.Prompts, where)
			if err != nil {
				return nil, err
			}
			src = prompts{list: it.Prompts, tmpls: tmpls, context: ctx, out: iout, seed: isub, prefix: s.SharedPrefix}
		default:
			src = Synthetic{Input: iin, Output: iout, Seed: isub, Prefix: s.SharedPrefix}
		}
		if mut := sh.mutate; mut != nil || all.mutate != nil {
			if mut == nil {
				mut = all.mutate
			}
			src = withMutation(src, *mut, isub, o.perRequest())
		}
		sum += it.Weight
		m.shapes = append(m.shapes, sh)
		m.names = append(m.names, it.Name)
		m.cum = append(m.cum, sum)
		m.srcs = append(m.srcs, src)
		m.checks = append(m.checks, cs)
		keys = append(keys, fmt.Sprintf("%s@%g=%s%s", it.Name, it.Weight, src.Digest(), sh.key()))
	}
	for i := range m.cum {
		m.cum[i] /= sum
	}
	sort.Strings(keys)
	m.sha = digest([]byte("mix/v1"), []byte(strings.Join(keys, "\n")), []byte(fmt.Sprint(seed)))
	return m, nil
}

// Request implements Source: the intent is drawn by weight, then the
// intent's source gives its request n.
func (m *mix) Request(n uint64) (*Request, error) {
	u := newRand(m.seed^0x1D7E, n).Float64()
	i := min(sort.SearchFloat64s(m.cum, u), len(m.cum)-1)
	r, err := m.srcs[i].Request(n)
	if err != nil {
		return nil, err
	}
	c := *r
	c.Intent = m.names[i]
	if m.checks[i] != nil {
		c.Checks, c.KeepAnswer = m.checks[i], true
	}
	m.shapes[i].sample(&c, m.seed, n)
	return &c, nil
}

// Digest implements Source.
func (m *mix) Digest() string { return m.sha }

// promptTemplates parses the prompts that hold template actions (nil for
// the others); where names the intent in errors.
func promptTemplates(list []string, where string) ([]*payload.Template, error) {
	var out []*payload.Template
	for i, q := range list {
		if !payload.Has(q) {
			continue
		}
		if out == nil {
			out = make([]*payload.Template, len(list))
		}
		t, err := payload.Parse(fmt.Sprintf("%s prompts[%d]", where, i), q)
		if err != nil {
			return nil, err
		}
		out[i] = t
	}
	return out, nil
}

// prompts draws one of a list of prompts per request, with optional
// synthetic context before it. A prompt holding template actions is filled
// per request, as a dataset's prompt is (see package payload), from a
// random source fixed by the intent's seed and the request's index.
type prompts struct {
	list    []string
	tmpls   []*payload.Template // parsed templates of list, nil entries for plain prompts
	context Lengths
	out     Lengths
	seed    uint64
	prefix  *experiment.SharedPrefix
}

// Request implements Source.
func (p prompts) Request(n uint64) (*Request, error) {
	r := newRand(p.seed, n)
	i := r.IntN(len(p.list))
	q := p.list[i]
	if p.tmpls != nil && p.tmpls[i] != nil {
		var err error
		if q, err = p.tmpls[i].Execute(payload.NewData(n, nil, p.seed)); err != nil {
			return nil, err
		}
	}
	req := &Request{Prompt: q}
	if p.context.IsSet() {
		ctx := synthText(r, p.context.Sample(r), p.prefix, p.seed, nil)
		req.Prompt = ctx.text + "\n\n" + q
		if p.prefix != nil {
			req.Labels = []Label{{Key: "prefix", Value: ctx.group}}
		}
	}
	if p.out.IsSet() {
		req.MaxTokens = p.out.Sample(r)
	}
	return req, nil
}

// Digest implements Source.
func (p prompts) Digest() string {
	return digest([]byte("prompts/v1"), []byte(strings.Join(p.list, "\x00")), []byte(fmt.Sprintf("%s %s %d %+v", p.context.key(), p.out.key(), p.seed, p.prefix)))
}

// withPopularity makes request n reuse request k of a pool of p.Pool,
// k drawn from a Zipf law (rank 1 most popular), or a hot key inside a
// burst.
func withPopularity(src Source, p experiment.Popularity, seed uint64) (Source, error) {
	if p.Zipf <= 1 || p.Pool < 1 {
		return nil, fmt.Errorf("popularity: want zipf > 1 and pool >= 1, got %g and %d", p.Zipf, p.Pool)
	}
	if h := p.Hot; h != nil && (h.Every < 1 || h.Length < 1 || h.Length > h.Every || h.Keys < 1) {
		return nil, fmt.Errorf("popularity.hot: want every >= length >= 1 and keys >= 1")
	}
	return SourceFunc{
		Sha256: digest([]byte(src.Digest()), []byte(fmt.Sprintf("popularity/v1 %+v %+v %d", p, p.Hot, seed))),
		F: func(n uint64) (*Request, error) {
			k := PopularKey(p, seed, n)
			r, err := src.Request(k)
			if err != nil {
				return nil, err
			}
			c := *r
			c.Labels = append(append([]Label(nil), r.Labels...), Label{Key: "popularity", Value: popularityClass(p, n, k)})
			return &c, nil
		},
	}, nil
}

// PopularKey is the pool index request n reuses: a hot key (the pool's
// first Keys entries) inside a burst, else a Zipf draw over the pool.
func PopularKey(p experiment.Popularity, seed, n uint64) uint64 {
	r := newRand(seed^0x2199, n)
	if h := p.Hot; h != nil && n%uint64(h.Every) < uint64(h.Length) {
		return uint64(r.IntN(h.Keys))
	}
	z := rand.NewZipf(r, p.Zipf, 1, uint64(p.Pool-1))
	return z.Uint64()
}

func popularityClass(p experiment.Popularity, n, k uint64) string {
	if h := p.Hot; h != nil && n%uint64(h.Every) < uint64(h.Length) {
		return "hot"
	}
	if k < 10 {
		return "top10"
	}
	return "tail"
}

// withTurns makes every request a conversation: the source's request is
// the first turn; later turns are synthetic user messages.
func withTurns(ctx context.Context, src Source, t experiment.Turns, out Lengths, seed uint64, promptLimit int, v *Vocab) (Source, error) {
	count, err := ParseLengthsContext(ctx, t.Count)
	if err != nil {
		return nil, fmt.Errorf("turns.count %w", err)
	}
	turnIn, err := lengthsOr(ctx, t.TurnTokens, "64")
	if err == nil {
		turnIn, err = turnIn.Capped(promptLimit, "turns.turnTokens")
	}
	if err != nil {
		return nil, fmt.Errorf("turns.turnTokens %w", err)
	}
	if t.Think < 0 {
		return nil, errors.New("turns.think must not be negative")
	}
	return SourceFunc{
		Sha256: digest([]byte(src.Digest()), []byte(fmt.Sprintf("turns/v1 %s %s %v %d", count.key(), turnIn.key(), t.Think, seed)+v.key())),
		F: func(n uint64) (*Request, error) {
			first, err := src.Request(n)
			if err != nil {
				return nil, err
			}
			if len(first.Turns) > 0 {
				return first, nil // already a conversation (ShareGPT turns)
			}
			r := newRand(seed^0x7A25, n)
			c := *first
			c.Session = fmt.Sprintf("spate-%d-%d", seed, n)
			c.Turns = []Turn{{Prompt: first.Prompt, MaxTokens: first.MaxTokens, InputTokens: first.InputTokens}}
			c.Prompt, c.MaxTokens = "", 0
			for i := 1; i < count.Sample(r); i++ {
				k := turnIn.Sample(r)
				prompt, k := v.Text(r, k)
				turn := Turn{Prompt: prompt, InputTokens: k, Think: t.Think}
				if out.IsSet() {
					turn.MaxTokens = out.Sample(r)
				}
				c.Turns = append(c.Turns, turn)
			}
			return &c, nil
		},
	}, nil
}
