package source

import (
	"context"
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
// skipped, as are setuid, setgid and sticky bits. A done ctx stops the walk
// and any file copy, with ctx's error.
func CopyTree(ctx context.Context, src, dst string) error {
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
		if cerr := ctx.Err(); cerr != nil {
			return fmt.Errorf("copy tree: %w", cerr)
		}
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
		if err := copyEntry(ctx, root, path, filepath.Join(dst, rel), d); err != nil {
			return fmt.Errorf("copy tree: %s: %w", filepath.ToSlash(rel), err)
		}
		return nil
	})
}

func copyEntry(ctx context.Context, root, path, target string, d fs.DirEntry) error {
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
		return copyFile(ctx, path, target, mode.Perm())
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
// or an error if the link leads outside root (checkSymlink).
func symlinkTarget(root, path string) (string, error) {
	link, err := checkSymlink(root, path)
	if err != nil || !filepath.IsAbs(link) {
		return link, err
	}
	return filepath.Rel(filepath.Dir(path), filepath.Clean(link))
}

func copyFile(ctx context.Context, src, dst string, perm fs.FileMode) (err error) {
	// Not os.Open: a file swapped for a named pipe since the walk saw it
	// must not block the copy.
	in, err := openRegular(src)
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
	if _, err := io.Copy(out, ctxReader{ctx, in}); err != nil {
		return err
	}
	// Chmod, not the OpenFile mode, so that the umask does not apply.
	return out.Chmod(perm)
}
