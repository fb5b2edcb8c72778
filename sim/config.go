package sim

import (
	"errors"
	"fmt"
	"time"
)

// DefaultModel is the model name served when Config.Model is empty.
const DefaultModel = "spate-sim"

// DefaultOutputTokens is the response length when neither Config.OutputTokens
// nor the request's max_tokens says how many tokens to generate.
const DefaultOutputTokens = 128

// DefaultEmbeddingDim is the length of embedding vectors when neither
// Config.EmbeddingDim nor the request's dimensions field sets it.
const DefaultEmbeddingDim = 384

// Config describes one simulated model server. The zero value is a valid
// deterministic server that answers at once; use Deterministic or Preset to
// start from sensible settings.
type Config struct {
	// Model is the base model name listed by /v1/models and used for the
	// model_name label of every metric. Requests may name any model; it is
	// echoed back (see LoRAConfig for adapter names). Default DefaultModel.
	Model string

	// Seed makes every random choice reproducible: generated words, fault
	// draws, engine jitter, MoE routing and RAG delays. The same seed and the
	// same request order give the same answers.
	Seed int64

	// OutputTokens is the natural length of every response (the point where
	// the simulated model would emit end-of-sequence). 0 means: the request's
	// max_tokens (or max_completion_tokens), else DefaultOutputTokens.
	// A request's max_tokens always caps the length; with ignore_eos the
	// response is exactly max_tokens long, as in vLLM.
	OutputTokens int

	// TTFT is, in deterministic mode, the time from the request's arrival to
	// its first content token (and the latency of an embeddings request).
	TTFT time.Duration

	// ITL is, in deterministic mode, the time between successive content
	// tokens. Token k (from 0) leaves at arrival + TTFT + k*ITL.
	ITL time.Duration

	// Engine, when non-nil, selects engine mode: responses are timed by the
	// continuous-batching engine model and TTFT and ITL are ignored.
	Engine *EngineConfig

	// Faults are the faults injected from the start; Server.SetFaults and
	// PUT /admin/faults replace them at run time.
	Faults Faults

	// EmbeddingDim is the default length of embedding vectors.
	// Default DefaultEmbeddingDim.
	EmbeddingDim int

	// ClockThreads is, in deterministic mode, the number of pacers: clock
	// goroutines that time and write the tokens of their share of the
	// streams. 0 means 1. More clocks write in parallel, but each wakes
	// for its own share, so a pass carries fewer tokens for its cost.
	ClockThreads int

	// Tick is, in deterministic mode, the resolution of the clock: a token
	// due at time t (see ITL) leaves at the first multiple of Tick since the
	// server started that is not before t, and every token due in one tick
	// leaves in the same pass, the streams' writes batched. A stream's
	// first token is thus late by less than one Tick, and its inter-token
	// gaps are exact when ITL is a multiple of Tick. A coarser tick costs
	// less CPU per token (fewer wake-ups, larger batches). 0 means
	// DefaultTick; a negative value (or 1ns) means no grid: each token is
	// released as soon as it is due.
	Tick time.Duration

	// Entropy is the per-token entropy planted in the logprobs of requests
	// that ask for them (nil: DefaultEntropy; see logprobs.go).
	Entropy *Entropy

	// WritePath selects how deterministic mode writes streamed tokens:
	// WritePathAuto ("" too), WritePathURing, WritePathSend or WritePathHTTP
	// (see batch.go and ConnContext).
	WritePath string

	// portableAlarm makes the pacers use the portable alarm (tests).
	portableAlarm bool
	// holdClock forces the pacers' held sleeps on (1) or off (-1) (tests;
	// 0: when GOMAXPROCS spares two processors, see Server.New).
	holdClock int
}

// DefaultTick is the clock resolution in deterministic mode when
// Config.Tick is 0.
const DefaultTick = 100 * time.Microsecond

