package tokenizer

import (
	"bytes"
	"encoding/base64"
	"fmt"

	"github.com/pkoukk/tiktoken-go-loader/assets"
)

// loadRanks reads one of the vocabularies the tiktoken loader ships (a
// .tiktoken file: a base64 token and its rank per line) into a map sized
// for it, every token's bytes in one shared string. It gives what the
// loader's own LoadTiktokenBpe gives (TestLoadRanksMatchesLoader) at a
// fraction of the start-up: the loader splits each line into new strings
// and grows its map as it goes, about 300,000 allocations and 24 ms for
// cl100k_base, the most of a short run's start-up.
func loadRanks(file string) (map[string]int, error) {
	data, err := assets.Assets.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", file, err)
	}
	return parseRanks(data, file)
}

// parseRanks reads the lines of a .tiktoken file, data, named file in
// its errors.
func parseRanks(data []byte, file string) (map[string]int, error) {
	var err error
	type entry struct{ start, end, rank int }
	entries := make([]entry, 0, bytes.Count(data, []byte{'\n'})+1)
	block := make([]byte, 0, base64.StdEncoding.DecodedLen(len(data)))
	for n := 1; len(data) > 0; n++ {
		line, rest, _ := bytes.Cut(data, []byte{'\n'})
		data = rest
		if len(line) == 0 {
			continue
		}
		tok, rank, ok := bytes.Cut(line, []byte{' '})
		r, rok := atoi(rank)
		if !ok || !rok {
			return nil, fmt.Errorf("%s, line %d: want a base64 token, a space and its rank", file, n)
		}
		start := len(block)
		if block, err = base64.StdEncoding.AppendDecode(block, tok); err != nil {
			return nil, fmt.Errorf("%s, line %d: %w", file, n, err)
		}
		entries = append(entries, entry{start, len(block), r})
	}
	all := string(block) // one copy; every key is a part of it
	ranks := make(map[string]int, len(entries))
	for _, e := range entries {
		ranks[all[e.start:e.end]] = e.rank
	}
	return ranks, nil
}

// atoi parses a non-negative decimal without allocating; ok is false for
// anything else (or over nine digits).
func atoi(b []byte) (n int, ok bool) {
	if len(b) == 0 || len(b) > 9 {
		return 0, false
	}
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}
