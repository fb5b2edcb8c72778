package workload

import (
	"fmt"
	"strings"
)

// Stampede key kinds (the same names as package schedule's).
const (
	FreshKeys    = "fresh"
	ExpiringKeys = "expiring"
)

// freshIndex is the request index of the key of fresh burst j: far past
// any index a run's own requests reach.
func freshIndex(j int) uint64 { return 1<<48 + uint64(j) }

// withStampede makes the requests of bursts (burst(n) reports them) ask
// for one key a burst: with fresh keys, burst j asks for request
// freshIndex(j) of pre (the source before popularity), a prompt no other
// request asks for (a source whose prompts repeat, a dataset or a list of
// prompts, gets a tag that makes it new); with expiring keys every burst
// asks for pre's request 0, the most popular key when popularity is on.
// Every request is labelled stampede=burst or stampede=base.
func withStampede(src, pre Source, keys string, burst func(n uint64) (int, bool), seed uint64) Source {
	_, synthetic := pre.(Synthetic)
	return SourceFunc{
		Sha256: digest([]byte(src.Digest()), []byte(pre.Digest()), []byte(fmt.Sprintf("stampede/v1 keys=%s seed=%d", keys, seed))),
		F: func(n uint64) (*Request, error) {
			j, ok := burst(n)
			if !ok {
				r, err := src.Request(n)
				if err != nil {
					return nil, err
				}
				c := *r
				c.Labels = append(append([]Label(nil), r.Labels...), Label{Key: "stampede", Value: "base"})
				return &c, nil
			}
			key := uint64(0)
			if keys == FreshKeys {
				key = freshIndex(j)
			}
			r, err := pre.Request(key)
			if err != nil {
				return nil, err
			}
			c := *r
			if keys == FreshKeys && !synthetic {
				freshen(&c, fmt.Sprintf(" (ref %x-%d)", seed, j))
			}
			c.Labels = append(append([]Label(nil), r.Labels...), Label{Key: "stampede", Value: "burst"})
			return &c, nil
		},
	}
}

// freshen appends tag to the request's text: its prompt, its last user
// message or its first turn.
func freshen(r *Request, tag string) {
	switch {
	case r.Prompt != "" || len(r.Messages) == 0 && len(r.Turns) == 0:
		r.Prompt += tag
	case len(r.Turns) > 0:
		r.Turns = append([]Turn(nil), r.Turns...)
		r.Turns[0].Prompt += tag
	default:
		r.Messages = append([]Message(nil), r.Messages...)
		for i := len(r.Messages) - 1; i >= 0; i-- {
			if m := &r.Messages[i]; m.Role == "user" && len(m.Parts) == 0 {
				m.Content += tag
				return
			}
		}
		r.Messages = append(r.Messages, Message{Role: "user", Content: strings.TrimSpace(tag)})
	}
}
