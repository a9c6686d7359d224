package source

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// Change is the commit that last changed some lines of a file.
type Change struct {
	Commit  string // full SHA
	Author  string
	Email   string
	Time    time.Time // author date
	Subject string    // the message's first line
}

// blameDeepen lists how many commits each successive deepening of a
// shallow cache adds before LastChange fetches the whole history.
var blameDeepen = []int{50, 500}

// LastChange returns the commit, in the history of commit, that last
// changed lines start to end (1-based, inclusive) of path, a file
// relative to g.Path, by `git log -L`. commit is a full SHA the cache
// holds or can fetch (Checkout's answer).
//
// The cache repository is shallow (Checkout fetches one commit deep): a
// line range whose last change lies beyond the boundary would be blamed on
// the boundary commit, so while the answer is a boundary commit the
// history is deepened (fetch --deepen, then --unshallow of every branch
// and tag), under the same lock, environment and credentials as Checkout.
// Errors never hold the token.
func (g Git) LastChange(ctx context.Context, cacheDir, commit, path string, start, end int) (Change, error) {
	return g.lastChange(ctx, cacheDir, commit, path, start, end, nil)
}

func (g Git) lastChange(ctx context.Context, cacheDir, commit, path string, start, end int, observe execObserver) (Change, error) {
	spec, err := g.validate()
	if err != nil {
		return Change{}, err
	}
	c, err := spec.lastChange(ctx, g.CredentialsFile, cacheDir, commit, path, start, end, observe)
	if err != nil {
		// spec.url is free of credentials: validate rejected userinfo.
		return Change{}, fmt.Errorf("git source %s: last change of %s lines %d-%d at %s: %w", spec.url, path, start, end, commit, err)
	}
	return c, nil
}

func (s gitSpec) lastChange(ctx context.Context, credentialsFile, cacheDir, commit, path string, start, end int, observe execObserver) (Change, error) {
	commit = strings.ToLower(commit)
	if !isFullSHA(commit) {
		return Change{}, errors.New("commit must be a full SHA")
	}
	if start < 1 || end < start {
		return Change{}, errors.New("line range must be 1-based and not empty")
	}
	file, err := s.repoFile(path)
	if err != nil {
		return Change{}, err
	}
	c, err := s.openCache(ctx, credentialsFile, cacheDir, observe)
	if err != nil {
		return Change{}, err
	}
	defer c.close()
	r, repo := c.r, c.repo
	if _, err := fetch(ctx, r, repo, commit, true); err != nil {
		return Change{}, err
	}

	for round := 0; ; round++ {
		out, err := r.run(ctx, nil, logLineArgs(repo, commit, file, start, end)...)
		if err != nil {
			return Change{}, err
		}
		c, err := parseChange(out)
		if err != nil {
			return Change{}, err
		}
		boundary, err := shallowBoundary(repo)
		if err != nil {
			return Change{}, err
		}
		if !slices.Contains(boundary, c.Commit) {
			return c, nil
		}
		// The lines may be older than what the cache holds.
		var args []string
		switch {
		case round < len(blameDeepen):
			args = deepenArgs(repo, commit, blameDeepen[round])
		case round == len(blameDeepen):
			args = fetchArgs(repo, "", fetchAll, true)
		default:
			return Change{}, errors.New("history is still shallow after fetching all of it")
		}
		if _, err := r.run(ctx, nil, args...); err != nil {
			if ctx.Err() != nil || errors.Is(err, ErrAuthFailed) || round >= len(blameDeepen) {
				return Change{}, err
			}
			// A server that refuses the commit as a want (protocol v0):
			// straight to the whole history.
			round = len(blameDeepen) - 1
		}
	}
}

// repoFile is path (relative to the module directory s.path) relative to
// the repository root, slash-separated; it must stay inside the
// repository and not read as an option.
func (s gitSpec) repoFile(path string) (string, error) {
	p := filepath.Clean(filepath.Join(s.path, filepath.FromSlash(path)))
	if path == "" || !filepath.IsLocal(p) {
		return "", fmt.Errorf("path %q must be relative and stay inside the repository", path)
	}
	if strings.ContainsFunc(p, func(r rune) bool { return r < ' ' || r == 0x7f }) {
		return "", fmt.Errorf("path %q contains a control character", path)
	}
	return filepath.ToSlash(p), nil
}

// changeFormat prints a commit's fields NUL-separated, before -L's diff.
const changeFormat = "--format=%x00%H%x00%an%x00%ae%x00%aI%x00%s%x00"

// logLineArgs asks for the last commit, in commit's history, that changed
// lines start to end of file.
func logLineArgs(repo, commit, file string, start, end int) []string {
	return []string{
		"--git-dir=" + repo, "log", "-1", "--no-color", changeFormat,
		"-L" + strconv.Itoa(start) + "," + strconv.Itoa(end) + ":" + file,
		"--end-of-options", commit,
	}
}

// deepenArgs adds n commits of history behind the shallow boundary of
// commit's ancestry.
func deepenArgs(repo, commit string, n int) []string {
	return []string{"--git-dir=" + repo, "fetch", "--quiet", "--no-progress", "--no-tags", "--deepen=" + strconv.Itoa(n), "origin", commit}
}

// parseChange reads changeFormat's fields; -L's diff follows them and is
// ignored.
func parseChange(out string) (Change, error) {
	fields := strings.SplitN(out, "\x00", 7)
	if len(fields) < 7 || fields[0] != "" || !isFullSHA(fields[1]) {
		return Change{}, errors.New("git log printed no commit")
	}
	t, err := time.Parse(time.RFC3339, fields[4])
	if err != nil {
		return Change{}, fmt.Errorf("git log: author date %q: %w", fields[4], err)
	}
	return Change{Commit: fields[1], Author: fields[2], Email: fields[3], Time: t, Subject: fields[5]}, nil
}

// shallowBoundary lists the commits whose parents the cache repository
// lacks (none when it has the whole history).
func shallowBoundary(repo string) ([]string, error) {
	b, err := os.ReadFile(filepath.Join(repo, "shallow"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("cache repository: %w", err)
	}
	return strings.Fields(string(b)), nil
}

// BlockLines returns the lines (1-based, inclusive) of the block that
// declares address in src, a .tf file in native syntax named name: a
// resource block for T.N, a data block for data.T.N, an ephemeral block for
// ephemeral.T.N. Module steps (module.M.…) and instance keys are dropped:
// the caller reads the file of the right module (Locator finds it). The
// first such block wins; found is false when there is none.
func BlockLines(name string, src []byte, address string) (start, end int, found bool, err error) {
	steps := splitAddress(address)
	for len(steps) >= 2 && steps[0] == "module" {
		steps = steps[2:]
	}
	kind := "resource"
	if len(steps) == 3 && (steps[0] == "data" || steps[0] == "ephemeral") {
		kind, steps = steps[0], steps[1:]
	}
	if len(steps) != 2 {
		return 0, 0, false, fmt.Errorf("address %q does not name a resource", address)
	}
	f, diags := hclsyntax.ParseConfig(src, name, hcl.InitialPos)
	if err := DiagError(name, diags); err != nil {
		return 0, 0, false, err
	}
	body, ok := f.Body.(*hclsyntax.Body)
	if !ok {
		return 0, 0, false, fmt.Errorf("%s is not in native syntax", name)
	}
	for _, b := range body.Blocks {
		if b.Type == kind && len(b.Labels) == 2 && b.Labels[0] == steps[0] && b.Labels[1] == steps[1] {
			r := b.Range()
			return r.Start.Line, r.End.Line, true, nil
		}
	}
	return 0, 0, false, nil
}
