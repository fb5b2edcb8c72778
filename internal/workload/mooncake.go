package workload

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"time"
)

// FormatMooncake is the Mooncake trace format (FAST'25 traces, AIPerf's
// mooncake_trace): one JSON object a line with timestamp (milliseconds),
// input_length, output_length and hash_ids, one id per KV block of the
// prompt; equal ids are equal blocks, and an id names its whole prefix
// too. Rows may carry session_id and delay (AIPerf's multi-turn form):
// the rows of one session are the turns of one conversation, each turn's
// prompt a new user message after the real answers so far, sent delay
// milliseconds after the answer before it.
const FormatMooncake = "mooncake"

// maxTraceInput bounds one row's input_length, and maxTraceTokens the
// tokens of all the prompts of a trace synthesised (about 7 bytes each).
const (
	maxTraceInput  = 1 << 20
	maxTraceTokens = 1 << 26
)

// DefaultTraceBlockSize is the tokens per hash id of a Mooncake trace when
// none is given: the block size of Mooncake's traces (and AIPerf's and
// GuideLLM's default).
const DefaultTraceBlockSize = 512

// mooncakeRow is one line of a Mooncake trace.
type mooncakeRow struct {
	Timestamp    *float64        `json:"timestamp"`
	InputLength  *int            `json:"input_length"`
	OutputLength *int            `json:"output_length"`
	HashIDs      []int64         `json:"hash_ids"`
	TextInput    *string         `json:"text_input"`
	SessionID    json.RawMessage `json:"session_id"`
	Delay        *float64        `json:"delay"`
}

// traceBlocks makes the token blocks of a trace's hash ids: block id is
// BlockSize one-token words drawn from a random source fixed by the seed
// and the id, so equal ids give equal text, and a prompt of n words is n
// tokens in any tokenizer whose tokens the words are (CheckVocab). An id's
// first word differs from the first words of the other ids that follow the
// same parent id (its siblings), so that two prompts sharing their first k
// ids share exactly k blocks and differ at the first token of the next (as
// long as a parent has fewer children than there are words). A last block
// shorter than BlockSize is the first words of its id's block.
type traceBlocks struct {
	size   int
	seed   uint64
	blocks map[int64][]int32        // id → word indices
	first  map[int64]map[int32]bool // parent id (−1: none) → first words of its children
}

func newTraceBlocks(size int, seed uint64) *traceBlocks {
	return &traceBlocks{size: size, seed: seed, blocks: map[int64][]int32{}, first: map[int64]map[int32]bool{}}
}

// block returns the words of id, making them the first time (after
// parent, −1 for the first block of a prompt).
func (tb *traceBlocks) block(id, parent int64) []int32 {
	if b, ok := tb.blocks[id]; ok {
		return b
	}
	r := rand.New(rand.NewPCG(tb.seed^0x6d6f6f6e, uint64(id)))
	b := make([]int32, tb.size)
	for i := range b {
		b[i] = int32(r.IntN(len(OneTokenWords)))
	}
	taken := tb.first[parent]
	if taken == nil {
		taken = map[int32]bool{}
		tb.first[parent] = taken
	}
	for tries := 0; taken[b[0]] && tries < 4*len(OneTokenWords); tries++ {
		b[0] = int32(r.IntN(len(OneTokenWords)))
	}
	taken[b[0]] = true
	tb.blocks[id] = b
	return b
}

// prompt writes the text of a prompt of length tokens made of ids.
func (tb *traceBlocks) prompt(ids []int64, length int) string {
	var s strings.Builder
	s.Grow(length * 7)
	left := length
	parent := int64(-1)
	for _, id := range ids {
		b := tb.block(id, parent)
		for _, w := range b[:min(left, len(b))] {
			s.WriteByte(' ')
			s.WriteString(OneTokenWords[w])
		}
		left -= min(left, len(b))
		parent = id
	}
	return s.String()
}

