package workload

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Mutation kinds: how a sampled prompt may be rewritten while keeping its
// meaning (the seeds' "syntax mutation" of real queries, semantically
// faithful). The seeds name no kinds; these are spate's: structural ones
// (order, format) that change the prompt's shape, lexical ones (synonym)
// and surface noise (whitespace, typo) as real users type.
const (
	MutateSynonym    = "synonym"    // common words replaced by synonyms
	MutateOrder      = "order"      // sentences or list items reordered (a question stays last)
	MutateWhitespace = "whitespace" // spaces doubled, line breaks added or removed
	MutateTypo       = "typo"       // letters swapped, dropped or doubled in longer words
	MutateFormat     = "format"     // prose ↔ bullet list, or a label such as "Question:" added
)

// mutateKinds are every kind, in the order they are applied.
var mutateKinds = []string{MutateFormat, MutateOrder, MutateSynonym, MutateTypo, MutateWhitespace}

// Mutation is a parsed mutate spec: which kinds, at what strength.
type Mutation struct {
	Kinds []string // in the order of mutateKinds
	// Strength in (0, 1] is the chance of each possible edit (each word for
	// synonym and typo, each gap for whitespace, each sentence for order,
	// the prompt for format).
	Strength float64
}

// DefaultMutateStrength is the strength of a spec that gives none.
const DefaultMutateStrength = 0.2

// ParseMutation reads a mutate spec: KIND[,KIND...][@STRENGTH] with kinds
// synonym, order, whitespace, typo, format or all, and a strength in
// (0, 1] (default 0.2), e.g. "synonym,order,typo@0.3" or "all@0.1".
func ParseMutation(spec string) (Mutation, error) {
	s := strings.TrimSpace(spec)
	kinds, strength, hasStrength := strings.Cut(s, "@")
	m := Mutation{Strength: DefaultMutateStrength}
	if hasStrength {
		v, err := strconv.ParseFloat(strings.TrimSpace(strength), 64)
		if err != nil || !(v > 0 && v <= 1) {
			return Mutation{}, fmt.Errorf("mutate %q: the strength after @ is a number in (0, 1], e.g. typo@0.2", spec)
		}
		m.Strength = v
	}
	seen := map[string]bool{}
	for _, k := range strings.Split(kinds, ",") {
		k = strings.ToLower(strings.TrimSpace(k))
		switch {
		case k == "all":
			for _, a := range mutateKinds {
				seen[a] = true
			}
		case slices.Contains(mutateKinds, k):
			seen[k] = true
		default:
			return Mutation{}, fmt.Errorf("mutate %q: unknown kind %q (use synonym, order, whitespace, typo, format or all, e.g. synonym,typo@0.2)", spec, k)
		}
	}
	for _, k := range mutateKinds {
		if seen[k] {
			m.Kinds = append(m.Kinds, k)
		}
	}
	return m, nil
}

// String is the canonical spec, which ParseMutation reads back.
func (m Mutation) String() string {
	return strings.Join(m.Kinds, ",") + "@" + strconv.FormatFloat(m.Strength, 'g', -1, 64)
}

// Apply rewrites text with r, returning the new text and the kinds that
// changed it (none when the draws left it as it was).
func (m Mutation) Apply(text string, r *rand.Rand) (string, []string) {
	var applied []string
	for _, k := range m.Kinds {
		var out string
		switch k {
		case MutateFormat:
			out = mutateFormat(text, m.Strength, r)
		case MutateOrder:
			out = mutateOrder(text, m.Strength, r)
		case MutateSynonym:
			out = mutateWords(text, m.Strength, r, synonym)
		case MutateTypo:
			out = mutateWords(text, m.Strength, r, typo)
		case MutateWhitespace:
			out = mutateWhitespace(text, m.Strength, r)
		}
		if out != text {
			applied = append(applied, k)
			text = out
		}
	}
	return text, applied
}

// mutateWords calls f on each word (a run of letters) with chance p; f
// returns the word to put in its place.
func mutateWords(text string, p float64, r *rand.Rand, f func(word string, r *rand.Rand) string) string {
	var b strings.Builder
	b.Grow(len(text) + 8)
	i := 0
	for i < len(text) {
		c, n := utf8.DecodeRuneInString(text[i:])
		if !unicode.IsLetter(c) {
			b.WriteString(text[i : i+n])
			i += n
			continue
		}
		j := i
		for j < len(text) {
			c, n := utf8.DecodeRuneInString(text[j:])
			if !unicode.IsLetter(c) {
				break
			}
			j += n
		}
		w := text[i:j]
		if r.Float64() < p {
			w = f(w, r)
		}
		b.WriteString(w)
		i = j
	}
	return b.String()
}

