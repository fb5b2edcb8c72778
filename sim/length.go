package sim

// The length fault (Faults.LengthRate): a share of answers end early with
// finish_reason "length", as when a server's token budget or context
// window cuts an answer short of the max_tokens asked (seed 000 §4.1's
// output truncation). With ignore_eos such an answer has fewer tokens than
// asked: dropped tokens.

// lengthCut is how many of n tokens an answer to request seq keeps under
// the length fault: n when the request draws no cut, else a seeded count
// from 1 to n−1 (an answer of one token cannot be cut).
func lengthCut(seed int64, seq uint64, rate float64, n int) (int, bool) {
	if rate <= 0 || n < 2 {
		return n, false
	}
	base := mix64(uint64(seed) ^ 0x6c656e6774680000) // "length"
	if unitFloat(mix64(base^mix64(seq))) >= rate {
		return n, false
	}
	return 1 + int(unitFloat(mix64(base^mix64(seq+0x5bd1e995)))*float64(n-1)), true
}
