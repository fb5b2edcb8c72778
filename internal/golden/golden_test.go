package golden

import (
	"os"
	"path/filepath"
	"testing"
)

// fakeT records failures instead of failing the test.
type fakeT struct {
	testing.TB
	failed bool
}

func (f *fakeT) Helper()               {}
func (f *fakeT) Errorf(string, ...any) { f.failed = true }
func (f *fakeT) Fatalf(string, ...any) { f.failed = true }

func TestCheck(t *testing.T) {
	dir := t.TempDir()
	wd, _ := os.Getwd()
	defer os.Chdir(wd)
	os.Chdir(dir)
	os.Mkdir("testdata", 0o755)
	os.WriteFile(filepath.Join("testdata", "x.golden"), []byte("same\n"), 0o644)
	ok := &fakeT{}
	Check(ok, "x.golden", []byte("same\n"))
	bad := &fakeT{}
	Check(bad, "x.golden", []byte("other\n"))
	missing := &fakeT{}
	Check(missing, "none.golden", []byte("x"))
	if ok.failed || !bad.failed || !missing.failed {
		t.Fatalf("same failed %v, different failed %v, missing failed %v", ok.failed, bad.failed, missing.failed)
	}
}