// EngineConfig is the continuous-batching engine model used in engine mode.
// Durations are costs on the simulated GPU; one engine step lasts
//
//	StepBase + DecodePerSeq×(decoding sequences)
//	         + DecodePerKTokens×(context tokens of decoding sequences)/1000
//	         + PrefillPerToken×(prompt tokens computed in the step)
//	         + LoRA and MoE terms, times a seeded log-normal jitter factor.
//
// Every sequence in a step gets its tokens at the end of the step.
type EngineConfig struct {
	// MaxNumSeqs is the most sequences running (holding KV cache and
	// scheduled every step) at once, like vLLM's max_num_seqs.
	MaxNumSeqs int
	// MaxBatchedTokens is the token budget of one step (decode tokens plus
	// prefill tokens), like vLLM's max_num_batched_tokens.
	MaxBatchedTokens int
	// KVCacheTokens is the KV cache capacity in tokens; it is divided into
	// blocks of BlockSize tokens.
	KVCacheTokens int
	// BlockSize is the number of tokens per KV cache block (vLLM: 16).
	BlockSize int
	// ChunkedPrefill lets a long prompt be prefilled over several steps,
	// sharing each step with decoding sequences. Without it a step is either
	// a prefill step (whole prompts only; decoding sequences wait, so ITL
	// spikes) or a decode step, as in vLLM's V0 scheduler.
	ChunkedPrefill bool
	// PrefixCaching keeps computed full prompt blocks, keyed by a hash of the
	// whole prompt up to the end of the block, and reuses them for later
	// requests with the same leading blocks.
	PrefixCaching bool

	// StepBase is the fixed cost of one step (reading the weights).
	StepBase time.Duration
	// DecodePerSeq is the cost of each decoding sequence in a step.
	DecodePerSeq time.Duration
	// DecodePerKTokens is the attention cost per 1,000 context tokens read
	// by decoding sequences in a step.
	DecodePerKTokens time.Duration
	// PrefillPerToken is the cost of each prompt token computed in a step.
	PrefillPerToken time.Duration
	// StepJitter is the standard deviation of the log of a multiplicative
	// noise factor applied to every step (0 for none).
	StepJitter float64

	// LoRA configures adapters selected by the request's model field.
	LoRA LoRAConfig
	// MoE, when non-nil, adds a mixture-of-experts term to every step.
	MoE *MoEConfig
	// RAG, when non-nil, delays each request by a retrieve and a rerank
	// stage and adds retrieved context to its prompt.
	RAG *RAGConfig
}

// LoRAConfig models LoRA adapters. A request selects adapter A with the model
// field "BASE:A" (any BASE) or, when A is in Adapters, with "A" alone.
type LoRAConfig struct {
	// Adapters lists the known adapter names. When empty any "BASE:A" name
	// selects an adapter A; when not empty other adapter names get 404.
	Adapters []string
	// MaxLoRAs is the number of adapters resident on the GPU at once (vLLM's
	// max_loras). A request whose adapter is not resident waits until a slot
	// is free of running sequences. Default 4 when adapters are used.
	MaxLoRAs int
	// LoadTime is added to the step in which a cold adapter is loaded.
	LoadTime time.Duration
	// PerAdapterStep is added to a step once per distinct adapter in it.
	PerAdapterStep time.Duration
}

// MoEConfig models a mixture-of-experts model. Each step routes each of its
// tokens to TopK of Experts experts (seeded, optionally skewed towards hot
// experts). The step pays ExpertLoad for each expert that received a token
// (its weights are read) and PerTokenCompute for each token of the busiest
// expert (which gates the step), so step time varies with routing.
type MoEConfig struct {
	// Experts is the number of experts per layer (e.g. 8).
	Experts int
	// TopK is the number of experts each token is routed to (e.g. 2).
	TopK int
	// ExpertLoad is the cost of reading one activated expert's weights.
	ExpertLoad time.Duration
	// PerTokenCompute is the cost per token routed to the busiest expert.
	PerTokenCompute time.Duration
	// Skew ≥ 0 makes routing favour low-numbered experts: expert i is chosen
	// with weight 1/(i+1)^Skew. 0 is uniform.
	Skew float64
}

// RAGConfig models a retrieval-augmented service in front of the engine:
// each request first waits for retrieval and reranking (log-normal delays
// with the given medians) and its prompt grows by ContextTokens.
type RAGConfig struct {
	// RetrieveMedian is the median retrieval delay.
	RetrieveMedian time.Duration
	// RerankMedian is the median rerank delay.
	RerankMedian time.Duration
	// Sigma is the standard deviation of the log of both delays.
	Sigma float64
	// ContextTokens is added to every prompt (the retrieved passages) and
	// reported in usage.prompt_tokens.
	ContextTokens int
}

// Deterministic returns a deterministic-mode Config: the first content token
// TTFT after a request arrives, then one every ITL, outputTokens tokens per
// response (0: the request's max_tokens, else DefaultOutputTokens).
func Deterministic(ttft, itl time.Duration, outputTokens int) Config {
	return Config{
		Model:        DefaultModel,
		TTFT:         ttft,
		ITL:          itl,
		OutputTokens: outputTokens,
		EmbeddingDim: DefaultEmbeddingDim,
	}
}

// Validate reports the first invalid setting, naming its field.
func (c *Config) Validate() error {
	if c.OutputTokens < 0 {
		return fmt.Errorf("Config.OutputTokens must be >= 0, got %d", c.OutputTokens)
	}
	if c.TTFT < 0 {
		return fmt.Errorf("Config.TTFT must be >= 0, got %v", c.TTFT)
	}
	if c.ITL < 0 {
		return fmt.Errorf("Config.ITL must be >= 0, got %v", c.ITL)
	}
	if c.ClockThreads < 0 || c.ClockThreads > 256 {
		return fmt.Errorf("Config.ClockThreads must be in [0, 256], got %d", c.ClockThreads)
	}
	if c.Tick > time.Second {
		return fmt.Errorf("Config.Tick must be at most 1s, got %v", c.Tick)
	}
	if err := validWritePath(c.WritePath); err != nil {
		return err
	}
	if c.EmbeddingDim < 0 || c.EmbeddingDim > maxEmbeddingDim {
		return fmt.Errorf("Config.EmbeddingDim must be in [0, %d], got %d", maxEmbeddingDim, c.EmbeddingDim)
	}
	if err := c.Faults.Validate(); err != nil {
		return fmt.Errorf("Config.Faults: %w", err)
	}
	if c.Engine != nil {
		if err := c.Engine.Validate(); err != nil {
			return fmt.Errorf("Config.Engine: %w", err)
		}
	}
	return nil
}

