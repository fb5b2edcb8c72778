package sim

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/spf13/pflag"
)

// Flags are the settings of spate sim as command-line flags: AddFlags adds
// them to a flag set; Config turns the parsed flags into a Config, with
// errors that name the flag.
type Flags struct {
	// Addr is the address to listen on; Preset the preset of engine mode.
	Addr         string
	model        string
	seed         uint64
	ttft, itl    time.Duration
	outputTokens int
	embeddingDim int
	clockThreads int
	tick         time.Duration
	writePath    string
	Preset       string
	engine       bool

	maxNumSeqs       int
	maxBatchedTokens int
	kvCacheTokens    int
	blockSize        int
	chunkedPrefill   bool
	prefixCaching    bool
	stepBase         time.Duration
	decodePerSeq     time.Duration
	decodePerKTokens time.Duration
	prefillPerToken  time.Duration
	stepJitter       float64
	vulnerability    float64

	loraAdapters []string
	maxLoRAs     int
	loraLoadTime time.Duration

	moeExperts, moeTopK int
	moeExpertLoad       time.Duration
	moePerToken         time.Duration
	moeSkew             float64

	ragRetrieve, ragRerank time.Duration
	ragSigma               float64
	ragContextTokens       int

	errorRate, rateLimitRate, spikeRate, truncateRate, stallRate float64
	lengthRate                                                   float64
	entropy                                                      string
	retryAfter, spikeDelay, stallDuration                        time.Duration
	maxContext                                                   int
}

// engineFlagNames returns the flags that describe the engine model; any of
// them selects engine mode.
func engineFlagNames() []string {
	return []string{
		"max-num-seqs", "max-batched-tokens", "kv-cache-tokens", "block-size", "chunked-prefill",
		"prefix-caching", "step-base", "decode-per-seq", "decode-per-ktokens", "prefill-per-token",
		"step-jitter", "lora-adapters", "max-loras", "lora-load-time", "moe-experts", "moe-top-k",
		"moe-expert-load", "moe-per-token", "moe-skew", "rag-retrieve", "rag-rerank", "rag-sigma",
		"rag-context-tokens",
	}
}

