package vector

import (
	"context"
	"strings"
	"testing"
)

// TestTargetErrorsHidePassword: an error about a vector target names it
// without its password, whether or not the URL parses (url.Error repeats
// the URL whole: ProxyUpstream wrapped it).
func TestTargetErrorsHidePassword(t *testing.T) {
	for _, raw := range []string{
		"chroma://u:hunter22%zz@db:8000/c", // a bad escape: not a URL
		"qdrant://u:hunter22%zz@db:6333/c",
		"pgvector://u:hunter22%zz@db:5432/x",
		"mongo://u:hunter22@db/x",    // an unknown scheme
		"pgvector://u:hunter22@db/x", // not behind the chaos proxy
	} {
		_, err1 := Open(context.Background(), raw)
		_, _, err2 := ProxyUpstream(raw)
		for _, err := range []error{err1, err2} {
			if err == nil {
				continue
			}
			if strings.Contains(err.Error(), "hunter22") {
				t.Errorf("%s: %v", raw, err)
			}
		}
		if err2 == nil {
			t.Errorf("ProxyUpstream(%q) accepted it", raw)
		}
	}
}
