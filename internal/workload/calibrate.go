package workload

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"strings"
)

// IDTokenizer turns text into a tokenizer's ids with a request (a
// tokenize endpoint: tokenizer.Server).
type IDTokenizer interface {
	Tokenize(ctx context.Context, text string) ([]int, error)
	Name() string
}

// CalibrationRequests is the most tokenize requests Calibrate sends: two
// to learn the words' counts, calibrationSamples to check built prompts,
// and one more check after a correction.
const CalibrationRequests = 2 + calibrationSamples + 1

// calibrationSamples are the prompts built and checked against the
// tokenizer, of these lengths.
const calibrationSamples = 4

var calibrationLengths = [calibrationSamples]int{50, 200, 500, 1000}

// Calibrate learns the count of each of OneTokenWords in t's vocabulary
// with two requests, the words once (" h a b c") and each twice (" h a a
// b b c c"): the second is the first with every word's ids doubled, which
// splits the ids among the words; h, the first word once more, is the
// head every prompt starts with, and the ids before a's are its count
// there. It then builds prompts of 50 to 1000 tokens from the words that
// are 1 to 4 tokens and checks each against t; a miss they all share (a
// head counted wrong) is corrected once. It sends at most
// CalibrationRequests requests.
func Calibrate(ctx context.Context, t IDTokenizer) (*Vocab, error) {
	words := OneTokenWords
	// Both texts start with the first word once more, unsplit: a
	// SentencePiece tokenizer may write a text's first word unlike the
	// same word after another ("▁▁" "time" against "▁time").
	once := " " + words[0] + " " + strings.Join(words, " ")
	var b strings.Builder
	b.WriteString(" " + words[0])
	for _, w := range words {
		b.WriteString(" " + w + " " + w)
	}
	a, err := t.Tokenize(ctx, once)
	if err != nil {
		return nil, fmt.Errorf("learning the synthetic words' token counts: %w", err)
	}
	d, err := t.Tokenize(ctx, b.String())
	if err != nil {
		return nil, fmt.Errorf("learning the synthetic words' token counts: %w", err)
	}
	counts, head, ok := splitDoubled(a, d, len(words))
	if !ok {
		return nil, fmt.Errorf("tokenizer %s: the ids of the synthetic words (%d tokens) and of each word twice (%d tokens) do not split into words: the tokenizer merges across words; use a dataset, or a local tokenizer", t.Name(), len(a), len(d))
	}
	// The vocabulary's name (in workload digests) is its counts', not the
	// endpoint's: the same model behind another URL makes the same prompts.
	h := sha256.New()
	fmt.Fprintf(h, "head=%d counts=%v", head, counts)
	v, err := NewVocab("counts#"+hex.EncodeToString(h.Sum(nil))[:12], words, counts, words[0], head)
	if err != nil {
		return nil, fmt.Errorf("tokenizer %s: %w; use a dataset, or a local tokenizer", t.Name(), err)
	}
	miss, err := checkVocab(ctx, t, v, calibrationLengths[:])
	if err != nil {
		return nil, err
	}
	if miss != 0 {
		// Every text missed by the same few tokens: its head is not what
		// the two texts above showed. Correct it and check once.
		if v.HeadTokens+miss < 1 || v.HeadTokens+miss > 2*maxSplitTokens {
			return nil, fmt.Errorf("tokenizer %s: prompts built from the synthetic words miss their lengths by %d tokens each; use a dataset, or a local tokenizer", t.Name(), miss)
		}
		v.HeadTokens += miss
		v.Name += fmt.Sprintf("+%d", miss)
		if miss, err = checkVocab(ctx, t, v, calibrationLengths[1:2]); err != nil {
			return nil, err
		}
		if miss != 0 {
			return nil, fmt.Errorf("tokenizer %s: prompts built from the synthetic words still miss their lengths by %d tokens after a correction; use a dataset, or a local tokenizer", t.Name(), miss)
		}
	}
	return v, nil
}

// checkVocab builds a prompt of each length from v and counts it with t:
// the miss all of them share (0: none), or an error when one misses by
// more than 1 % (at least one token) and they do not miss alike.
func checkVocab(ctx context.Context, t IDTokenizer, v *Vocab, lengths []int) (int, error) {
	r := rand.New(rand.NewPCG(0xCA11B, uint64(len(lengths))))
	var misses []int
	worst, at := 0, 0
	for _, n := range lengths {
		text, k := v.Text(r, n)
		ids, err := t.Tokenize(ctx, text)
		if err != nil {
			return 0, fmt.Errorf("checking prompts built in the server's tokens: %w", err)
		}
		m := len(ids) - k
		misses = append(misses, m)
		if abs(m)*100 > max(k, 100) && abs(m) > abs(worst) {
			worst, at = m, k
		}
	}
	same := true
	for _, m := range misses {
		same = same && m == misses[0]
	}
	switch {
	case same:
		return misses[0], nil
	case worst != 0:
		return 0, fmt.Errorf("tokenizer %s: a prompt built of %d tokens was %d in the server's tokens (over 1 %% off): its words' counts depend on their neighbours; use a dataset, or a local tokenizer", t.Name(), at, at+worst)
	}
	return 0, nil
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// maxSplitTokens is the most tokens splitDoubled gives one word.
const maxSplitTokens = 8

// splitDoubled splits once, the ids of n words, into the words' counts,
// using twice, the ids of the same words each written twice: after a
// head the two share, word i's ids are once[p:p+k] in once and the same
// k ids two times over in twice. It returns the counts and the head's,
// and false when no split explains both.
func splitDoubled(once, twice []int, n int) ([]int, int, bool) {
	counts := make([]int, n)
	for lead := 1; lead <= 2*maxSplitTokens && lead <= len(once) && lead <= len(twice); lead++ {
		if !equal(once[:lead], twice[:lead]) {
			break
		}
		failed := map[[2]int]bool{}
		var split func(i, p, q int) bool
		split = func(i, p, q int) bool {
			if i == n {
				return p == len(once) && q == len(twice)
			}
			if failed[[2]int{i, p}] {
				return false
			}
			for k := 1; k <= maxSplitTokens && p+k <= len(once) && q+2*k <= len(twice); k++ {
				w := once[p : p+k]
				if equal(w, twice[q:q+k]) && equal(w, twice[q+k:q+2*k]) && split(i+1, p+k, q+2*k) {
					counts[i] = k
					return true
				}
			}
			failed[[2]int{i, p}] = true
			return false
		}
		if split(0, lead, lead) {
			return counts, lead, true
		}
	}
	return nil, 0, false
}

func equal(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
