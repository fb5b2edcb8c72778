package experiment

import (
	"path/filepath"
	"strings"
	"time"
)

// Workload describes a semantic workload, as written in an experiment
// file's workload section, a stage's workload or a workload file (field
// names in camelCase): what to send. Every field is optional.
type Workload struct {
	// InputTokens and OutputTokens are length distributions (ParseLengths).
	InputTokens  string `yaml:"inputTokens,omitempty" json:"inputTokens,omitempty"`
	OutputTokens string `yaml:"outputTokens,omitempty" json:"outputTokens,omitempty"`
	// Dataset is a file of requests in one of Formats (DatasetFormat, or
	// guessed); Speed scales a timed trace's clock (2: twice as fast).
	Dataset       string  `yaml:"dataset,omitempty" json:"dataset,omitempty"`
	DatasetFormat string  `yaml:"datasetFormat,omitempty" json:"datasetFormat,omitempty"`
	DatasetColumn string  `yaml:"datasetColumn,omitempty" json:"datasetColumn,omitempty"`
	Speed         float64 `yaml:"speed,omitempty" json:"speed,omitempty"`
	// TraceBlockSize is the tokens per hash id of a Mooncake trace dataset
	// (default 512, Mooncake's).
	TraceBlockSize int `yaml:"traceBlockSize,omitempty" json:"traceBlockSize,omitempty"`
	// Seed is the run's seed: of the synthetic workload, the arrival
	// schedule and every other seeded choice (default 1; --seed).
	Seed *uint64 `yaml:"seed,omitempty" json:"seed,omitempty"`
	// ReuseAcrossStages makes every stage ask the same requests from the
	// start (the run's first stage's, in the same order), as a cache
	// experiment may want; by default each stage goes on where the stages
	// before it stopped, so it asks new prompts and reads a dataset on.
	// Top level only.
	ReuseAcrossStages bool `yaml:"reuseAcrossStages,omitempty" json:"reuseAcrossStages,omitempty"`
	// SystemPrompt is sent as the system message of every chat request.
	SystemPrompt *Text `yaml:"systemPrompt,omitempty" json:"systemPrompt,omitempty"`
	// SharedPrefix makes a share of prompts start with one of a few
	// common prefixes, to exercise prefix caches.
	SharedPrefix *SharedPrefix `yaml:"sharedPrefix,omitempty" json:"sharedPrefix,omitempty"`
	// Intents is a weighted mixture of request kinds.
	Intents []Intent `yaml:"intents,omitempty" json:"intents,omitempty"`
	// Popularity reuses prompts with Zipf-distributed popularity and hot
	// keys, to exercise response caches.
	Popularity *Popularity `yaml:"popularity,omitempty" json:"popularity,omitempty"`
	// Turns makes every request a conversation of several turns.
	Turns *Turns `yaml:"turns,omitempty" json:"turns,omitempty"`
	// Images attaches images to chat requests.
	Images *Images `yaml:"images,omitempty" json:"images,omitempty"`
	// Audio attaches audio clips to chat requests.
	Audio *Audio `yaml:"audio,omitempty" json:"audio,omitempty"`
	// Documents are the documents each rerank or score request ranks
	// against its query (the prompt).
	Documents *Documents `yaml:"documents,omitempty" json:"documents,omitempty"`
	// Weights are the normalised-token weights of text, image patches and
	// audio frames (default 1, 64, 8).
	Weights *Weights `yaml:"weights,omitempty" json:"weights,omitempty"`
	// Checks apply to every request's answer (intents add their own).
	Checks []Check `yaml:"checks,omitempty" json:"checks,omitempty"`

	// Mutate rewrites sampled prompts, seeded, keeping their meaning:
	// KIND[,KIND...][@STRENGTH] with kinds synonym, order, whitespace,
	// typo, format or all (e.g. "synonym,typo@0.2"); intents may give
	// their own.
	Mutate string `yaml:"mutate,omitempty" json:"mutate,omitempty"`
	// Constraints injects semantic constraints into every request:
	// "max_context=32k" (prompt + max_tokens at most 32768 tokens, the
	// prompt's start cut) and "tool_calls>=2" (tools, an instruction to
	// call them, and a check); intents may give their own.
	Constraints string `yaml:"constraints,omitempty" json:"constraints,omitempty"`
	// Temperature and TopP are sent with every request: a number, or
	// uniform:LO:HI drawn per request; intents may give their own.
	Temperature string `yaml:"temperature,omitempty" json:"temperature,omitempty"`
	TopP        string `yaml:"topP,omitempty" json:"topP,omitempty"`
	// Logprobs asks every request for that many top logprobs a token
	// (1–20), for ICE; intents may give their own.
	Logprobs int `yaml:"logprobs,omitempty" json:"logprobs,omitempty"`
}

