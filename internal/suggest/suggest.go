// Package suggest finds the "did you mean" for a name a user mistyped: a
// threshold's metric, a flag, a key.
package suggest

// MaxDistance is the most edits a suggestion may be from what was typed:
// further, it is a different name, not a typo.
const MaxDistance = 2

// Closest returns the option closest to name within MaxDistance edits,
// the first of equally close ones, or "" when none is.
func Closest(name string, options []string) string {
	best, bestDist := "", MaxDistance+1
	for _, o := range options {
		if d := Distance(name, o); d < bestDist {
			best, bestDist = o, d
		}
	}
	return best
}

// Distance is the Levenshtein distance between two short ASCII names
// (a large number when either is over 64 bytes: nothing known is that
// long, and the table grows with both).
func Distance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		return 1 << 30
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
