package capacity

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/spate-dev/spate/result"
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
		t.Fatalf("%v (run go test ./capacity -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("output differs from %s:\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

func TestFormatGolden(t *testing.T) {
	var buf bytes.Buffer
	s := &server{Knee: 7.3, MaxRate: 7.6}
	n := 0
	trial := func(ctx context.Context, l Load) (*result.Scenario, error) {
		sc, err := s.trial(ctx, l)
		n++
		if err == nil {
			err = WriteTrial(&buf, n, l, sc, Criteria{})
		}
		return sc, err
	}
	out, err := Search(context.Background(), trial, Config{MinRate: 1, MaxRate: 100, Repeats: 1})
	if err != nil {
		t.Fatal(err)
	}
	buf.WriteString("\n")
	if err := WriteSummary(&buf, out.Capacity); err != nil {
		t.Fatal(err)
	}
	buf.WriteString("\n")
	sw, err := Sweep(context.Background(), (&server{Knee: 15, Closed: 20}).trial, SweepConfig{Concurrency: 8, Repeats: 3})
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteSummary(&buf, sw.Capacity); err != nil {
		t.Fatal(err)
	}
	golden(t, "summary.txt", buf.Bytes())
}