// Text is a fixed text, or synthetic text of Tokens tokens.
type Text struct {
	Text   string `yaml:"text,omitempty" json:"text,omitempty"`
	Tokens int    `yaml:"tokens,omitempty" json:"tokens,omitempty"`
}

// SharedPrefix: a Ratio share of requests start with one of Groups
// prefixes of Tokens tokens each (group drawn uniformly).
type SharedPrefix struct {
	Groups int     `yaml:"groups" json:"groups"`
	Tokens int     `yaml:"tokens" json:"tokens"`
	Ratio  float64 `yaml:"ratio" json:"ratio"`
}

// Intent is one kind of request in a mixture.
type Intent struct {
	Name   string  `yaml:"name" json:"name"`
	Weight float64 `yaml:"weight" json:"weight"`
	// InputTokens and OutputTokens override the workload's.
	InputTokens  string `yaml:"inputTokens,omitempty" json:"inputTokens,omitempty"`
	OutputTokens string `yaml:"outputTokens,omitempty" json:"outputTokens,omitempty"`
	// Prompts are the intent's questions, one drawn per request; when
	// InputTokens is set too, synthetic context is added before it to reach
	// that length. Without prompts the prompt is synthetic text.
	Prompts []string `yaml:"prompts,omitempty" json:"prompts,omitempty"`
	// Dataset draws the intent's requests from a file instead.
	Dataset string `yaml:"dataset,omitempty" json:"dataset,omitempty"`
	// Checks test the intent's answers.
	Checks []Check `yaml:"checks,omitempty" json:"checks,omitempty"`

	// Mutate, Constraints, Temperature and TopP are the intent's own (see
	// Workload's).
	Mutate      string `yaml:"mutate,omitempty" json:"mutate,omitempty"`
	Constraints string `yaml:"constraints,omitempty" json:"constraints,omitempty"`
	Temperature string `yaml:"temperature,omitempty" json:"temperature,omitempty"`
	TopP        string `yaml:"topP,omitempty" json:"topP,omitempty"`
	// Model is the model the intent's requests ask for instead of the
	// target's (a LoRA adapter, so that an adapter mix is a workload).
	Model string `yaml:"model,omitempty" json:"model,omitempty"`
	// Logprobs is the intent's own (see Workload's).
	Logprobs int `yaml:"logprobs,omitempty" json:"logprobs,omitempty"`
}

// Popularity: request n reuses prompt k of a Pool drawn with Zipf
// exponent Zipf (> 1); Hot, when set, makes bursts where every request
// goes to one of a few hot keys.
type Popularity struct {
	Zipf float64 `yaml:"zipf" json:"zipf"`
	Pool int     `yaml:"pool" json:"pool"`
	Hot  *Hot    `yaml:"hot,omitempty" json:"hot,omitempty"`
}

// Hot is a synchronised burst on hot keys: within every Every requests,
// the first Length all ask for one of Keys prompts (a cache stampede).
type Hot struct {
	Every  int `yaml:"every" json:"every"`
	Length int `yaml:"length" json:"length"`
	Keys   int `yaml:"keys" json:"keys"`
}

// Turns shapes conversations: Count turns (a length distribution), each
// user turn TurnTokens long, with Think time before each later turn.
type Turns struct {
	Count      string        `yaml:"count" json:"count"`
	TurnTokens string        `yaml:"turnTokens,omitempty" json:"turnTokens,omitempty"`
	Think      time.Duration `yaml:"think,omitempty" json:"think,omitempty"`
}