// readMooncake reads a Mooncake trace: each row's prompt is made of its
// hash ids' blocks (see traceBlocks), input_length tokens long, or is its
// text_input; output_length is its max_tokens. Rows with a session_id
// become the turns of one conversation per session, at the first row's
// place in the file.
func readMooncake(b []byte, path string, o LoadOptions) (*Dataset, error) {
	if _, remote := o.Tokenizer.(interface{ Remote() bool }); remote {
		// Its blocks are made of OneTokenWords, one token each in the
		// shipped vocabularies only; checking them remotely is a request
		// a word.
		return nil, fmt.Errorf("dataset %s: a Mooncake trace's prompts are made in a local tokenizer's tokens, not yet in the server's: use --tokenizer cl100k_base, o200k_base or llama3", path)
	}
	if o.Tokenizer != nil {
		if err := CheckVocab(o.Tokenizer, "--tokenizer"); err != nil {
			return nil, fmt.Errorf("dataset %s: %w", path, err)
		}
	}
	size := o.BlockSize
	if size <= 0 {
		size = DefaultTraceBlockSize
	}
	tb := newTraceBlocks(size, o.Seed)
	d := &Dataset{}
	sessions := map[string]int{} // session id → index in d.reqs
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	fresh := int64(math.MinInt64 / 2) // ids of rows without hash_ids: never in a trace
	line, total := 0, 0
	for sc.Scan() {
		line++
		text := bytes.TrimSpace(sc.Bytes())
		if len(text) == 0 {
			continue
		}
		where := fmt.Sprintf("dataset %s, line %d", path, line)
		var row mooncakeRow
		dec := json.NewDecoder(bytes.NewReader(text))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&row); err != nil {
			return nil, fmt.Errorf("%s: not a Mooncake trace row (timestamp, input_length, output_length, hash_ids; session_id, delay, text_input): %w", where, err)
		}
		prompt, tokens, err := mooncakePrompt(row, tb, size, &fresh)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", where, err)
		}
		if total += tokens; total > maxTraceTokens {
			return nil, fmt.Errorf("%s: the trace's prompts come to more than %d tokens: replay a part of it", where, maxTraceTokens)
		}
		turn := Turn{Prompt: prompt, InputTokens: tokens}
		if row.OutputLength != nil {
			if *row.OutputLength < 0 {
				return nil, fmt.Errorf("%s: output_length must be >= 0", where)
			}
			turn.MaxTokens = *row.OutputLength
		}
		var at time.Duration
		if row.Timestamp != nil {
			if *row.Timestamp < 0 || math.IsNaN(*row.Timestamp) || math.IsInf(*row.Timestamp, 0) {
				return nil, fmt.Errorf("%s: timestamp must be a number of milliseconds >= 0", where)
			}
			at = time.Duration(*row.Timestamp * float64(time.Millisecond))
		}
		if row.Delay != nil && (*row.Delay < 0 || math.IsNaN(*row.Delay) || math.IsInf(*row.Delay, 0)) {
			return nil, fmt.Errorf("%s: delay must be a number of milliseconds >= 0", where)
		}
		session, err := sessionID(row.SessionID)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", where, err)
		}
		if i, ok := sessions[session]; ok && session != "" {
			// A later turn: after the answer to the one before, and its delay.
			if row.Timestamp != nil {
				return nil, fmt.Errorf("%s: turn %d of session %s has a timestamp: later turns take delay (milliseconds to wait after the previous answer)", where, len(d.reqs[i].Turns)+1, session)
			}
			if row.Delay != nil {
				turn.Think = time.Duration(*row.Delay * float64(time.Millisecond))
			}
			d.reqs[i].Turns = append(d.reqs[i].Turns, turn)
			continue
		}
		if row.Delay != nil && session == "" {
			return nil, fmt.Errorf("%s: delay is the wait before a later turn of a session: give session_id too", where)
		}
		req := Request{Prompt: turn.Prompt, InputTokens: turn.InputTokens, MaxTokens: turn.MaxTokens, Offset: at, timed: row.Timestamp != nil}
		if session != "" {
			sessions[session] = len(d.reqs)
			req.Session = "spate-" + session
			req.Turns = []Turn{turn}
			req.Prompt, req.MaxTokens = "", 0
			req.Labels = []Label{{Key: "session", Value: "trace"}}
		}
		d.reqs = append(d.reqs, req)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("dataset %s, after line %d: %w", path, line, err)
	}
	return d, nil
}

// mooncakePrompt makes a row's prompt and its length in tokens.
func mooncakePrompt(row mooncakeRow, tb *traceBlocks, size int, fresh *int64) (string, int, error) {
	if row.TextInput != nil {
		if row.InputLength != nil || len(row.HashIDs) > 0 {
			return "", 0, errors.New("text_input excludes input_length and hash_ids")
		}
		return *row.TextInput, 0, nil
	}
	if row.InputLength == nil || *row.InputLength < 1 {
		return "", 0, errors.New("input_length must be a number of tokens >= 1 (or give text_input)")
	}
	n := *row.InputLength
	if n > maxTraceInput {
		return "", 0, fmt.Errorf("input_length %d is more than %d tokens", n, maxTraceInput)
	}
	ids := row.HashIDs
	want := (n + size - 1) / size
	switch {
	case len(ids) == 0:
		// No ids: blocks of its own, shared with no other row.
		for range want {
			ids = append(ids, *fresh)
			*fresh++
		}
	case len(ids) != want:
		return "", 0, fmt.Errorf("%d hash_ids for input_length %d, but blocks of %d tokens need ceil(%d/%d) = %d: is the trace's block size %d? (set --trace-block-size; Mooncake's traces use 512)",
			len(ids), n, size, n, size, want, (n+len(ids)-1)/max(len(ids), 1))
	}
	for _, id := range row.HashIDs {
		if id < 0 {
			return "", 0, fmt.Errorf("hash id %d: want ids >= 0", id)
		}
	}
	return tb.prompt(ids, n), n, nil
}

// sessionID reads a session_id given as a string or a number ("" when
// absent).
func sessionID(raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil
	}
	var n json.Number
	if err := json.Unmarshal(raw, &n); err == nil {
		return n.String(), nil
	}
	return "", errors.New("session_id must be a string or a number")
}
