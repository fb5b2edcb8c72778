package textembed

import (
	"math"
	"sort"
)

// Boilerplate is learnt from the log itself: a term is boilerplate when the
// lines that hold it have no more in common, without it, than any two lines
// of the log — greetings, sign-offs, "asking for a friend" — whatever its
// frequency. Topic words are the opposite: the lines that hold them share
// their other words too.
//
// For a term t held by the lines L(t), its lift is the mean cosine between
// pairs of lines of L(t), each a TF-IDF vector of its terms found in more
// than one line, without t (and without the
// words that come with t in most of its lines, so that the words of one
// phrase, "thank you so much", do not vouch for each other), over the mean
// cosine between pairs of all lines. A lift near 1 is boilerplate; topic
// words reach 3 and more. The weight of t is ((lift − 1) / (LiftFull − 1))²
// clipped to [BoilerplateFloor, 1]. Terms in fewer than
// max(3, 2 % of the lines) keep weight 1: too rare to judge, and too rare to
// pull clusters together. The lifts are measured three times over, each
// pass leaving out the terms the one before found below a lift of 1.5, so
// that the boilerplate of a line stops vouching for the rest of the line's
// boilerplate.
const (
	// LiftFull is the lift from which a term keeps its whole weight.
	LiftFull = 2.0
	// BoilerplateFloor is the least weight a term is given.
	BoilerplateFloor = 0.02
	// learnLift is the lift below which a term is left out of the next
	// pass's lifts.
	learnLift = 1.5
	// boilerplatePasses is the number of passes of the learning.
	boilerplatePasses = 3
	// phraseShare: a word in this share of the lines of a term is part of
	// the term's phrase and left out of its lift.
	phraseShare = 0.8
)

// TermWeight is a term and the weight boilerplate learning gave it.
type TermWeight struct {
	Term   string  `json:"term"`
	Lines  int     `json:"lines"`
	Lift   float64 `json:"lift"`
	Weight float64 `json:"weight"`
}

// learnBoilerplate returns the weight of every term judged (see
// Boilerplate), from the lines' TF-IDF weights.
func learnBoilerplate(lines []map[string]float64) []TermWeight {
	minDF := max(3, int(math.Ceil(0.02*float64(len(lines)))))
	mult := map[string]float64{}
	var out []TermWeight
	for pass := range boilerplatePasses {
		lift := lifts(lines, mult, minDF)
		out = out[:0]
		clear(mult)
		for _, t := range sortedKeys(lift) {
			l := lift[t]
			w := (l.lift - 1) / (LiftFull - 1)
			w = math.Min(1, math.Max(BoilerplateFloor, w*w))
			if l.lift <= 1 || math.IsNaN(l.lift) {
				w = BoilerplateFloor
			}
			out = append(out, TermWeight{Term: t, Lines: l.lines, Lift: l.lift, Weight: w})
			// The next pass measures lifts without the plain boilerplate
			// only: weighting down every term short of LiftFull would let
			// the words of one topic, each a little short, pull each other
			// down pass after pass.
			if pass < boilerplatePasses-1 && l.lift < learnLift {
				mult[t] = BoilerplateFloor
			}
		}
	}
	sort.SliceStable(out, func(a, b int) bool { return out[a].Lift < out[b].Lift })
	return out
}

type termLift struct {
	lines int
	lift  float64
}

// lifts measures the lift of every term in at least minDF lines, each line
// a vector of its TF-IDF weights times mult (1 for terms not in it).
func lifts(lines []map[string]float64, mult map[string]float64, minDF int) map[string]termLift {
	// Terms of one line cannot be shared: they only dilute the cosines
	// (a unique order number would make every line unlike every other).
	df := map[string]int{}
	for _, l := range lines {
		for t := range l {
			df[t]++
		}
	}
	vecs := make([]map[string]float64, len(lines))
	holders := map[string][]int{}
	for i, l := range lines {
		v := make(map[string]float64, len(l))
		norm := 0.0
		for _, t := range sortedKeys(l) { // a fixed order: same sums, same bits
			if df[t] < 2 {
				continue
			}
			w := l[t]
			if m, ok := mult[t]; ok {
				w *= m
			}
			v[t] = w
			norm += w * w
		}
		if norm == 0 {
			continue
		}
		norm = math.Sqrt(norm)
		for t := range v {
			v[t] /= norm
			holders[t] = append(holders[t], i)
		}
		vecs[i] = v
	}
	base := meanCosine(vecs, nil)
	out := map[string]termLift{}
	if base <= 0 {
		return out
	}
	sub := make([]map[string]float64, 0, len(lines))
	for t, idx := range holders {
		if len(idx) < minDF {
			continue
		}
		// The term and the words of its phrase are left out.
		with := map[string]int{}
		sub = sub[:0]
		for _, i := range idx {
			sub = append(sub, vecs[i])
			for u := range vecs[i] {
				with[u]++
			}
		}
		phrase := map[string]bool{t: true}
		for u, c := range with {
			if float64(c) >= phraseShare*float64(len(idx)) {
				phrase[u] = true
			}
		}
		// A phrase that is most of its lines is their topic ("cancel my
		// subscription"): only t is left out. A phrase beside other content
		// ("asking for a friend, ...") is left out whole.
		mass := 0.0
		words := sortedKeys(phrase)
		for _, v := range sub {
			for _, u := range words {
				mass += v[u] * v[u]
			}
		}
		drop := phrase
		if len(phrase) > 1 && mass >= 0.5*float64(len(sub)) {
			drop = map[string]bool{t: true}
		}
		out[t] = termLift{lines: len(idx), lift: meanCosine(sub, drop) / base}
	}
	return out
}

// meanCosine is the mean cosine over pairs of the vectors (of unit norm)
// with the terms of drop left out (each vector renormalised), computed
// from their sum: (|Σv|² − m) / (m(m − 1)) over the m vectors left
// non-empty.
func meanCosine(vecs []map[string]float64, drop map[string]bool) float64 {
	sum := map[string]float64{}
	m := 0
	dropped := sortedKeys(drop)
	for _, v := range vecs {
		if v == nil {
			continue
		}
		rest := 1.0
		for _, t := range dropped {
			rest -= v[t] * v[t]
		}
		if rest <= 1e-12 {
			continue
		}
		scale := 1 / math.Sqrt(rest)
		m++
		for t, x := range v {
			if !drop[t] {
				sum[t] += x * scale
			}
		}
	}
	if m < 2 {
		return 0
	}
	s2 := 0.0
	for _, t := range sortedKeys(sum) { // a fixed order: same sums, same bits
		s2 += sum[t] * sum[t]
	}
	return (s2 - float64(m)) / float64(m*(m-1))
}
