package outfile_test

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/spate-dev/spate/internal/outfile"
	"github.com/spate-dev/spate/internal/output/report"
	"github.com/spate-dev/spate/result"
)

// writers are every writer of a whole output file: each goes through
// outfile.Write, and each once replaced /dev/null, a link or a FIFO with a
// regular file, printing "written".
var writers = []struct {
	name  string
	write func(path string) error
}{
	{"outfile", func(p string) error { return outfile.Write(p, []byte("hello\n")) }},
	{"result", func(p string) error { return result.Write(p, &result.Result{Schema: result.Schema}) }},
	{"report", func(p string) error { return report.WriteFile(p, []byte("<html></html>\n")) }},
}

// want returns what write writes to a regular file.
func want(t *testing.T, write func(string) error) []byte {
	t.Helper()
	p := filepath.Join(t.TempDir(), "want")
	if err := write(p); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// noTemporary fails when a temporary file was left in dir.
func noTemporary(t *testing.T, dir string) {
	t.Helper()
	tmps, _ := filepath.Glob(filepath.Join(dir, "*.tmp"))
	if len(tmps) > 0 {
		t.Errorf("left behind: %v", tmps)
	}
}

func TestWriteRegular(t *testing.T) {
	for _, w := range writers {
		t.Run(w.name, func(t *testing.T) {
			body := want(t, w.write)
			dir := t.TempDir()
			// A path that is not there yet, in a directory that is not.
			p := filepath.Join(dir, "new", "out")
			if err := w.write(p); err != nil {
				t.Fatal(err)
			}
			// A file there already is replaced, keeping its permissions.
			q := filepath.Join(dir, "old")
			if err := os.WriteFile(q, []byte("old, and longer than what replaces it\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := w.write(q); err != nil {
				t.Fatal(err)
			}
			for _, path := range []string{p, q} {
				if got, _ := os.ReadFile(path); !bytes.Equal(got, body) {
					t.Errorf("%s holds %q, want %q", path, got, body)
				}
			}
			if fi, err := os.Stat(q); err != nil || fi.Mode().Perm() != 0o600 {
				t.Errorf("the replaced file's mode: %v %v, want 0600", fi.Mode(), err)
			}
			noTemporary(t, dir)
			noTemporary(t, filepath.Join(dir, "new"))
		})
	}
}

// TestWriteLink: a link stays a link, and what it names is written (it
// lost its link and the target was never written).
func TestWriteLink(t *testing.T) {
	for _, w := range writers {
		t.Run(w.name, func(t *testing.T) {
			body := want(t, w.write)
			dir := t.TempDir()
			other := filepath.Join(dir, "elsewhere")
			if err := os.Mkdir(other, 0o755); err != nil {
				t.Fatal(err)
			}
			target := filepath.Join(other, "target")
			if err := os.WriteFile(target, []byte("old"), 0o644); err != nil {
				t.Fatal(err)
			}
			for _, tc := range []struct{ link, to, target string }{
				{"abs", target, target},
				{"rel", "elsewhere/target", target},
				{"chain", "rel", target},
				{"dangling", "elsewhere/not-yet", filepath.Join(other, "not-yet")},
			} {
				link := filepath.Join(dir, tc.link)
				if err := os.Symlink(tc.to, link); err != nil {
					t.Fatal(err)
				}
				if err := w.write(link); err != nil {
					t.Fatalf("%s: %v", tc.link, err)
				}
				if fi, err := os.Lstat(link); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
					t.Errorf("%s: no longer a link: %v %v", tc.link, fi.Mode(), err)
				}
				if got, _ := os.ReadFile(tc.target); !bytes.Equal(got, body) {
					t.Errorf("%s: the target holds %q, want %q", tc.link, got, body)
				}
				noTemporary(t, dir)
				noTemporary(t, other)
			}
		})
	}
}

// TestWriteFIFO: a FIFO's reader gets the file, and the FIFO stays (it was
// replaced by a regular file and its reader got nothing).
func TestWriteFIFO(t *testing.T) {
	for _, w := range writers {
		t.Run(w.name, func(t *testing.T) {
			body := want(t, w.write)
			p := filepath.Join(t.TempDir(), "fifo")
			if err := syscall.Mkfifo(p, 0o644); err != nil {
				t.Skipf("no FIFO: %v", err)
			}
			// The reader opens first, without waiting for a writer, so
			// that the write does not wait for it; the file is small
			// enough for the FIFO's buffer. Had the writer never opened
			// the FIFO, the read would end at once with nothing.
			r, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NONBLOCK, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			if err := w.write(p); err != nil {
				t.Fatal(err)
			}
			got, err := io.ReadAll(r)
			if err != nil && !errors.Is(err, syscall.EAGAIN) {
				t.Fatal(err)
			}
			if !bytes.Equal(got, body) {
				t.Errorf("the reader got %q, want %q", got, body)
			}
			if fi, err := os.Lstat(p); err != nil || fi.Mode()&fs.ModeNamedPipe == 0 {
				t.Errorf("no longer a FIFO: %v %v", fi.Mode(), err)
			}
		})
	}
}

// TestWriteDevice writes to a /dev/null of the test's own (made only as
// root): it stays a device (--out /dev/null as root replaced the
// machine's /dev/null with a regular file).
func TestWriteDevice(t *testing.T) {
	for _, w := range writers {
		t.Run(w.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "null")
			if err := syscall.Mknod(p, syscall.S_IFCHR|0o666, 1<<8|3); err != nil {
				t.Skipf("cannot make a device (not root?): %v", err)
			}
			if f, err := os.OpenFile(p, os.O_WRONLY, 0); err != nil {
				t.Skipf("cannot open a device here (a nodev mount?): %v", err)
			} else {
				f.Close()
			}
			if err := w.write(p); err != nil {
				t.Fatal(err)
			}
			if fi, err := os.Lstat(p); err != nil || fi.Mode()&fs.ModeCharDevice == 0 {
				t.Errorf("no longer a device: %v %v", fi.Mode(), err)
			}
		})
	}
}

func TestWriteRefused(t *testing.T) {
	dir := t.TempDir()
	loop := filepath.Join(dir, "loop")
	if err := os.Symlink("loop", loop); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ path, want string }{
		{dir, "is a directory"},
		{loop, "symbolic links (a loop?)"},
	} {
		err := outfile.Write(tc.path, []byte("x"))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.path, err, tc.want)
		}
	}
	noTemporary(t, dir)
}