// Images attaches Count images to each chat request (or a number drawn
// from Counts): files (data URLs), or synthetic PNGs of Width×Height, or of
// sizes drawn from Sizes.
type Images struct {
	Count int `yaml:"count,omitempty" json:"count,omitempty"`
	// Counts, when set, is the distribution of images per request, a
	// length distribution that may draw 0 (e.g. "uniform:0:3",
	// "choice:1@0.7,4@0.3"); it replaces Count.
	Counts string   `yaml:"counts,omitempty" json:"counts,omitempty"`
	Files  []string `yaml:"files,omitempty" json:"files,omitempty"`
	Width  int      `yaml:"width,omitempty" json:"width,omitempty"`
	Height int      `yaml:"height,omitempty" json:"height,omitempty"`
	// Sizes, when set, are the sizes of synthetic images, each image's
	// drawn by Weight (vLLM's random-mm buckets).
	Sizes []ImageSize `yaml:"sizes,omitempty" json:"sizes,omitempty"`
}

// ImageSize is one size of synthetic image and its weight.
type ImageSize struct {
	Width  int     `yaml:"width" json:"width"`
	Height int     `yaml:"height" json:"height"`
	Weight float64 `yaml:"weight" json:"weight"`
}

// Audio attaches Count audio clips to each chat request (or a number drawn
// from Counts), as input_audio parts: WAV files, or synthetic tones whose
// lengths in whole seconds are drawn from Seconds. Each clip counts
// seconds × FramesPerSecond audio frames in normalised tokens.
type Audio struct {
	Count  int    `yaml:"count,omitempty" json:"count,omitempty"`
	Counts string `yaml:"counts,omitempty" json:"counts,omitempty"`
	// Files are WAV files (PCM), sent as they are.
	Files []string `yaml:"files,omitempty" json:"files,omitempty"`
	// Seconds is the length distribution of synthetic clips (default 5).
	Seconds string `yaml:"seconds,omitempty" json:"seconds,omitempty"`
	// SampleRate is the synthetic clips' sample rate (default 16000).
	SampleRate int `yaml:"sampleRate,omitempty" json:"sampleRate,omitempty"`
	// FramesPerSecond is the audio frames a second counts in normalised
	// tokens (default 80: the seeds' 2,400 frames per 30 s).
	FramesPerSecond float64 `yaml:"framesPerSecond,omitempty" json:"framesPerSecond,omitempty"`
}

// Documents are a rerank or score request's documents: Count per request
// (a length distribution, default 10) of Tokens each (default 64),
// synthetic words; TopN, when above 0, asks a reranker for that many
// results.
type Documents struct {
	Count  string `yaml:"count,omitempty" json:"count,omitempty"`
	Tokens string `yaml:"tokens,omitempty" json:"tokens,omitempty"`
	TopN   int    `yaml:"topN,omitempty" json:"topN,omitempty"`
}

// Weights are normalised-token weights: a text token counts Text, an image
// patch ImagePatch, an audio frame AudioFrame. Images are counted in
// ViT-style patches of PatchPixels×PatchPixels (default 14, ViT-L/14) of an
// input of ImagePixels×ImagePixels (default 224): ImageMode resize (the
// default: every image is resized to the input, 256 patches), tile (the
// image is cut into inputs, ⌈W/224⌉·⌈H/224⌉·256 patches) or native (patches
// of the image as it is, ⌈W/14⌉·⌈H/14⌉).
type Weights struct {
	Text        float64 `yaml:"text,omitempty" json:"text,omitempty"`
	ImagePatch  float64 `yaml:"imagePatch,omitempty" json:"imagePatch,omitempty"`
	AudioFrame  float64 `yaml:"audioFrame,omitempty" json:"audioFrame,omitempty"`
	PatchPixels int     `yaml:"patchPixels,omitempty" json:"patchPixels,omitempty"`

	ImagePixels int    `yaml:"imagePixels,omitempty" json:"imagePixels,omitempty"`
	ImageMode   string `yaml:"imageMode,omitempty" json:"imageMode,omitempty"`
}

