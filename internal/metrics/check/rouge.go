package check

import (
	"strings"
	"unicode"
)

// Tokens splits s into lower-case words (letters and digits), as ROUGE
// compares them.
func Tokens(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	})
}

// RougeL is the ROUGE-L F1 score of a candidate against a reference: from
// the length of their longest common subsequence of words, precision
// LCS/|cand|, recall LCS/|ref|, F1 their harmonic mean. 0 when either is
// empty.
func RougeL(ref, cand []string) float64 {
	if len(ref) == 0 || len(cand) == 0 {
		return 0
	}
	// One row of the LCS table at a time.
	prev := make([]int, len(cand)+1)
	cur := make([]int, len(cand)+1)
	for i := 1; i <= len(ref); i++ {
		for j := 1; j <= len(cand); j++ {
			switch {
			case ref[i-1] == cand[j-1]:
				cur[j] = prev[j-1] + 1
			case prev[j] >= cur[j-1]:
				cur[j] = prev[j]
			default:
				cur[j] = cur[j-1]
			}
		}
		prev, cur = cur, prev
	}
	lcs := float64(prev[len(cand)])
	if lcs == 0 {
		return 0
	}
	p, r := lcs/float64(len(cand)), lcs/float64(len(ref))
	return 2 * p * r / (p + r)
}
