// Package sim is spate's built-in LLM serving simulator: an OpenAI-compatible
// HTTP server (chat completions, completions, the Responses API, embeddings,
// rerank and score, models, health and Prometheus metrics with vLLM's metric
// names) that needs no GPU.
//
// It runs in one of two modes:
//
//   - Deterministic mode (Deterministic): the first content token leaves
//     exactly TTFT after the request arrived and then one token every ITL,
//     scheduled at absolute times by one central clock, so that spate's own
//     tests have a ground truth to measure against.
//   - Engine mode (Preset, or Config.Engine): a continuous-batching model of a
//     vLLM-like engine (token budget per step, KV cache in blocks, chunked
//     prefill, preemption by recompute, prefix caching, LoRA adapters, an MoE
//     profile and a RAG profile) stepped on one clock. The engine core is a
//     pure step function of virtual time; a thin driver runs it in real time.
//
// Faults (errors, 429s, latency spikes, truncated and stalled streams,
// context-length errors) are injected at seeded, reproducible rates, set in
// Config.Faults, by Server.SetFaults or through GET/PUT /admin/faults.
//
// Every generated token is one word from a fixed list of English words each
// of which is exactly one cl100k_base token with its leading space, so a
// client that counts output tokens with cl100k gets usage.completion_tokens.
//
// Not a stage: a target (the service under load) for tests, demos and
// benchmarks.
// The data flow: experiment → workload → schedule → engine → client → record
// → metrics → verdict → outputs (docs/design.md).
package sim