// AddFlags adds the flags of spate sim to fs.
func (f *Flags) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&f.Addr, "addr", "127.0.0.1:8000", "address to listen on")
	fs.StringVar(&f.model, "model", DefaultModel, "model name served (requests may name any model; it is echoed)")
	fs.Uint64Var(&f.seed, "seed", 1, "seed of every random choice (words, faults, engine jitter, routing)")
	fs.DurationVar(&f.ttft, "ttft", 100*time.Millisecond, "deterministic mode: time to first token")
	fs.DurationVar(&f.itl, "itl", 20*time.Millisecond, "deterministic mode: inter-token latency")
	fs.IntVar(&f.outputTokens, "output-tokens", 0, "tokens per response (0: the request's max_tokens, else 128)")
	fs.IntVar(&f.embeddingDim, "embedding-dim", DefaultEmbeddingDim, "length of embedding vectors")
	fs.IntVar(&f.clockThreads, "clock-threads", 1, "deterministic mode: clock goroutines that time and write tokens")
	fs.DurationVar(&f.tick, "tick", DefaultTick, "deterministic mode: clock resolution; tokens due within one tick leave together, their writes batched (-1ns: no grid)")
	fs.StringVar(&f.writePath, "write-path", WritePathAuto, "deterministic mode: how streamed tokens are written: auto, uring, send (straight to the socket, batched per tick) or http (through net/http)")
	fs.StringVar(&f.Preset, "preset", "", "engine mode with a preset: "+strings.Join(Presets(), ", "))
	fs.BoolVar(&f.engine, "engine", false, "engine mode (from --preset, default a100-llama8b, and the engine flags)")

	fs.IntVar(&f.maxNumSeqs, "max-num-seqs", 0, "engine: most running sequences")
	fs.IntVar(&f.maxBatchedTokens, "max-batched-tokens", 0, "engine: token budget per step")
	fs.IntVar(&f.kvCacheTokens, "kv-cache-tokens", 0, "engine: KV cache capacity in tokens")
	fs.IntVar(&f.blockSize, "block-size", 0, "engine: tokens per KV block")
	fs.BoolVar(&f.chunkedPrefill, "chunked-prefill", true, "engine: chunked prefill")
	fs.BoolVar(&f.prefixCaching, "prefix-caching", true, "engine: prefix caching")
	fs.DurationVar(&f.stepBase, "step-base", 0, "engine: fixed cost of a step")
	fs.DurationVar(&f.decodePerSeq, "decode-per-seq", 0, "engine: cost per decoding sequence in a step")
	fs.DurationVar(&f.decodePerKTokens, "decode-per-ktokens", 0, "engine: cost per 1,000 context tokens read by decoding sequences")
	fs.DurationVar(&f.prefillPerToken, "prefill-per-token", 0, "engine: cost per prompt token computed")
	fs.Float64Var(&f.stepJitter, "step-jitter", 0, "engine: sd of the log of a per-step noise factor")
	fs.StringSliceVar(&f.loraAdapters, "lora-adapters", nil, "engine: known LoRA adapter names (empty: any BASE:ADAPTER model name)")
	fs.IntVar(&f.maxLoRAs, "max-loras", 0, "engine: adapters resident at once")
	fs.DurationVar(&f.loraLoadTime, "lora-load-time", 0, "engine: cost of loading a cold adapter")
	fs.IntVar(&f.moeExperts, "moe-experts", 0, "engine: MoE experts (0: dense model)")
	fs.IntVar(&f.moeTopK, "moe-top-k", 2, "engine: experts per token")
	fs.DurationVar(&f.moeExpertLoad, "moe-expert-load", time.Millisecond, "engine: cost per activated expert in a step")
	fs.DurationVar(&f.moePerToken, "moe-per-token", 20*time.Microsecond, "engine: cost per token on the busiest expert")
	fs.Float64Var(&f.moeSkew, "moe-skew", 0, "engine: routing skew towards hot experts (0: uniform)")
	fs.DurationVar(&f.ragRetrieve, "rag-retrieve", 0, "engine: median retrieval delay (with --rag-rerank, enables the RAG profile)")
	fs.DurationVar(&f.ragRerank, "rag-rerank", 0, "engine: median rerank delay")
	fs.Float64Var(&f.ragSigma, "rag-sigma", 0.4, "engine: sd of the log of the RAG delays")
	fs.IntVar(&f.ragContextTokens, "rag-context-tokens", 0, "engine: retrieved tokens added to each prompt")

	fs.Float64Var(&f.errorRate, "error-rate", 0, "fault: fraction of requests answered 500")
	fs.Float64Var(&f.rateLimitRate, "rate-limit-rate", 0, "fault: fraction answered 429 with rate-limit headers")
	fs.DurationVar(&f.retryAfter, "retry-after", time.Second, "fault: retry-after of a 429")
	fs.Float64Var(&f.spikeRate, "spike-rate", 0, "fault: fraction of requests delayed by --spike-delay")
	fs.DurationVar(&f.spikeDelay, "spike-delay", 500*time.Millisecond, "fault: extra delay of a latency spike")
	fs.Float64Var(&f.truncateRate, "truncate-rate", 0, "fault: fraction of streams cut mid-stream (no [DONE])")
	fs.Float64Var(&f.stallRate, "stall-rate", 0, "fault: fraction of streams that pause mid-stream")
	fs.Float64Var(&f.lengthRate, "length-rate", 0, "fault: fraction of answers cut short with finish_reason length (fewer tokens than max_tokens)")
	fs.StringVar(&f.entropy, "logprobs-entropy", "", "entropy (nats) planted in the top logprobs of requests that ask for them: 1.2, one a turn 0.5,1.0,1.5, or uniform:LO:HI (default uniform:0.3:1.5)")
	fs.Float64Var(&f.vulnerability, "vulnerability", 0, "security probes: probability of following a prompt that looks like an attack (the answer repeats the system prompt and instructions); refused otherwise")
	fs.DurationVar(&f.stallDuration, "stall-duration", time.Second, "fault: length of a stall")
	fs.IntVar(&f.maxContext, "max-context", 0, "context window: prompt + max_tokens above it gets 400 context_length_exceeded (0: the preset's, or none)")
}

