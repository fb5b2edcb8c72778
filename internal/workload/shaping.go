package workload

import (
	"fmt"
	"strings"
)

// shaping is what a workload or an intent adds to its requests beyond the
// prompt: a mutate step, constraints, sampling parameters and a model.
type shaping struct {
	mutate            *Mutation
	constraints       *Constraints
	temperature, topP *Sampling
	model             string
	logprobs          int
}

// parseShaping reads the shaping fields of a workload or an intent; where
// starts its errors ("" or "intents[0] (faq): ").
func parseShaping(where, mutate, constraints, temperature, topP string, logprobs int) (shaping, error) {
	var s shaping
	if logprobs < 0 || logprobs > 20 {
		return s, fmt.Errorf("%slogprobs %d: ask for 1 to 20 top logprobs a token (0: none)", where, logprobs)
	}
	s.logprobs = logprobs
	if mutate != "" {
		m, err := ParseMutation(mutate)
		if err != nil {
			return s, fmt.Errorf("%s%w", where, err)
		}
		s.mutate = &m
	}
	if constraints != "" {
		c, err := ParseConstraints(constraints)
		if err != nil {
			return s, fmt.Errorf("%s%w", where, err)
		}
		s.constraints = &c
	}
	for _, f := range []struct {
		name, v string
		max     float64
		dst     **Sampling
	}{{"temperature", temperature, 2, &s.temperature}, {"topP", topP, 1, &s.topP}} {
		if f.v == "" {
			continue
		}
		v, err := ParseSampling(f.name, f.v, f.max)
		if err != nil {
			return s, fmt.Errorf("%s%w", where, err)
		}
		*f.dst = &v
	}
	return s, nil
}

// key identifies the shaping in a workload's digest ("" for none).
func (s shaping) key() string {
	var b strings.Builder
	if s.mutate != nil {
		b.WriteString(" mutate=" + s.mutate.String())
	}
	if s.constraints != nil {
		b.WriteString(" constraints=" + s.constraints.String())
	}
	if s.temperature != nil {
		b.WriteString(" temperature=" + s.temperature.String())
	}
	if s.topP != nil {
		b.WriteString(" top_p=" + s.topP.String())
	}
	if s.model != "" {
		b.WriteString(" model=" + s.model)
	}
	if s.logprobs > 0 {
		fmt.Fprintf(&b, " logprobs=%d", s.logprobs)
	}
	return b.String()
}

// sample gives request n (a copy the caller owns) the sampling parameters,
// model and constraints s has and it has not (an intent's win over the
// workload's). A range is drawn per request, seeded.
func (s shaping) sample(r *Request, seed, n uint64) {
	rnd := newRand(seed^0x7E3D, n)
	if s.temperature != nil && r.Temperature == nil {
		v := s.temperature.Draw(rnd)
		r.Temperature = &v
	}
	if s.topP != nil && r.TopP == nil {
		v := s.topP.Draw(rnd)
		r.TopP = &v
	}
	if s.model != "" && r.Model == "" {
		r.Model = s.model
		r.Labels = append(append([]Label(nil), r.Labels...), Label{Key: "model", Value: s.model})
	}
	if s.logprobs > 0 && r.Logprobs == 0 {
		r.Logprobs = s.logprobs
	}
	if s.constraints != nil && r.constraints == nil {
		r.constraints = s.constraints
	}
}

// withMutation rewrites the prompts of src's requests with m, seeded by
// request: the prompt, the last user message's text or the first turn's
// prompt. The request keeps the original (Original) and a label mutation
// naming the kinds applied ("none" when the draws changed nothing). A
// prompt whose token count the source knew is counted again with tok (or
// left unknown).
func withMutation(src Source, m Mutation, seed uint64, tok Counter) Source {
	return SourceFunc{
		Sha256: digest([]byte(src.Digest()), []byte("mutate/v1 "+m.String()+fmt.Sprint(" ", seed))),
		F: func(n uint64) (*Request, error) {
			r, err := src.Request(n)
			if err != nil {
				return nil, err
			}
			c := *r
			rnd := newRand(seed^0x3D7A11, n)
			var kinds []string
			setUserText(&c, func(s string) string {
				out, k := m.Apply(s, rnd)
				if len(k) > 0 {
					c.Original, kinds = s, k
				}
				return out
			})
			label := "none"
			if len(kinds) > 0 {
				label = strings.Join(kinds, "+")
				if c.InputTokens > 0 {
					c.InputTokens = 0
					if tok != nil && len(c.Messages) == 0 && len(c.Turns) == 0 {
						c.InputTokens = tok.Count(c.Prompt)
					}
				}
			}
			c.Labels = append(append([]Label(nil), c.Labels...), Label{Key: "mutation", Value: label})
			return &c, nil
		},
	}
}
