package source

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
)

// MaxConfigFileSize bounds every file of a workspace's source that
// driftwatch reads itself (.tf, .tf.json, .tfvars, backend config files,
// the lock file): far above any real one, far below what could exhaust the
// daemon's memory.
const MaxConfigFileSize int64 = 4 << 20

var (
	// ErrNotRegular is wrapped by ReadFile errors for a path that is, or
	// leads to, anything but a regular file: a named pipe (whose open would
	// block), a device (/dev/zero never ends), a socket or a directory.
	ErrNotRegular = errors.New("not a regular file")
	// ErrTooLarge is wrapped by ReadFile errors for a file over the limit.
	ErrTooLarge = errors.New("file too large")
	// ErrEscapes is wrapped by errors for a path or symlink that leads
	// outside the source directory (the checkout or the copy).
	ErrEscapes = errors.New("outside the source directory")
)

// ReadFile reads the file name (absolute, or relative to root) of the
// source tree rooted at root, at most limit bytes of it, under ctx. It is
// the one way driftwatch reads a workspace's files itself, since a source
// is not trusted:
//
//   - name must lie inside root, and with every symlink resolved still
//     lead inside root (both checked without opening anything);
//   - it must be a regular file (a symlink counts if its target is one), so
//     a named pipe cannot block the run and /dev/zero cannot fill memory;
//   - it is opened beneath root (os.Root: every component with O_NOFOLLOW,
//     links resolved only inside root) with O_NONBLOCK, then checked again
//     with fstat, so a file swapped for a pipe or a link in the meantime
//     cannot hang the run either;
//   - over limit bytes it is an error, and a done ctx stops the read.
//
// Errors are *fs.PathError values naming name as given (so errors.Is works
// with fs.ErrNotExist, ErrNotRegular, ErrTooLarge, ErrEscapes and ctx's
// error), and never carry the file's content.
func ReadFile(ctx context.Context, root, name string, limit int64) ([]byte, error) {
	b, err := readFile(ctx, root, name, limit)
	if err != nil {
		return nil, &fs.PathError{Op: "read", Path: name, Err: err}
	}
	return b, nil
}

func readFile(ctx context.Context, root, name string, limit int64) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if root == "" {
		return nil, errors.New("source root is required")
	}
	root, err := filepath.Abs(root)
	if err != nil {
		return nil, err
	}
	path := name
	if !filepath.IsAbs(path) {
		path = filepath.Join(root, path)
	}
	path = filepath.Clean(path)
	if !within(root, path) {
		return nil, fmt.Errorf("is %w", ErrEscapes)
	}

	// Lstat, EvalSymlinks and Readlink never open the file: a pipe found
	// here has blocked nothing.
	info, err := os.Lstat(path)
	if err != nil {
		return nil, unwrapPathError(err)
	}
	isLink := info.Mode()&fs.ModeSymlink != 0
	if !isLink && !info.Mode().IsRegular() {
		return nil, notRegular(info.Mode())
	}
	realRoot, err := filepath.EvalSymlinks(root)
	if err != nil {
		return nil, unwrapPathError(err)
	}
	resolved, err := filepath.EvalSymlinks(path)
	if err != nil {
		return nil, unwrapPathError(err)
	}
	if !within(realRoot, resolved) {
		if isLink {
			link, _ := os.Readlink(path)
			return nil, fmt.Errorf("symlink to %s points %w", quoteLink(link), ErrEscapes)
		}
		return nil, fmt.Errorf("resolves %w", ErrEscapes)
	}
	if info, err = os.Lstat(resolved); err != nil {
		return nil, unwrapPathError(err)
	}
	if err := checkRegular(info, limit); err != nil {
		return nil, err
	}

	rel, err := filepath.Rel(realRoot, resolved)
	if err != nil {
		return nil, err
	}
	f, info, err := openBeneath(realRoot, rel, limit)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var buf bytes.Buffer
	buf.Grow(int(info.Size()) + 1)
	// One byte past the limit tells a file that grew since fstat.
	if _, err := buf.ReadFrom(io.LimitReader(ctxReader{ctx, f}, limit+1)); err != nil {
		return nil, err
	}
	if int64(buf.Len()) > limit {
		return nil, tooLarge(limit)
	}
	return buf.Bytes(), nil
}

// openBeneath opens rel beneath root (os.Root: no component may lead
// outside root) without blocking, and checks with fstat that it is a
// regular file of at most limit bytes. Whatever the checks before it saw, a
// named pipe or a device swapped in since is refused here, unopened for
// reading.
func openBeneath(root, rel string, limit int64) (*os.File, fs.FileInfo, error) {
	r, err := os.OpenRoot(root)
	if err != nil {
		return nil, nil, unwrapPathError(err)
	}
	defer r.Close()
	f, err := r.OpenFile(rel, os.O_RDONLY|openFlags, 0)
	if err != nil {
		return nil, nil, unwrapPathError(err)
	}
	info, err := f.Stat()
	if err == nil {
		err = checkRegular(info, limit)
	}
	if err != nil {
		f.Close()
		return nil, nil, unwrapPathError(err)
	}
	return f, info, nil
}

