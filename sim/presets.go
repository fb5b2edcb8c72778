package sim

import (
	"fmt"
	"strings"
	"time"
)

// presetNames lists the built-in presets, sorted.
func presetNames() []string {
	return []string{"a100-llama8b", "lora", "moe", "rag", "small-gpu"}
}

// presetConfig builds the named preset. The numbers are illustrative orders
// of magnitude for the named hardware class, not a calibration of any
// particular GPU; README.md lists them.
func presetConfig(name string) (Config, bool) {
	switch name {
	case "small-gpu":
		// An 8B-class model in FP8 on a 24 GB L4-class GPU: slow steps and a
		// small KV cache, so queueing and preemption appear at modest load.
		c := engineBase()
		e := c.Engine
		e.MaxNumSeqs = 64
		e.MaxBatchedTokens = 2048
		e.KVCacheTokens = 32768
		e.StepBase = 25 * time.Millisecond
		e.DecodePerSeq = 200 * time.Microsecond
		e.DecodePerKTokens = 400 * time.Microsecond
		e.PrefillPerToken = 150 * time.Microsecond
		c.Faults.MaxContext = 8192
		return c, true
	case "a100-llama8b":
		return a100Llama8B(), true
	case "moe":
		// A Mixtral-8x7B-class model: each token routed to 2 of 8 experts;
		// step time varies with how many experts a step activates and with
		// the load of the busiest one.
		c := engineBase()
		e := c.Engine
		e.MaxNumSeqs = 128
		e.MaxBatchedTokens = 8192
		e.KVCacheTokens = 262144
		e.StepBase = 6 * time.Millisecond
		e.DecodePerSeq = 80 * time.Microsecond
		e.DecodePerKTokens = 60 * time.Microsecond
		e.PrefillPerToken = 120 * time.Microsecond
		e.StepJitter = 0.03
		e.MoE = &MoEConfig{Experts: 8, TopK: 2, ExpertLoad: 1200 * time.Microsecond, PerTokenCompute: 20 * time.Microsecond, Skew: 0.3}
		c.Faults.MaxContext = 32768
		return c, true
	case "rag":
		// a100-llama8b behind a retrieve + rerank pipeline that adds 2,048
		// tokens of retrieved context to every prompt.
		c := a100Llama8B()
		c.Engine.RAG = &RAGConfig{RetrieveMedian: 40 * time.Millisecond, RerankMedian: 25 * time.Millisecond, Sigma: 0.4, ContextTokens: 2048}
		return c, true
	case "lora":
		// a100-llama8b serving eight named LoRA adapters with two GPU slots,
		// so a mix of adapters makes them load and evict each other.
		c := a100Llama8B()
		c.Engine.LoRA = LoRAConfig{
			Adapters:       []string{"sql", "summarise", "support", "legal", "medical", "code", "finance", "translate"},
			MaxLoRAs:       2,
			LoadTime:       30 * time.Millisecond,
			PerAdapterStep: 400 * time.Microsecond,
		}
		return c, true
	}
	return Config{}, false
}

// engineBase is the common part of every preset.
func engineBase() Config {
	c := Deterministic(0, 0, 0)
	c.Engine = &EngineConfig{
		BlockSize:      16,
		ChunkedPrefill: true,
		PrefixCaching:  true,
		LoRA:           LoRAConfig{MaxLoRAs: 4, LoadTime: 20 * time.Millisecond, PerAdapterStep: 300 * time.Microsecond},
	}
	return c
}

// a100Llama8B is Llama-3.1-8B in BF16 on one A100 80 GB: 128 KiB of KV per
// token and ~48 GiB for the cache, 2 TB/s of memory bandwidth.
func a100Llama8B() Config {
	c := engineBase()
	e := c.Engine
	e.MaxNumSeqs = 256
	e.MaxBatchedTokens = 8192
	e.KVCacheTokens = 393216
	e.StepBase = 7 * time.Millisecond
	e.DecodePerSeq = 60 * time.Microsecond
	e.DecodePerKTokens = 65 * time.Microsecond
	e.PrefillPerToken = 70 * time.Microsecond
	c.Faults.MaxContext = 32768
	return c
}

// Preset returns the engine-mode Config of the named preset (see Presets).
// The result is a fresh copy the caller may change.
func Preset(name string) (Config, error) {
	c, ok := presetConfig(name)
	if !ok {
		return Config{}, fmt.Errorf("unknown simulator preset %q (known: %s)", name, strings.Join(Presets(), ", "))
	}
	return c, nil
}

// Presets returns the names of the built-in presets, sorted.
func Presets() []string { return presetNames() }
