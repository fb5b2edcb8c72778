package probe

import (
	"runtime"
	"strings"
	"testing"
)

// TestHostileSuite: a suite file nested too deep or too big is an error
// naming the file and the line, refused before go-yaml allocates for it
// (60 KB of nested brackets took it 1.4 GB, 2 MB of list items 1.2 GB).
func TestHostileSuite(t *testing.T) {
	for _, tc := range []struct{ name, yaml, want string }{
		{"nested brackets", "probes: " + strings.Repeat("[", 30_000) + strings.Repeat("]", 30_000) + "\n", "line 1: the YAML nests collections more than 100 deep"},
		{"nested lists", "probes:\n" + strings.Repeat("- ", 30_000) + "x\n", "line 2: the YAML nests collections more than 100 deep"},
		{"a million list items", "probes: [" + strings.Repeat("1,", 1_000_000) + "1]\n", "line 1: the YAML has more than 100000 keys"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			_, err := ParseSuite([]byte(tc.yaml), "s.yaml")
			runtime.ReadMemStats(&after)
			if err == nil || !strings.Contains(err.Error(), "probe suite s.yaml: "+tc.want) {
				t.Errorf("error %.300v, want %q", err, tc.want)
			}
			if n := after.TotalAlloc - before.TotalAlloc; n > 32<<20 {
				t.Errorf("allocated %d MB", n>>20)
			}
		})
	}
}
