package sandbox

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/driftwatch/driftwatch/internal/terraform"
)

// KeptDirPrefix names a workspace's kept directory (KeptDir), beside the
// run directories: SweepOwnedDirs removes a daemon's at its start, as it
// removes its run directories.
const KeptDirPrefix = "dwk-"

// The kept state's entries: Terraform's working directory and the lock
// file as init left them, and the key they were made under.
const (
	keptTerraform = ".terraform"
	keptLockFile  = ".terraform.lock.hcl"
	keptKeyFile   = "key"
	keptLockName  = ".lock"
)

// keptMaxAge bounds how long a kept state is reused: at least once a day
// a run inits afresh, so that what init resolves beyond the key (a remote
// module or provider version range) catches up.
const keptMaxAge = 24 * time.Hour

// KeptDir is the directory a daemon (owner) keeps workspace's initialised
// state in between its runs: under base (the OS temp dir if empty), named
// KeptDirPrefix, the owner's tag and a hash of the workspace's name.
func KeptDir(base, owner, workspace string) string {
	if base == "" {
		base = os.TempDir()
	}
	sum := sha256.Sum256([]byte(workspace))
	return filepath.Join(base, KeptDirPrefix+ownerTag(owner)+hex.EncodeToString(sum[:8]))
}

// Kept is a workspace's initialised working state kept between its runs:
// the `.terraform` directory and the lock file that `init` left in the
// run's copy of the module, and the key (KeptKey) they were made under.
// A run whose key is the same moves them into its fresh copy and skips
// init (Restore); a successful run moves them back (Save). Anything else
// starts from a fresh init: a different key, a failed run (Discard), or a
// kept state that is incomplete.
//
// The directory is 0700 and holds what init wrote (the backend's
// configuration among it), like a run directory; its lock file makes it
// one run's at a time: a run that finds it taken runs without it.
type Kept struct {
	dir  string
	lock *os.File
}

// OpenKept takes dir (made 0700 if missing) for one run. It fails if
// another run holds it or the directory cannot be made.
func OpenKept(dir string) (*Kept, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(filepath.Join(dir, keptLockName), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	// A lock can outlive its run for a moment: a process forked meanwhile
	// holds the lock file's description until it execs. So a taken lock
	// is tried again for a little while before the run goes without it.
	deadline := time.Now().Add(keptLockWait)
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return &Kept{dir: dir, lock: f}, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) || time.Now().After(deadline) {
			f.Close()
			return nil, fmt.Errorf("kept directory in use by another run: %w", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// keptLockWait is how long OpenKept tries a taken lock again.
const keptLockWait = 2 * time.Second

// Close releases the directory for the next run.
func (k *Kept) Close() {
	if k != nil && k.lock != nil {
		k.lock.Close()
		k.lock = nil
	}
}

// Restore moves the kept state into moduleDir if it was made under key,
// by an init less than a day old (keptMaxAge), and is complete; it
// reports whether it did, and when that init ran (for Save). On any
// failure midway it removes what it moved, so that init starts clean.
func (k *Kept) Restore(key, moduleDir string) (initAt time.Time, ok bool) {
	keyFile := filepath.Join(k.dir, keptKeyFile)
	stored, err := os.ReadFile(keyFile)
	if err != nil {
		return time.Time{}, false
	}
	storedKey, at, _ := strings.Cut(string(stored), "\n")
	sec, err := strconv.ParseInt(at, 10, 64)
	initAt = time.Unix(sec, 0)
	if err != nil || storedKey != key || time.Since(initAt) > keptMaxAge {
		return time.Time{}, false
	}
	// The key is consumed: the state is the run's now, and comes back
	// only with a successful run's Save.
	_ = os.Remove(keyFile)
	if !keptComplete(filepath.Join(k.dir, keptTerraform)) {
		k.Discard()
		return time.Time{}, false
	}
	for _, name := range []string{keptTerraform, keptLockFile} {
		src, dst := filepath.Join(k.dir, name), filepath.Join(moduleDir, name)
		if _, err := os.Lstat(src); name == keptLockFile && errors.Is(err, fs.ErrNotExist) {
			continue // init wrote none (no provider): the copy's stays
		}
		if err := os.RemoveAll(dst); err != nil {
			return time.Time{}, k.undo(moduleDir)
		}
		if err := os.Rename(src, dst); err != nil {
			return time.Time{}, k.undo(moduleDir)
		}
	}
	return initAt, true
}

// undo removes a partly restored state from moduleDir and the keep dir.
func (k *Kept) undo(moduleDir string) bool {
	_ = os.RemoveAll(filepath.Join(moduleDir, keptTerraform))
	k.Discard()
	return false
}

// keptComplete checks a kept .terraform the cheap way before a run relies
// on it: it is a directory, and every provider it installed is still
// there (a link into the plugin cache resolves).
func keptComplete(dir string) bool {
	fi, err := os.Stat(dir)
	if err != nil || !fi.IsDir() {
		return false
	}
	ok := true
	_ = filepath.WalkDir(filepath.Join(dir, "providers"), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				ok = false
			}
			return nil
		}
		if d.Type()&fs.ModeSymlink != 0 {
			if _, err := os.Stat(p); err != nil {
				ok = false
				return filepath.SkipAll
			}
		}
		return nil
	})
	return ok
}

