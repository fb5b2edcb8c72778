package tokenizer

import (
	"encoding/base64"
	"maps"
	"strconv"
	"strings"
	"testing"

	tiktoken_loader "github.com/pkoukk/tiktoken-go-loader"
)

// TestLoadRanksMatchesLoader: every vocabulary spate reads from the
// tiktoken loader's files comes out of loadRanks exactly as out of the
// loader's own LoadTiktokenBpe, token for token and rank for rank.
func TestLoadRanksMatchesLoader(t *testing.T) {
	for _, file := range []string{"cl100k_base.tiktoken", "o200k_base.tiktoken"} {
		t.Run(file, func(t *testing.T) {
			want, err := tiktoken_loader.NewOfflineLoader().LoadTiktokenBpe(file)
			if err != nil {
				t.Fatal(err)
			}
			got, err := loadRanks(file)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(want) || len(got) < 100_000 {
				t.Fatalf("%d tokens, want the loader's %d (over 100,000)", len(got), len(want))
			}
			if !maps.Equal(got, want) {
				for k, v := range want {
					if r, ok := got[k]; !ok || r != v {
						t.Fatalf("token %q: rank %d (present %v), want %d", k, r, ok, v)
					}
				}
			}
		})
	}
}

// TestLoadRanksRefusesBadLines: a file that is not one base64 token and
// rank per line is an error naming the line, not a vocabulary.
func TestLoadRanksRefusesBadLines(t *testing.T) {
	if _, err := loadRanks("no-such.tiktoken"); err == nil {
		t.Error("a missing file loaded")
	}
	for _, tc := range []struct{ data, want string }{
		{"IQ== 0\nIg==1\n", "f.tiktoken, line 2: want a base64 token, a space and its rank"},
		{"IQ== 0\n\n!!!! 2\n", "f.tiktoken, line 3: illegal base64"},
		{"IQ== x\n", "f.tiktoken, line 1: want a base64 token"},
	} {
		if _, err := parseRanks([]byte(tc.data), "f.tiktoken"); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want one with %q", tc.data, err, tc.want)
		}
	}
	for _, b := range []string{"", "12a", "-1", "1234567890"} {
		if _, ok := atoi([]byte(b)); ok {
			t.Errorf("atoi(%q) ok, want refused", b)
		}
	}
	if n, ok := atoi([]byte("199997")); !ok || n != 199997 {
		t.Errorf("atoi(199997) = %d, %v", n, ok)
	}
}

// BenchmarkLoadRanks is the start-up of loading cl100k_base.
func BenchmarkLoadRanks(b *testing.B) {
	for b.Loop() {
		if _, err := loadRanks("cl100k_base.tiktoken"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLoadRanksLoader is the same with the loader's own
// LoadTiktokenBpe, for comparison.
func BenchmarkLoadRanksLoader(b *testing.B) {
	for b.Loop() {
		if _, err := tiktoken_loader.NewOfflineLoader().LoadTiktokenBpe("cl100k_base.tiktoken"); err != nil {
			b.Fatal(err)
		}
	}
}

// FuzzParseRanks: no file makes parseRanks panic; every token it reads is
// the base64 of its line and keeps the line's rank (the last line of a
// repeated token wins, as in the loader).
func FuzzParseRanks(f *testing.F) {
	f.Add([]byte("IQ== 0\nIg== 1\n"))
	f.Add([]byte("IQ== 0\n\nIQ== 7"))
	f.Add([]byte("IQ==0\n"))
	f.Add([]byte("!!!! 1\n"))
	f.Add([]byte(" 1\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		ranks, err := parseRanks(data, "f.tiktoken")
		if err != nil {
			return
		}
		want := map[string]int{}
		for line := range strings.SplitSeq(string(data), "\n") {
			if line == "" {
				continue
			}
			tok, rank, _ := strings.Cut(line, " ")
			b, err := base64.StdEncoding.DecodeString(tok)
			if err != nil {
				t.Fatalf("accepted %q, whose token is not base64", line)
			}
			n, err := strconv.Atoi(rank)
			if err != nil || n < 0 {
				t.Fatalf("accepted %q, whose rank is not a number", line)
			}
			want[string(b)] = n
		}
		if !maps.Equal(ranks, want) {
			t.Fatalf("%v, want %v", ranks, want)
		}
	})
}
