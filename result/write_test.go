package result

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// Writers racing for one path (two shards in one directory) each rename a
// whole file: the path always holds one of them whole, and no temporary
// file is left behind.
func TestWriteConcurrentWritersOnePath(t *testing.T) {
	path := filepath.Join(t.TempDir(), "spate-results", "result.json")
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = Write(path, &Result{Schema: Schema, SpateVersion: "test", Scenarios: []Scenario{{Name: "s"}}})
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("writer %d: %v", i, err)
		}
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var r Result
	if err := json.Unmarshal(b, &r); err != nil || r.Schema != Schema || len(r.Scenarios) != 1 {
		t.Fatalf("read back %v: %+v", err, r)
	}
	if left, _ := filepath.Glob(filepath.Join(filepath.Dir(path), "*.tmp")); len(left) > 0 {
		t.Fatalf("left behind: %v", left)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o644 {
		t.Errorf("mode %v, want 0644", fi.Mode().Perm())
	}
}

// TestReadRecordsFile: a --records file given where a result goes is named
// for what it is (it failed as "invalid character '{' after top-level
// value").
func TestReadRecordsFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "run.rec")
	if err := os.WriteFile(path, []byte("{\"seq\":0}\n{\"seq\":1}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Read(path)
	if err == nil || !strings.Contains(err.Error(), "as a --records file does") || strings.Contains(err.Error(), "invalid character") {
		t.Fatalf("error %v", err)
	}
}
