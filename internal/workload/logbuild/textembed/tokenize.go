package textembed

import (
	"strings"
	"unicode"
)

// Words splits text into lower-cased Unicode words: runs of letters,
// digits and marks. Apostrophes inside a word are dropped ("don't" →
// "dont"); everything else separates words.
func Words(text string) []string {
	var words []string
	var b strings.Builder
	flush := func() {
		if b.Len() > 0 {
			words = append(words, b.String())
			b.Reset()
		}
	}
	for _, r := range text {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r):
			b.WriteRune(unicode.ToLower(r))
		case (r == '\'' || r == '’') && b.Len() > 0:
			// inside a word: drop it, keep the word going
		default:
			flush()
		}
	}
	flush()
	return words
}

// Terms returns the terms of text that the TF-IDF embedding counts: its
// words that are not stop words and have at least two characters (or are
// one non-Latin character, e.g. a CJK ideograph), and, when bigrams is
// set, the pairs of consecutive such words joined by a space.
func Terms(text string, bigrams bool) []string {
	var terms []string
	kept := 0
	for _, w := range Words(text) {
		if isStopWord(w) || (len(w) < 2 && w[0] < 0x80) {
			continue
		}
		terms = append(terms, w)
		kept++
	}
	if !bigrams || kept < 2 {
		return terms
	}
	for i := 1; i < kept; i++ {
		terms = append(terms, terms[i-1]+" "+terms[i])
	}
	return terms
}