// Config turns the parsed flags of fs into a Config; errors name the flag.
func (f *Flags) Config(fs *pflag.FlagSet) (Config, error) {
	changed := fs.Changed
	engineFlag := ""
	for _, n := range engineFlagNames() {
		if changed(n) {
			engineFlag = n
			break
		}
	}
	engineMode := f.Preset != "" || f.engine || engineFlag != ""
	if engineMode {
		for _, n := range []string{"ttft", "itl"} {
			if changed(n) {
				other := "--engine"
				switch {
				case f.Preset != "":
					other = "--preset"
				case engineFlag != "":
					other = "--" + engineFlag
				}
				return Config{}, fmt.Errorf("--%s is a deterministic-mode flag and cannot be combined with %s (engine mode)", n, other)
			}
		}
	}

	var cfg Config
	if engineMode {
		name := f.Preset
		if name == "" {
			name = "a100-llama8b"
		}
		c, err := Preset(name)
		if err != nil {
			return Config{}, fmt.Errorf("--preset: %v", err)
		}
		cfg = c
	} else {
		cfg = Deterministic(f.ttft, f.itl, f.outputTokens)
	}
	cfg.Model = f.model
	cfg.Seed = int64(f.seed)
	cfg.OutputTokens = f.outputTokens
	cfg.EmbeddingDim = f.embeddingDim
	cfg.ClockThreads = f.clockThreads
	cfg.Tick = f.tick
	cfg.WritePath = f.writePath

	checks := []struct {
		flag string
		bad  bool
		want string
	}{
		{"model", strings.TrimSpace(f.model) == "", "a non-empty name"},
		{"ttft", f.ttft < 0, ">= 0"},
		{"itl", f.itl < 0, ">= 0"},
		{"output-tokens", f.outputTokens < 0, ">= 0"},
		{"embedding-dim", f.embeddingDim < 1 || f.embeddingDim > 8192, "in [1, 8192]"},
		{"clock-threads", f.clockThreads < 1 || f.clockThreads > 256, "in [1, 256]"},
		{"error-rate", badRate(f.errorRate), "in [0, 1]"},
		{"rate-limit-rate", badRate(f.rateLimitRate) || f.errorRate+f.rateLimitRate > 1, "in [0, 1] with --error-rate + --rate-limit-rate <= 1"},
		{"retry-after", f.retryAfter < 0, ">= 0"},
		{"spike-rate", badRate(f.spikeRate), "in [0, 1]"},
		{"spike-delay", f.spikeDelay < 0, ">= 0"},
		{"truncate-rate", badRate(f.truncateRate), "in [0, 1]"},
		{"length-rate", badRate(f.lengthRate), "in [0, 1]"},
		{"stall-rate", badRate(f.stallRate), "in [0, 1]"},
		{"vulnerability", badRate(f.vulnerability), "in [0, 1]"},
		{"stall-duration", f.stallDuration < 0, ">= 0"},
		{"max-context", f.maxContext < 0, ">= 0"},
	}
	for _, c := range checks {
		if c.bad {
			return Config{}, fmt.Errorf("--%s must be %s, got %s", c.flag, c.want, fs.Lookup(c.flag).Value.String())
		}
	}
	cfg.Faults.ErrorRate = f.errorRate
	cfg.Faults.RateLimitRate = f.rateLimitRate
	cfg.Faults.RetryAfter = f.retryAfter
	cfg.Faults.SpikeRate = f.spikeRate
	cfg.Faults.SpikeDelay = f.spikeDelay
	cfg.Faults.TruncateRate = f.truncateRate
	cfg.Faults.LengthRate = f.lengthRate
	cfg.Faults.StallRate = f.stallRate
	cfg.Faults.StallDuration = f.stallDuration
	cfg.Faults.Vulnerability = f.vulnerability
	if changed("max-context") {
		cfg.Faults.MaxContext = f.maxContext
	}
	if f.entropy != "" {
		e, err := ParseEntropy(f.entropy)
		if err != nil {
			return Config{}, fmt.Errorf("--logprobs-entropy: %w", err)
		}
		cfg.Entropy = &e
	}

	if engineMode {
		if err := f.applyEngine(fs, cfg.Engine); err != nil {
			return Config{}, err
		}
	}
	if err := cfg.Validate(); err != nil {
		return Config{}, err
	}
	return cfg, nil
}

func badRate(v float64) bool { return math.IsNaN(v) || v < 0 || v > 1 }