// synonym replaces a word from the synonym table, keeping its case.
func synonym(w string, r *rand.Rand) string {
	alts, ok := synonyms[strings.ToLower(w)]
	if !ok {
		return w
	}
	s := alts[r.IntN(len(alts))]
	switch {
	case strings.ToUpper(w) == w && len(w) > 1:
		return strings.ToUpper(s)
	case unicode.IsUpper([]rune(w)[0]):
		rs := []rune(s)
		rs[0] = unicode.ToUpper(rs[0])
		return string(rs)
	}
	return s
}

// typo makes one slip in an ASCII word of four letters or more: two
// neighbouring letters swapped, one dropped or one doubled.
func typo(w string, r *rand.Rand) string {
	if len(w) < 4 || utf8.RuneCountInString(w) != len(w) {
		return w
	}
	i := 1 + r.IntN(len(w)-2) // not the first letter
	switch r.IntN(3) {
	case 0:
		if w[i] == w[i+1] {
			return w[:i] + w[i+1:]
		}
		return w[:i] + string(w[i+1]) + string(w[i]) + w[i+2:]
	case 1:
		return w[:i] + w[i+1:]
	}
	return w[:i+1] + w[i:]
}

// mutateWhitespace doubles a space or turns it into a line break, with
// chance p per space between words.
func mutateWhitespace(text string, p float64, r *rand.Rand) string {
	var b strings.Builder
	b.Grow(len(text) + 8)
	for i := 0; i < len(text); i++ {
		c := text[i]
		if c != ' ' || i == 0 || i == len(text)-1 || text[i-1] == ' ' || text[i+1] == ' ' || r.Float64() >= p {
			b.WriteByte(c)
			continue
		}
		if r.IntN(4) == 0 {
			b.WriteByte('\n')
		} else {
			b.WriteString("  ")
		}
	}
	return b.String()
}

// sentences splits text after ". ", "! " and "? " (and line breaks),
// keeping each sentence's own ending.
func sentences(text string) []string {
	var out []string
	start := 0
	for i := 0; i < len(text); i++ {
		end := -1
		switch {
		case text[i] == '\n':
			end = i + 1
		case (text[i] == '.' || text[i] == '!' || text[i] == '?') && i+1 < len(text) && text[i+1] == ' ':
			end = i + 2
		}
		if end > 0 {
			out = append(out, text[start:end])
			start, i = end, end-1
		}
	}
	if start < len(text) {
		out = append(out, text[start:])
	}
	return out
}

// mutateOrder swaps neighbouring sentences (or lines: list items) with
// chance p each, leaving a closing question in place, so independent
// clauses change order and the ask stays last.
func mutateOrder(text string, p float64, r *rand.Rand) string {
	ss := sentences(text)
	n := len(ss)
	if n > 1 && strings.HasSuffix(strings.TrimSpace(ss[n-1]), "?") {
		n-- // the question stays last
	}
	if n < 2 {
		return text
	}
	for i := 0; i+1 < n; i++ {
		if r.Float64() < p {
			a, b := ss[i], ss[i+1]
			// Keep each piece's trailing separator where it was.
			ta, tb := trailing(a), trailing(b)
			ss[i], ss[i+1] = strings.TrimRight(b, " \n")+ta, strings.TrimRight(a, " \n")+tb
			i++
		}
	}
	return strings.Join(ss, "")
}

func trailing(s string) string { return s[len(strings.TrimRight(s, " \n")):] }

// formatLabels are the labels the format mutation may put before a prompt.
var formatLabels = []string{"Question: ", "Q: ", "Task: ", "Request: "}

// mutateFormat, with chance p, re-serialises the prompt: sentences become
// a bullet list, a bullet list becomes sentences, or a label goes first.
func mutateFormat(text string, p float64, r *rand.Rand) string {
	if strings.TrimSpace(text) == "" || r.Float64() >= p {
		return text
	}
	lines := strings.Split(text, "\n")
	bullets := 0
	for _, l := range lines {
		if strings.HasPrefix(strings.TrimSpace(l), "- ") {
			bullets++
		}
	}
	if bullets >= 2 {
		var parts []string
		for _, l := range lines {
			l = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(l), "- "))
			if l != "" {
				parts = append(parts, l)
			}
		}
		return strings.Join(parts, " ")
	}
	if ss := sentences(text); len(ss) >= 3 && r.IntN(2) == 0 {
		var b strings.Builder
		for i, s := range ss {
			if i > 0 {
				b.WriteByte('\n')
			}
			b.WriteString("- ")
			b.WriteString(strings.TrimSpace(s))
		}
		return b.String()
	}
	return formatLabels[r.IntN(len(formatLabels))] + text
}
