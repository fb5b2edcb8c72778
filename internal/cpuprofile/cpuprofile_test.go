package cpuprofile

import (
	"os"
	"path/filepath"
	"testing"
)

// TestStart: a profile is written where asked and nothing without a path;
// a path that cannot be created says which flag.
func TestStart(t *testing.T) {
	stop, err := Start("")
	if err != nil {
		t.Fatal(err)
	}
	stop()
	p := filepath.Join(t.TempDir(), "cpu.pprof")
	stop, err = Start(p)
	if err != nil {
		t.Fatal(err)
	}
	stop()
	if fi, err := os.Stat(p); err != nil || fi.Size() == 0 {
		t.Fatalf("profile %v, %v: want a non-empty file", fi, err)
	}
	if _, err := Start(filepath.Join(t.TempDir(), "no", "such", "dir", "p")); err == nil {
		t.Fatal("a profile in a missing directory was accepted")
	}
}
