package compare

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite golden files")

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./compare -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("output differs from %s:\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

func TestFormatsGolden(t *testing.T) {
	m := baseModel
	m.Secs = 60
	b := m.result(7, "v1")
	m.P99Factor = 1.1
	n := m.result(8, "v2")
	rep, err := Compare(Sides{Base: []Input{{"base.json", b}}, New: []Input{{"new.json", n}}}, Config{Seed: 3, Resamples: 500})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range Formats {
		var buf bytes.Buffer
		if err := Write(&buf, rep, f); err != nil {
			t.Fatal(err)
		}
		ext := map[string]string{"table": "txt", "markdown": "md", "json": "json"}[f]
		golden(t, "compare."+ext, buf.Bytes())
	}
	if err := Write(&bytes.Buffer{}, rep, "xml"); err == nil {
		t.Error("format xml accepted")
	}
}
