// Package outfile writes a whole output file (a result, a report, a cache)
// so that a reader never sees half of it, without replacing what is not a
// regular file: --out /dev/null, a symbolic link or a FIFO stay what they
// are.
//
// Stage: outputs. The data flow: experiment → workload → schedule → engine
// → client → record → metrics → verdict → outputs (docs/design.md).
package outfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// maxLinks bounds the symbolic links followed to the file written, as the
// kernel bounds them (ELOOP).
const maxLinks = 40

// Write writes b to path, creating its directory:
//
//   - a regular file, or a path where nothing is yet, is written through a
//     temporary file of its own beside it (two processes writing one path,
//     two shards in one directory, each rename a whole file) renamed over
//     it, so a reader sees the old file or the new one whole; an existing
//     file keeps its permissions;
//   - a symbolic link is followed: its target is written so, and the link
//     stays;
//   - anything else (a device such as /dev/null, a FIFO) is opened and
//     written to as it is: renaming over it would replace it with a
//     regular file, and a FIFO's reader would get nothing;
//   - a directory is an error.
//
// Errors name the file they concern (the target of a link, the temporary
// file); the caller says what it was writing.
func Write(path string, b []byte) error {
	target, err := Resolve(path)
	if err != nil {
		return err
	}
	fi, err := os.Stat(target)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if dir := filepath.Dir(target); dir != "" {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return err
			}
		}
		err = replace(target, b, 0o644)
	case err != nil:
	case fi.IsDir():
		err = fmt.Errorf("%s is a directory: name a file", target)
	case fi.Mode().IsRegular():
		err = replace(target, b, fi.Mode().Perm())
	default:
		err = writeThrough(target, b)
	}
	return err
}

// Resolve returns the file Write writes for path: path with its symbolic
// links followed to what they name, which need not exist yet (a dangling
// link is written through to its target).
func Resolve(path string) (string, error) {
	for range maxLinks {
		fi, err := os.Lstat(path)
		if err != nil || fi.Mode()&fs.ModeSymlink == 0 {
			return path, nil // a missing path is created; other errors come later
		}
		to, err := os.Readlink(path)
		if err != nil {
			return "", err
		}
		if !filepath.IsAbs(to) {
			to = filepath.Join(filepath.Dir(path), to)
		}
		path = to
	}
	return "", fmt.Errorf("%s: more than %d symbolic links (a loop?)", path, maxLinks)
}

// replace writes b to a temporary file beside path and renames it over
// path; the temporary file is never left behind.
func replace(path string, b []byte, perm fs.FileMode) error {
	f, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.Write(b)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp, perm)
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
	}
	return err
}

// writeThrough writes b to a file that is not a regular one (a device, a
// FIFO) in place. Opening a FIFO waits for its reader.
func writeThrough(path string, b []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