// Save moves moduleDir's .terraform and lock file into the keep dir and
// records key and the time of the init that made them (initAt), last, so
// that a state is never found half saved. Without a .terraform (nothing
// to keep) it keeps nothing.
func (k *Kept) Save(key, moduleDir string, initAt time.Time) error {
	k.Discard()
	if _, err := os.Stat(filepath.Join(moduleDir, keptTerraform)); err != nil {
		return nil
	}
	for _, name := range []string{keptTerraform, keptLockFile} {
		if err := os.Rename(filepath.Join(moduleDir, name), filepath.Join(k.dir, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			k.Discard()
			return err
		}
	}
	tmp := filepath.Join(k.dir, keptKeyFile+".tmp")
	if err := os.WriteFile(tmp, []byte(key+"\n"+strconv.FormatInt(initAt.Unix(), 10)), 0o600); err != nil {
		k.Discard()
		return err
	}
	return os.Rename(tmp, filepath.Join(k.dir, keptKeyFile))
}

// Discard empties the keep dir: the next run starts from a fresh init.
func (k *Kept) Discard() {
	for _, name := range []string{keptKeyFile, keptKeyFile + ".tmp", keptTerraform, keptLockFile} {
		_ = os.RemoveAll(filepath.Join(k.dir, name))
	}
}

// KeptKey is what a kept state was made under: a run may reuse it only if
// all of it is the same. It hashes the source (commit for a git source,
// else every file of the copied tree at srcDir: names, modes, contents,
// link targets; the lock file among them), the Terraform binary (path,
// size, modification time), the Terraform workspace, the backend config
// arguments, the CLI config (path and content), the plugin cache dir and
// the workspace's env. Secret values enter only as part of the hash.
func KeptKey(ctx context.Context, req terraform.Request, bin, commit, srcDir string) (string, error) {
	h := sha256.New()
	field := func(name, v string) { fmt.Fprintf(h, "%s=%d:%s\n", name, len(v), v) }
	field("format", "1")
	if commit != "" {
		field("commit", commit)
		if g := req.Source.Git; g != nil {
			field("path", g.Path)
		}
	} else {
		tree, err := treeHash(ctx, srcDir)
		if err != nil {
			return "", err
		}
		field("tree", tree)
	}
	fi, err := os.Stat(bin)
	if err != nil {
		return "", err
	}
	field("binary", fmt.Sprintf("%s %d %d", bin, fi.Size(), fi.ModTime().UnixNano()))
	field("workspace", req.TFWorkspace)
	for _, b := range req.BackendConfig {
		field("backend-config", b)
	}
	cli := req.CLIConfigFile
	if cli == "" {
		cli = os.Getenv("TF_CLI_CONFIG_FILE")
	}
	field("cli-config", cli)
	if cli != "" {
		sum, err := fileHash(cli)
		if err != nil {
			return "", err
		}
		field("cli-config-content", sum)
	}
	field("plugin-cache", req.PluginCacheDir)
	keys := make([]string, 0, len(req.Env))
	for k := range req.Env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		field("env", k+"="+req.Env[k])
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// treeHash hashes every entry under root in lexical order: its relative
// path, type and permission bits, and a file's content or a link's target.
func treeHash(ctx context.Context, root string) (string, error) {
	h := sha256.New()
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if rel != "." && (d.Name() == keptTerraform || d.Name() == ".git") {
			if d.IsDir() {
				return filepath.SkipDir
			}
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		fmt.Fprintf(h, "%q %o ", filepath.ToSlash(rel), info.Mode())
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			fmt.Fprintf(h, "-> %q\n", target)
		case d.Type().IsRegular():
			f, err := os.Open(p)
			if err != nil {
				return err
			}
			n, err := io.Copy(h, f)
			f.Close()
			if err != nil {
				return err
			}
			fmt.Fprintf(h, " %d\n", n)
		default:
			_, _ = io.WriteString(h, "\n")
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

func fileHash(name string) (string, error) {
	f, err := os.Open(name)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// InitNeeded reports whether a plan's failure reason says that the
// working directory needs `init` again: what a kept state that no longer
// fits (a provider or module gone, a backend changed) makes Terraform
// say. The run then retries once from a fresh init.
func InitNeeded(reason string) bool {
	r := strings.ToLower(reason)
	for _, s := range []string{
		"terraform init", "tofu init", "please run init", "required plugins are not installed",
		"module not installed", "backend initialization required", "inconsistent dependency lock file",
		"failed to load plugin schemas", "unavailable provider", "missing or corrupted provider plugins",
		"could not load plugin", "backend configuration changed",
	} {
		if strings.Contains(r, s) {
			return true
		}
	}
	return false
}
