package merge

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/spate-dev/spate/internal/capread"
	"github.com/spate-dev/spate/result"
)

// Read reads one shard's result: a result file (spate run --out), or a log
// that holds one among other lines, as kubectl logs gives for a pod run
// with --result-stdout (progress and notes around the JSON document). The
// read stops when ctx is done.
func Read(ctx context.Context, path string) (*result.Result, error) {
	b, err := capread.ReadFile(ctx, path, capread.DataLimit, "")
	if err != nil {
		return nil, fmt.Errorf("reading shard result: %w", err)
	}
	r, err := Extract(b)
	if err != nil {
		return nil, fmt.Errorf("reading shard result %s: %w", path, err)
	}
	return r, nil
}

// Extract finds a spate result in b: b itself, or the last document in b
// that starts with a line "{" and ends with a line "}" (result.Encode's
// indented form), with other lines before and after it.
func Extract(b []byte) (*result.Result, error) {
	var r result.Result
	if err := json.Unmarshal(b, &r); err == nil {
		return checked(&r)
	}
	lines := bytes.SplitAfter(b, []byte("\n"))
	end := -1
	for i := len(lines) - 1; i >= 0; i-- {
		l := bytes.TrimRight(lines[i], "\r\n")
		if end < 0 {
			if bytes.Equal(l, []byte("}")) {
				end = i
			}
			continue
		}
		if !bytes.Equal(l, []byte("{")) {
			continue
		}
		doc := bytes.Join(lines[i:end+1], nil)
		var r result.Result
		if err := json.Unmarshal(doc, &r); err != nil {
			return nil, fmt.Errorf("the result document in lines %d to %d is not valid JSON: %w", i+1, end+1, err)
		}
		return checked(&r)
	}
	return nil, fmt.Errorf("no spate result in it: neither a result file nor a log with one (run shards with --out FILE, or --result-stdout)")
}

func checked(r *result.Result) (*result.Result, error) {
	if r.Schema != result.Schema {
		return nil, fmt.Errorf("schema %q, want %q", r.Schema, result.Schema)
	}
	return r, nil
}