// Check is one answer check, as written in a workload's or an intent's
// checks: a request whose answer passes all its checks is a semantic task
// done (sTPS).
type Check struct {
	// Name identifies the check in the result (default: its kind).
	Name string `json:"name,omitempty" yaml:"name,omitempty"`
	// Kind is regex, contains, not_contains, equals, json_schema, json,
	// rouge_l, tool_call, min_length or max_length.
	Kind string `json:"kind" yaml:"kind"`
	// Value is the pattern, text, reference or JSON schema.
	Value string `json:"value,omitempty" yaml:"value,omitempty"`
	// Min is rouge_l's threshold (0–1), the bound of min_length and
	// max_length (characters), and tool_call's least number of calls
	// (default 1).
	Min float64 `json:"min,omitempty" yaml:"min,omitempty"`
}

// Merge returns w with the fields over sets replaced: a stage's own
// workload on top of the experiment's.
func (w Workload) Merge(over Workload) Workload {
	m := w
	str := func(dst *string, v string) {
		if v != "" {
			*dst = v
		}
	}
	str(&m.InputTokens, over.InputTokens)
	str(&m.OutputTokens, over.OutputTokens)
	str(&m.DatasetFormat, over.DatasetFormat)
	str(&m.DatasetColumn, over.DatasetColumn)
	if over.Dataset != "" {
		m.Dataset, m.Intents = over.Dataset, nil
	}
	if len(over.Intents) > 0 {
		m.Intents, m.Dataset = over.Intents, ""
	}
	if over.Speed > 0 {
		m.Speed = over.Speed
	}
	if over.TraceBlockSize > 0 {
		m.TraceBlockSize = over.TraceBlockSize
	}
	if over.Seed != nil {
		m.Seed = over.Seed
	}
	if over.SystemPrompt != nil {
		m.SystemPrompt = over.SystemPrompt
	}
	if over.SharedPrefix != nil {
		m.SharedPrefix = over.SharedPrefix
	}
	if over.Popularity != nil {
		m.Popularity = over.Popularity
	}
	if over.Turns != nil {
		m.Turns = over.Turns
	}
	if over.Images != nil {
		m.Images = over.Images
	}
	if over.Audio != nil {
		m.Audio = over.Audio
	}
	if over.Documents != nil {
		m.Documents = over.Documents
	}
	if over.Weights != nil {
		m.Weights = over.Weights
	}
	if over.Checks != nil {
		m.Checks = over.Checks
	}
	str(&m.Mutate, over.Mutate)
	str(&m.Constraints, over.Constraints)
	str(&m.Temperature, over.Temperature)
	str(&m.TopP, over.TopP)
	if over.Logprobs != 0 {
		m.Logprobs = over.Logprobs
	}
	return m
}

// Resolve makes the workload's relative file paths (datasets, images,
// empirical length files) relative to dir, the directory of the file that
// named them.
func (s *Workload) Resolve(dir string) {
	abs := func(p string) string {
		if p == "" || filepath.IsAbs(p) {
			return p
		}
		return filepath.Join(dir, p)
	}
	lengths := func(v string) string {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(v), "empirical:"); ok {
			return "empirical:" + abs(rest)
		}
		return v
	}
	s.Dataset = abs(s.Dataset)
	s.InputTokens, s.OutputTokens = lengths(s.InputTokens), lengths(s.OutputTokens)
	for i := range s.Intents {
		it := &s.Intents[i]
		it.Dataset = abs(it.Dataset)
		it.InputTokens, it.OutputTokens = lengths(it.InputTokens), lengths(it.OutputTokens)
	}
	if s.Images != nil {
		im := *s.Images
		im.Files = append([]string(nil), im.Files...)
		for i := range im.Files {
			im.Files[i] = abs(im.Files[i])
		}
		s.Images = &im
	}
	if s.Audio != nil {
		a := *s.Audio
		a.Files = append([]string(nil), a.Files...)
		for i := range a.Files {
			a.Files[i] = abs(a.Files[i])
		}
		a.Counts, a.Seconds = lengths(a.Counts), lengths(a.Seconds)
		s.Audio = &a
	}
	if s.Documents != nil {
		d := *s.Documents
		d.Count, d.Tokens = lengths(d.Count), lengths(d.Tokens)
		s.Documents = &d
	}
	if s.Images != nil && s.Images.Counts != "" {
		im := *s.Images
		im.Counts = lengths(im.Counts)
		s.Images = &im
	}
	if s.Turns != nil {
		t := *s.Turns
		t.Count, t.TurnTokens = lengths(t.Count), lengths(t.TurnTokens)
		s.Turns = &t
	}
}
