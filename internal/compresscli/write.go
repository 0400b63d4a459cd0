package compresscli

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// Results are the user's files: a result (or the original's copy under
// --out) takes the original's permission bits, its owner and group where
// the process may set them, and with --keep-mtime its modification time;
// it is written beside its destination and renamed over it, so a reader
// (a web server, a sync client) sees the old file or the new one, never a
// half-written or 0600 one.

// install gives tmp the original's attributes and renames it to dest.
func install(tmp, dest string, orig os.FileInfo, keepMtime bool) error {
	if err := adopt(tmp, orig, keepMtime); err != nil {
		os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, dest); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}

// adopt sets path's mode, owner (where permitted) and, when asked, times
// to the original's.
func adopt(path string, orig os.FileInfo, keepMtime bool) error {
	if orig == nil {
		return nil
	}
	if err := os.Chmod(path, orig.Mode().Perm()); err != nil {
		return err
	}
	if st, ok := orig.Sys().(*syscall.Stat_t); ok {
		// Only root (or the owner, for a group it belongs to) may: a file
		// the user could write keeps being theirs either way.
		if err := os.Lchown(path, int(st.Uid), int(st.Gid)); err != nil && !errors.Is(err, fs.ErrPermission) {
			return err
		}
	}
	if keepMtime {
		return os.Chtimes(path, time.Time{}, orig.ModTime())
	}
	return nil
}

// tempBeside makes a hidden temporary file in dest's folder (made when
// missing), on the same file system so that the rename is atomic.
func tempBeside(dest string) (*os.File, error) {
	if err := os.MkdirAll(filepath.Dir(dest), 0o755); err != nil {
		return nil, err
	}
	return os.CreateTemp(filepath.Dir(dest), "."+filepath.Base(dest)+".*.part")
}

// writeBytes writes data to dest, as a result is written.
func writeBytes(data []byte, dest string, orig os.FileInfo, keepMtime bool) error {
	out, err := tempBeside(dest)
	if err != nil {
		return err
	}
	if _, err := out.Write(data); err != nil {
		out.Close()
		os.Remove(out.Name())
		return err
	}
	if err := out.Close(); err != nil {
		os.Remove(out.Name())
		return err
	}
	return install(out.Name(), dest, orig, keepMtime)
}