// checkRegular fails for anything but a regular file of at most limit
// bytes.
func checkRegular(info fs.FileInfo, limit int64) error {
	if !info.Mode().IsRegular() {
		return notRegular(info.Mode())
	}
	if info.Size() > limit {
		return tooLarge(limit)
	}
	return nil
}

func tooLarge(limit int64) error {
	return fmt.Errorf("%w: over the limit of %d bytes", ErrTooLarge, limit)
}

// notRegular names the kind of a file that is not a regular one.
func notRegular(mode fs.FileMode) error {
	kind := "mode " + mode.String()
	switch t := mode.Type(); {
	case t&fs.ModeNamedPipe != 0:
		kind = "named pipe"
	case t&fs.ModeCharDevice != 0:
		kind = "character device"
	case t&fs.ModeDevice != 0:
		kind = "device"
	case t&fs.ModeSocket != 0:
		kind = "socket"
	case t&fs.ModeDir != 0:
		kind = "directory"
	case t&fs.ModeSymlink != 0:
		kind = "symlink"
	}
	return fmt.Errorf("%w (%s)", ErrNotRegular, kind)
}

// unwrapPathError drops the path of a *fs.PathError (ReadFile names the
// file once, as its caller gave it) and keeps its cause.
func unwrapPathError(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// ctxReader stops reading once ctx is done.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

// checkSymlink returns the target of the symlink at path, or an error
// wrapping ErrEscapes if the target, with every link resolved (lexically
// when it dangles), leaves root. root must be absolute and free of
// symlinks, and the directory of path a real directory under it.
func checkSymlink(root, path string) (string, error) {
	link, err := os.Readlink(path)
	if err != nil {
		return "", err
	}
	abs := link
	if !filepath.IsAbs(abs) {
		abs = filepath.Join(filepath.Dir(path), abs)
	}
	abs = filepath.Clean(abs)
	resolved, err := filepath.EvalSymlinks(path)
	switch {
	case err == nil:
		if !within(root, resolved) {
			return "", fmt.Errorf("symlink to %s points %w", quoteLink(link), ErrEscapes)
		}
	case errors.Is(err, fs.ErrNotExist):
		// Dangling: only the lexical target can be checked.
		if !within(root, abs) {
			return "", fmt.Errorf("symlink to %s points %w", quoteLink(link), ErrEscapes)
		}
	default:
		return "", err
	}
	return link, nil
}

// checkTree walks the tree at root under ctx and fails, naming the entry,
// on the first thing a run must not meet: a symlink whose target is
// absolute or, with every link resolved, leaves root (to /dev/zero, to a
// named pipe, to /etc/passwd), or anything but a directory, a regular file
// or a symlink. A git checkout goes through it: git can store symlinks
// anywhere, and it is the daemon itself that later reads .tf files.
func checkTree(ctx context.Context, root string) error {
	realRoot, err := filepath.EvalSymlinks(root)
	if err != nil {
		return err
	}
	return filepath.WalkDir(realRoot, func(path string, d fs.DirEntry, err error) error {
		if cerr := ctx.Err(); cerr != nil {
			return cerr
		}
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(realRoot, path)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		switch t := d.Type(); {
		case t.IsDir(), t.IsRegular():
			return nil
		case t&fs.ModeSymlink != 0:
			link, err := checkSymlink(realRoot, path)
			if err == nil && filepath.IsAbs(link) {
				err = fmt.Errorf("symlink to %s points %w", quoteLink(link), ErrEscapes)
			}
			if err != nil {
				return fmt.Errorf("%s: %w", rel, err)
			}
			return nil
		default:
			return fmt.Errorf("%s: %w", rel, notRegular(t))
		}
	})
}

// quoteLink returns a symlink target for an error, quoted only when it
// holds characters that would garble a one-line message.
func quoteLink(link string) string {
	if q := strconv.Quote(link); q[1:len(q)-1] != link {
		return q
	}
	return link
}

// openRegular opens path, which must not be a symlink, for reading
// without blocking on a named pipe, and fails unless it is a regular file.
func openRegular(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|openFlags, 0)
	if err != nil {
		return nil, err
	}
	info, err := f.Stat()
	if err == nil && !info.Mode().IsRegular() {
		err = &fs.PathError{Op: "open", Path: path, Err: notRegular(info.Mode())}
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}
