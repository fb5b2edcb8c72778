package tokenizer

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// ParseTokens reads a tokenize endpoint's answer: llama.cpp's
// {"tokens":[ids]} or, asked with_pieces, {"tokens":[{"id":..,"piece":..}]};
// vLLM's {"count":N,"max_model_len":M,"tokens":[ids]}. It returns the ids,
// and an error naming what was wrong when the body is neither (a vLLM
// count that disagrees with its ids is one).
func ParseTokens(body []byte) ([]int, error) {
	var v struct {
		Tokens []json.RawMessage `json:"tokens"`
		Count  *int              `json:"count"`
	}
	if err := json.Unmarshal(body, &v); err != nil {
		return nil, fmt.Errorf("not a tokenize answer: %v", err)
	}
	if v.Tokens == nil {
		return nil, errors.New(`not a tokenize answer: no "tokens" list`)
	}
	ids := make([]int, len(v.Tokens))
	for i, raw := range v.Tokens {
		raw = bytes.TrimSpace(raw)
		if len(raw) > 0 && raw[0] == '{' {
			var p struct {
				ID *int `json:"id"`
			}
			if err := json.Unmarshal(raw, &p); err != nil || p.ID == nil {
				return nil, fmt.Errorf("token %d of the tokenize answer has no id", i)
			}
			ids[i] = *p.ID
			continue
		}
		if err := json.Unmarshal(raw, &ids[i]); err != nil {
			return nil, fmt.Errorf("token %d of the tokenize answer is not an id: %.40s", i, raw)
		}
	}
	if v.Count != nil && *v.Count != len(ids) {
		return nil, fmt.Errorf("the tokenize answer's count %d is not its %d tokens", *v.Count, len(ids))
	}
	return ids, nil
}
