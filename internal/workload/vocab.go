package workload

import (
	"fmt"
	"math/rand/v2"
	"strings"
)

// Vocab is what synthetic prompts are made of in a tokenizer that is not
// cl100k_base's: words with each one's token count in context (after a
// space, between other words), and the word every text starts with, with
// its count there: a SentencePiece tokenizer writes a text's first word
// unlike the same word later (Llama 2: " time" first is "▁▁" "time", later
// "▁time"), so every text starts with the one word whose count there is
// known. The nil Vocab is OneTokenWords, each one cl100k token, with no
// head: the prompts every earlier run sent.
type Vocab struct {
	// Words are used with a leading space each.
	Words []string
	// Tokens[i] is Words[i]'s count, 1 to maxWordTokens.
	Tokens []int
	// Head is the word every text starts with (with a leading space),
	// and HeadTokens its count there.
	Head       string
	HeadTokens int
	// Name identifies the vocabulary in workload digests (Calibrate's: a
	// hash of the counts).
	Name string

	ones  []int  // indices of one-token words
	reach []bool // reach[m]: m tokens can be made of the words' counts
	gcd   int
}

// maxWordTokens is the most tokens a word of a Vocab may have: longer
// words are left out, so that a prompt's last few tokens can always be
// made exactly.
const maxWordTokens = 4

// reachTable is how far Vocab.reach is tabled; beyond it, m is reachable
// when the counts' gcd divides it (true past the Frobenius number, which
// for counts of at most maxWordTokens is below 16).
const reachTable = 64

// NewVocab makes a Vocab of words and their counts, keeping the words of
// 1 to maxWordTokens tokens, whose texts start with head, of headTokens
// tokens there.
func NewVocab(name string, words []string, tokens []int, head string, headTokens int) (*Vocab, error) {
	v := &Vocab{Name: name, Head: head, HeadTokens: headTokens}
	for i, w := range words {
		if k := tokens[i]; k >= 1 && k <= maxWordTokens {
			if k == 1 {
				v.ones = append(v.ones, len(v.Words))
			}
			v.Words, v.Tokens = append(v.Words, w), append(v.Tokens, k)
			v.gcd = gcd(v.gcd, k)
		}
	}
	if len(v.Words) < 16 {
		return nil, fmt.Errorf("only %d of %d words are 1 to %d tokens each: too few to make prompts from", len(v.Words), len(words), maxWordTokens)
	}
	v.reach = make([]bool, reachTable)
	v.reach[0] = true
	for m := 1; m < reachTable; m++ {
		for k := 1; k <= maxWordTokens && !v.reach[m]; k++ {
			v.reach[m] = k <= m && v.reach[m-k] && v.has(k)
		}
	}
	return v, nil
}

// has reports whether some word has k tokens.
func (v *Vocab) has(k int) bool {
	for _, t := range v.Tokens {
		if t == k {
			return true
		}
	}
	return false
}

func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// reachable reports whether words of v make exactly m tokens.
func (v *Vocab) reachable(m int) bool {
	if m < reachTable {
		return v.reach[m]
	}
	return m%v.gcd == 0
}

// Text returns a text of n tokens as a whole (its head included) drawn
// with r, and the tokens it has (n, or up to gcd-1 fewer when the words'
// counts cannot make n). The nil Vocab gives Words(r, n).
func (v *Vocab) Text(r *rand.Rand, n int) (string, int) {
	if v == nil {
		return Words(r, n), n
	}
	if n <= v.HeadTokens {
		return "", 0
	}
	s, k := v.More(r, n-v.HeadTokens)
	return " " + v.Head + s, k + v.HeadTokens
}

// More returns words that add n tokens to a text that already has some
// (no head), and how many they add (n, or a few fewer when the counts
// cannot make n).
func (v *Vocab) More(r *rand.Rand, n int) (string, int) {
	if v == nil {
		return Words(r, n), n
	}
	for n > 0 && !v.reachable(n) {
		n--
	}
	var b strings.Builder
	b.Grow(n * 7)
	left := n
	for left > 0 {
		i := r.IntN(len(v.Words))
		for tries := 0; !v.fits(v.Tokens[i], left); tries++ {
			if tries == 8 {
				i = v.smallestFit(left)
				break
			}
			i = r.IntN(len(v.Words))
		}
		b.WriteByte(' ')
		b.WriteString(v.Words[i])
		left -= v.Tokens[i]
	}
	return b.String(), n
}

// fits reports whether a word of k tokens leaves a reachable rest of left.
func (v *Vocab) fits(k, left int) bool { return k <= left && v.reachable(left-k) }

// smallestFit is the first word that fits left (one exists: left is
// reachable).
func (v *Vocab) smallestFit(left int) int {
	if len(v.ones) > 0 {
		return v.ones[0]
	}
	for i, k := range v.Tokens {
		if v.fits(k, left) {
			return i
		}
	}
	return 0
}

// key is v's part of a workload digest ("" for the nil Vocab, so that the
// digests of earlier runs stay as they were).
func (v *Vocab) key() string {
	if v == nil {
		return ""
	}
	return " vocab=" + v.Name
}