// Validate reports the first invalid engine setting, naming its field.
func (e *EngineConfig) Validate() error {
	var errs []error
	positive := func(name string, v int) {
		if v <= 0 {
			errs = append(errs, fmt.Errorf("%s must be > 0, got %d", name, v))
		}
	}
	nonNeg := func(name string, d time.Duration) {
		if d < 0 {
			errs = append(errs, fmt.Errorf("%s must be >= 0, got %v", name, d))
		}
	}
	positive("MaxNumSeqs", e.MaxNumSeqs)
	positive("MaxBatchedTokens", e.MaxBatchedTokens)
	positive("KVCacheTokens", e.KVCacheTokens)
	positive("BlockSize", e.BlockSize)
	if e.BlockSize > 0 && e.KVCacheTokens > 0 && e.KVCacheTokens < e.BlockSize {
		errs = append(errs, fmt.Errorf("KVCacheTokens (%d) must hold at least one block of BlockSize (%d) tokens", e.KVCacheTokens, e.BlockSize))
	}
	nonNeg("StepBase", e.StepBase)
	nonNeg("DecodePerSeq", e.DecodePerSeq)
	nonNeg("DecodePerKTokens", e.DecodePerKTokens)
	nonNeg("PrefillPerToken", e.PrefillPerToken)
	if e.StepBase+e.DecodePerSeq+e.PrefillPerToken <= 0 {
		errs = append(errs, errors.New("StepBase, DecodePerSeq and PrefillPerToken must not all be 0 (steps would take no time)"))
	}
	if e.StepJitter < 0 || e.StepJitter > 2 {
		errs = append(errs, fmt.Errorf("StepJitter must be in [0, 2], got %g", e.StepJitter))
	}
	if e.LoRA.MaxLoRAs < 0 {
		errs = append(errs, fmt.Errorf("LoRA.MaxLoRAs must be >= 0, got %d", e.LoRA.MaxLoRAs))
	}
	nonNeg("LoRA.LoadTime", e.LoRA.LoadTime)
	nonNeg("LoRA.PerAdapterStep", e.LoRA.PerAdapterStep)
	for _, a := range e.LoRA.Adapters {
		if a == "" {
			errs = append(errs, errors.New("LoRA.Adapters must not contain an empty name"))
			break
		}
	}
	if m := e.MoE; m != nil {
		positive("MoE.Experts", m.Experts)
		positive("MoE.TopK", m.TopK)
		if m.TopK > m.Experts {
			errs = append(errs, fmt.Errorf("MoE.TopK (%d) must be <= MoE.Experts (%d)", m.TopK, m.Experts))
		}
		if m.Experts > 1024 {
			errs = append(errs, fmt.Errorf("MoE.Experts must be <= 1024, got %d", m.Experts))
		}
		nonNeg("MoE.ExpertLoad", m.ExpertLoad)
		nonNeg("MoE.PerTokenCompute", m.PerTokenCompute)
		if m.Skew < 0 {
			errs = append(errs, fmt.Errorf("MoE.Skew must be >= 0, got %g", m.Skew))
		}
	}
	if r := e.RAG; r != nil {
		nonNeg("RAG.RetrieveMedian", r.RetrieveMedian)
		nonNeg("RAG.RerankMedian", r.RerankMedian)
		if r.Sigma < 0 || r.Sigma > 3 {
			errs = append(errs, fmt.Errorf("RAG.Sigma must be in [0, 3], got %g", r.Sigma))
		}
		if r.ContextTokens < 0 {
			errs = append(errs, fmt.Errorf("RAG.ContextTokens must be >= 0, got %d", r.ContextTokens))
		}
	}
	return errors.Join(errs...)
}

// withDefaults returns c with empty fields set to their defaults.
func (c Config) withDefaults() Config {
	if c.Model == "" {
		c.Model = DefaultModel
	}
	if c.EmbeddingDim == 0 {
		c.EmbeddingDim = DefaultEmbeddingDim
	}
	switch {
	case c.Tick == 0:
		c.Tick = DefaultTick
	case c.Tick < 0:
		c.Tick = 1 // no grid
	}
	if c.WritePath == "" {
		c.WritePath = WritePathAuto
	}
	if c.Engine != nil {
		e := *c.Engine
		e.LoRA.Adapters = append([]string(nil), e.LoRA.Adapters...)
		if e.LoRA.MaxLoRAs == 0 {
			e.LoRA.MaxLoRAs = 4
		}
		if e.MoE != nil {
			m := *e.MoE
			e.MoE = &m
		}
		if e.RAG != nil {
			r := *e.RAG
			e.RAG = &r
		}
		c.Engine = &e
	}
	return c
}
