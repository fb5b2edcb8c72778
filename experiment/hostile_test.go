package experiment

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// hostileYAML are YAML files that took go-yaml memory out of all
// proportion to their size: the square of the nesting depth, or hundreds
// of bytes a node.
var hostileYAML = []struct{ name, yaml, want string }{
	// 60 KB: 1.4 GB.
	{"nested brackets", "stages: " + strings.Repeat("[", 30_000) + strings.Repeat("]", 30_000) + "\n", "line 1: the YAML nests collections more than 100 deep"},
	{"nested lists", "stages:\n" + strings.Repeat("- ", 30_000) + "x\n", "line 2: the YAML nests collections more than 100 deep"},
	{"unclosed brackets", "stages: " + strings.Repeat("{a: [", 15_000) + "\n", "line 1: the YAML nests collections more than 100 deep"},
	// 2 MB: 1.2 GB.
	{"a million list items", "stages: [" + strings.Repeat("1,", 1_000_000) + "1]\n", "line 1: the YAML has more than 100000 keys, values and list items"},
}

// allocated returns the bytes f allocates.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestHostileYAML: an experiment or workload file nested too deep or too
// big is an error naming the file and the line, refused before go-yaml
// allocates for it.
func TestHostileYAML(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range hostileYAML {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(dir, "x.yaml")
			if err := os.WriteFile(p, []byte(tc.yaml), 0o644); err != nil {
				t.Fatal(err)
			}
			for name, load := range map[string]func() error{
				"experiment": func() error { _, err := Load(p); return err },
				"workload":   func() error { _, err := LoadWorkload(p); return err },
			} {
				var err error
				n := allocated(func() { err = load() })
				if err == nil || !strings.Contains(err.Error(), p+": "+tc.want) {
					t.Errorf("%s: error %.300v, want %s: %s", name, err, p, tc.want)
				}
				// Reading the file whole takes a few times its size.
				if n > 32<<20 {
					t.Errorf("%s: allocated %d MB", name, n>>20)
				}
			}
		})
	}
}
