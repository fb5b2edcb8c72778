package observe

import (
	"context"
	"net/http"
	"strings"
)

// Identify scrapes endpoint once and names the known servers whose
// metrics it carries (e.g. "llama.cpp"), in the order of the known list,
// with the number of metric families it served. spate doctor uses it to
// say what --scrape would show.
func Identify(ctx context.Context, c *http.Client, endpoint string) (names []string, families int, err error) {
	fams, err := fetch(ctx, c, endpoint)
	if err != nil {
		return nil, 0, err
	}
	for _, s := range servers {
		if carries(fams, s) {
			names = append(names, s.name)
		}
	}
	return names, len(fams), nil
}

// carries says whether a family of fams has one of s's prefixes.
func carries(fams Families, s server) bool {
	for name := range fams {
		for _, p := range s.prefixes {
			if strings.HasPrefix(name, p) {
				return true
			}
		}
	}
	return false
}
