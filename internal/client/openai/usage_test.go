package openai

import (
	"testing"

	"github.com/valyala/fastjson"

	"github.com/spate-dev/spate/internal/record"
)

// TestReadUsageReasoning: the reasoning tokens usage reports among its
// output tokens (chat's completion_tokens_details, the Responses API's
// output_tokens_details) are kept for the usage check; a count that is no
// count, or over the output tokens, is ignored rather than failing the
// request.
func TestReadUsageReasoning(t *testing.T) {
	for _, tc := range []struct {
		usage      string
		responses  bool
		out, think int
	}{
		{`{"prompt_tokens":3,"completion_tokens":128,"completion_tokens_details":{"reasoning_tokens":120}}`, false, 128, 120},
		{`{"prompt_tokens":3,"completion_tokens":128}`, false, 128, 0},
		{`{"prompt_tokens":3,"completion_tokens":8,"completion_tokens_details":{"reasoning_tokens":120}}`, false, 8, 0},
		{`{"prompt_tokens":3,"completion_tokens":8,"completion_tokens_details":{"reasoning_tokens":-1}}`, false, 8, 0},
		{`{"prompt_tokens":3,"completion_tokens":8,"completion_tokens_details":{"reasoning_tokens":"7"}}`, false, 8, 0},
		{`{"input_tokens":3,"output_tokens":64,"output_tokens_details":{"reasoning_tokens":60}}`, true, 64, 60},
	} {
		var p fastjson.Parser
		u, err := p.Parse(tc.usage)
		if err != nil {
			t.Fatal(err)
		}
		rec := &record.Record{}
		rec.Reset()
		if tc.responses {
			err = readResponsesUsage(u, rec)
		} else {
			err = readUsage(u, rec)
		}
		if err != nil || rec.UsageTokens != tc.out || rec.UsageReasoning != tc.think {
			t.Errorf("%s: output %d, reasoning %d, error %v; want %d, %d", tc.usage, rec.UsageTokens, rec.UsageReasoning, err, tc.out, tc.think)
		}
	}
}
