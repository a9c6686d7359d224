package backend

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/driftwatch/driftwatch/internal/backend/backendpolicy"
	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/source"
)

// Policy selects the checks for one workspace (see backendpolicy.Policy:
// the leaf holds it, with the `backend_policy:` overrides config carries).
// The zero value checks nothing; DefaultPolicy is what a workspace gets
// unless its configuration says otherwise.
type Policy = backendpolicy.Policy

// DefaultPolicy returns the policy of a workspace with no backend_policy:
// every check on, local state not allowed.
func DefaultPolicy() Policy { return backendpolicy.Default() }

// Check reads the effective backend of the root module in dir (the backend
// or cloud block of its *.tf and *.tf.json files, with backendConfig
// entries, "key=value" or a file path relative to dir, applied on top) and
// returns its findings under p. It evaluates literals only (never variables
// or functions) and copies no value into a finding or error. Invalid HCL is
// an error naming the file and line.
//
// Its one network call: for an s3 backend under p.CheckBucketPolicy, with
// credentials in env.Vars, it reads the bucket's policy (within a few
// seconds) and reports one that grants public access. A policy it cannot
// see is no finding and never an error; env.Log says why at debug level.
//
// dir lies in root, the source tree (the checkout or copy), and every file
// is read with source.ReadFile confined to it: a configuration file that is
// a named pipe, a device, a symlink out of root or over
// source.MaxConfigFileSize is an error naming it, never a hang. Only a
// backendConfig file outside root (the operator's own) is read unconfined,
// but as safely otherwise. A done ctx stops the reads.
func Check(ctx context.Context, root, dir string, backendConfig []string, p Policy, env Env) ([]drift.Finding, error) {
	is, err := check(ctx, root, dir, backendConfig, p, env)
	if err != nil {
		return nil, err
	}
	var out []drift.Finding
	for _, i := range is {
		out = append(out, i.finding())
	}
	return out, nil
}

// check is Check before the issues become findings: the I/O steps (read
// the module, read backend_config files, stat local state files) around the
// pure effectiveBackend, mergeConfig and issues, then the bucket policy.
func check(ctx context.Context, root, dir string, backendConfig []string, p Policy, env Env) ([]issue, error) {
	if !p.Enabled {
		return nil, nil
	}
	if root == "" {
		root = dir
	}
	files, err := readModule(ctx, root, dir)
	if err != nil {
		return nil, err
	}
	c, err := effectiveBackend(files)
	if err != nil {
		return nil, err
	}
	c, err = mergeConfig(c, backendConfig, ConfigFileReader(ctx, root, dir))
	if err != nil {
		return nil, err
	}
	var states []stateFile
	if c.typ == "local" {
		states = localStates(dir, c)
	}
	out := issues(c, states, p)
	if c.typ == "s3" && p.CheckBucketPolicy {
		if is, ok := bucketPolicyIssue(ctx, c, env); ok {
			out = append(out, is)
		}
	}
	return out, nil
}

// confinedTo returns root if name lies in it, else the file system root:
// a backend_config file outside the source is the operator's.
func confinedTo(root, name string) string {
	if rel, err := filepath.Rel(root, name); err == nil && filepath.IsLocal(rel) {
		return root
	}
	return string(filepath.Separator)
}

// readModule reads the Terraform configuration files of dir in name order,
// skipping the files Terraform ignores (dot files and editor backups).
func readModule(ctx context.Context, root, dir string) ([]configFile, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("read module: %w", err)
	}
	var out []configFile
	for _, e := range entries {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("read module: %w", err)
		}
		name := e.Name()
		if !strings.HasSuffix(name, ".tf") && !strings.HasSuffix(name, ".tf.json") {
			continue
		}
		if strings.HasPrefix(name, ".") || strings.HasSuffix(name, "~") || (strings.HasPrefix(name, "#") && strings.HasSuffix(name, "#")) {
			continue
		}
		path := filepath.Join(dir, name)
		if fi, err := os.Stat(path); err != nil || fi.IsDir() {
			continue
		}
		src, err := source.ReadFile(ctx, root, path, source.MaxConfigFileSize)
		if err != nil {
			return nil, fmt.Errorf("read module: %w", err)
		}
		out = append(out, configFile{name: name, src: src})
	}
	return out, nil
}

// localStates returns the existing state files of a local backend and their
// modes: the default workspace's file (path, default terraform.tfstate) and
// the other workspaces' files (workspace_dir/NAME/terraform.tfstate,
// default workspace_dir terraform.tfstate.d), each with its .backup. A path
// whose value is not a literal is skipped, and so is a file that cannot be
// stat'ed. Only modes are read, never contents.
func localStates(dir string, c config) []stateFile {
	if runtime.GOOS == "windows" {
		return nil // no Unix permission bits
	}
	abs := func(p string) string {
		if filepath.IsAbs(p) {
			return p
		}
		return filepath.Join(dir, p)
	}
	var out []stateFile
	stat := func(attr, path string) {
		for _, p := range []string{path, path + ".backup"} {
			if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
				out = append(out, stateFile{attr: attr, mode: fi.Mode()})
			}
		}
	}
	if path, pr := c.str("path"); pr != unknown {
		if pr == unset || path == "" {
			path = "terraform.tfstate"
		}
		stat("path", abs(path))
	}
	if wd, pr := c.str("workspace_dir"); pr != unknown {
		if pr == unset || wd == "" {
			wd = "terraform.tfstate.d"
		}
		workspaces, err := os.ReadDir(abs(wd))
		if err != nil {
			return out // no other workspace yet, or unreadable: nothing to stat
		}
		for _, w := range workspaces {
			if w.IsDir() {
				stat("workspace_dir", filepath.Join(abs(wd), w.Name(), "terraform.tfstate"))
			}
		}
	}
	return out
}
