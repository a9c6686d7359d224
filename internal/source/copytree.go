package source

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// skipName reports whether CopyTree leaves an entry out: Terraform's own
// working data (providers, module copies, possibly state from a user's local
// runs) and git metadata, a directory in a clone and a file in a worktree or
// submodule.
func skipName(name string) bool {
	return name == ".terraform" || name == ".git"
}

// CopyTree copies a local directory tree into dst (regular files with their
// permission bits, directories, and symlinks that stay inside src; skip
// `.terraform` directories and `.git`). Used for local path sources so
// Terraform never writes into the user's directory.
//
// dst is created if missing and must not lie inside src. A symlink whose
// target, with every link resolved, leaves src is an error rather than
// silently dropped, since the copy would otherwise plan different code.
// Absolute links into src are rewritten as relative ones, so the copy never
// points back at the user's directory. Sockets, devices and pipes are
// skipped, as are setuid, setgid and sticky bits.
func CopyTree(src, dst string) error {
	root, err := filepath.Abs(src)
	if err != nil {
		return fmt.Errorf("copy tree: %w", err)
	}
	if root, err = filepath.EvalSymlinks(root); err != nil {
		return fmt.Errorf("copy tree: %w", err)
	}
	info, err := os.Stat(root)
	if err != nil {
		return fmt.Errorf("copy tree: %w", err)
	}
	if !info.IsDir() {
		return fmt.Errorf("copy tree: %s is not a directory", src)
	}
	if dst, err = filepath.Abs(dst); err != nil {
		return fmt.Errorf("copy tree: %w", err)
	}
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return fmt.Errorf("copy tree: %w", err)
	}
	realDst, err := filepath.EvalSymlinks(dst)
	if err != nil {
		return fmt.Errorf("copy tree: %w", err)
	}
	if within(root, realDst) {
		return fmt.Errorf("copy tree: destination %s is inside source %s", dst, src)
	}
	return filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return fmt.Errorf("copy tree: %w", err)
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return fmt.Errorf("copy tree: %w", err)
		}
		if rel != "." && skipName(d.Name()) {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if err := copyEntry(root, path, filepath.Join(dst, rel), d); err != nil {
			return fmt.Errorf("copy tree: %s: %w", filepath.ToSlash(rel), err)
		}
		return nil
	})
}

func copyEntry(root, path, target string, d fs.DirEntry) error {
	info, err := d.Info()
	if err != nil {
		return err
	}
	switch mode := info.Mode(); {
	case mode.IsDir():
		// Owner rwx so the rest of the tree can be written into it.
		if err := os.MkdirAll(target, 0o700); err != nil {
			return err
		}
		return os.Chmod(target, mode.Perm()|0o700)
	case mode.IsRegular():
		return copyFile(path, target, mode.Perm())
	case mode&fs.ModeSymlink != 0:
		link, err := symlinkTarget(root, path)
		if err != nil {
			return err
		}
		return os.Symlink(link, target)
	default:
		return nil
	}
}

// symlinkTarget returns the target to give the copy of the symlink at path,
// or an error if the link leads outside root.
func symlinkTarget(root, path string) (string, error) {
	link, err := os.Readlink(path)
	if err != nil {
		return "", err
	}
	dir := filepath.Dir(path) // a real directory: WalkDir follows no links
	abs := link
	if !filepath.IsAbs(abs) {
		abs = filepath.Join(dir, abs)
	}
	abs = filepath.Clean(abs)
	resolved, err := filepath.EvalSymlinks(path)
	switch {
	case err == nil:
		if !within(root, resolved) {
			return "", fmt.Errorf("symlink to %s points outside the source directory", link)
		}
	case errors.Is(err, fs.ErrNotExist):
		// Dangling: only the lexical target can be checked.
		if !within(root, abs) {
			return "", fmt.Errorf("symlink to %s points outside the source directory", link)
		}
	default:
		return "", err
	}
	if !filepath.IsAbs(link) {
		return link, nil
	}
	return filepath.Rel(dir, abs)
}

func copyFile(src, dst string, perm fs.FileMode) (err error) {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := out.Close(); err == nil {
			err = cerr
		}
	}()
	if _, err := io.Copy(out, in); err != nil {
		return err
	}
	// Chmod, not the OpenFile mode, so that the umask does not apply.
	return out.Chmod(perm)
}