// applyEngine overrides the preset's engine settings with the engine flags
// that were set.
func (f *Flags) applyEngine(fs *pflag.FlagSet, e *EngineConfig) error {
	set := func(name string) bool { return fs.Changed(name) }
	positive := func(name string, v int, to *int) error {
		if !set(name) {
			return nil
		}
		if v <= 0 {
			return fmt.Errorf("--%s must be > 0, got %d", name, v)
		}
		*to = v
		return nil
	}
	nonNeg := func(name string, v time.Duration, to *time.Duration) error {
		if !set(name) {
			return nil
		}
		if v < 0 {
			return fmt.Errorf("--%s must be >= 0, got %v", name, v)
		}
		*to = v
		return nil
	}
	for _, err := range []error{
		positive("max-num-seqs", f.maxNumSeqs, &e.MaxNumSeqs),
		positive("max-batched-tokens", f.maxBatchedTokens, &e.MaxBatchedTokens),
		positive("kv-cache-tokens", f.kvCacheTokens, &e.KVCacheTokens),
		positive("block-size", f.blockSize, &e.BlockSize),
		nonNeg("step-base", f.stepBase, &e.StepBase),
		nonNeg("decode-per-seq", f.decodePerSeq, &e.DecodePerSeq),
		nonNeg("decode-per-ktokens", f.decodePerKTokens, &e.DecodePerKTokens),
		nonNeg("prefill-per-token", f.prefillPerToken, &e.PrefillPerToken),
		positive("max-loras", f.maxLoRAs, &e.LoRA.MaxLoRAs),
		nonNeg("lora-load-time", f.loraLoadTime, &e.LoRA.LoadTime),
	} {
		if err != nil {
			return err
		}
	}
	if set("chunked-prefill") {
		e.ChunkedPrefill = f.chunkedPrefill
	}
	if set("prefix-caching") {
		e.PrefixCaching = f.prefixCaching
	}
	if set("step-jitter") {
		if f.stepJitter < 0 || f.stepJitter > 2 {
			return fmt.Errorf("--step-jitter must be in [0, 2], got %g", f.stepJitter)
		}
		e.StepJitter = f.stepJitter
	}
	if set("lora-adapters") {
		for _, a := range f.loraAdapters {
			if strings.TrimSpace(a) == "" {
				return fmt.Errorf("--lora-adapters must not contain an empty name")
			}
		}
		e.LoRA.Adapters = f.loraAdapters
	}
	if set("moe-experts") || set("moe-top-k") || set("moe-expert-load") || set("moe-per-token") || set("moe-skew") {
		m := MoEConfig{Experts: 8, TopK: 2, ExpertLoad: time.Millisecond, PerTokenCompute: 20 * time.Microsecond}
		if e.MoE != nil {
			m = *e.MoE
		}
		if set("moe-experts") {
			if f.moeExperts < 1 || f.moeExperts > 1024 {
				return fmt.Errorf("--moe-experts must be in [1, 1024], got %d", f.moeExperts)
			}
			m.Experts = f.moeExperts
		}
		if set("moe-top-k") {
			if f.moeTopK < 1 || f.moeTopK > m.Experts {
				return fmt.Errorf("--moe-top-k must be in [1, %d] (the number of experts), got %d", m.Experts, f.moeTopK)
			}
			m.TopK = f.moeTopK
		}
		if err := nonNeg("moe-expert-load", f.moeExpertLoad, &m.ExpertLoad); err != nil {
			return err
		}
		if err := nonNeg("moe-per-token", f.moePerToken, &m.PerTokenCompute); err != nil {
			return err
		}
		if set("moe-skew") {
			if f.moeSkew < 0 {
				return fmt.Errorf("--moe-skew must be >= 0, got %g", f.moeSkew)
			}
			m.Skew = f.moeSkew
		}
		e.MoE = &m
	}
	if set("rag-retrieve") || set("rag-rerank") || set("rag-sigma") || set("rag-context-tokens") {
		r := RAGConfig{Sigma: 0.4}
		if e.RAG != nil {
			r = *e.RAG
		}
		if err := nonNeg("rag-retrieve", f.ragRetrieve, &r.RetrieveMedian); err != nil {
			return err
		}
		if err := nonNeg("rag-rerank", f.ragRerank, &r.RerankMedian); err != nil {
			return err
		}
		if set("rag-sigma") {
			if f.ragSigma < 0 || f.ragSigma > 3 {
				return fmt.Errorf("--rag-sigma must be in [0, 3], got %g", f.ragSigma)
			}
			r.Sigma = f.ragSigma
		}
		if set("rag-context-tokens") {
			if f.ragContextTokens < 0 {
				return fmt.Errorf("--rag-context-tokens must be >= 0, got %d", f.ragContextTokens)
			}
			r.ContextTokens = f.ragContextTokens
		}
		e.RAG = &r
	}
	return nil
}
