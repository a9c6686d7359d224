package pipeline

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/source"
	"github.com/driftwatch/driftwatch/internal/terraform/sandbox"
)

// MaxCommits bounds how many pending findings of one run get the commit
// that last changed their block.
const MaxCommits = 20

// commits sets, on each pending finding of fs (at most MaxCommits), the
// commit that last changed the block declaring it, in the history of
// commit (the one the run checked out) of t's git source. The block is
// found in a checkout of that commit (source.Locator, then BlockLines):
// a resource of a module called from a local path is followed into it; one
// of a module from elsewhere, or declared in a .tf.json file, gets no
// commit. Nothing here fails the run: what cannot be found is logged.
func commits(ctx context.Context, log *slog.Logger, t Target, commit string, fs []drift.Finding) {
	g := t.Request.Source.Git
	if g == nil || commit == "" {
		return
	}
	var pending []*drift.Finding
	for i := range fs {
		if fs[i].Kind == drift.KindPending && !fs[i].Ignored && len(pending) < MaxCommits {
			pending = append(pending, &fs[i])
		}
	}
	if len(pending) == 0 {
		return
	}
	cache := sandbox.GitCacheDir(t.Request)
	at := source.Git{URL: g.URL, Ref: commit, Path: g.Path, CredentialsFile: g.CredentialsFile}
	tmp, err := os.MkdirTemp("", "driftwatch-commits-")
	if err != nil {
		log.Warn("pending changes' commits: temporary directory", "err", err)
		return
	}
	defer os.RemoveAll(tmp)
	moduleDir, _, err := at.Checkout(ctx, cache, tmp)
	if err != nil {
		log.Warn("pending changes' commits: checkout", "commit", commit, "err", err)
		return
	}
	loc := source.NewLocator()
	for _, f := range pending {
		file, start, end, ok := block(ctx, loc, tmp, moduleDir, f.Address)
		if !ok {
			log.Debug("pending changes' commits: no block found", "address", f.Address)
			continue
		}
		c, err := at.LastChange(ctx, cache, commit, file, start, end)
		if err != nil {
			log.Warn("pending changes' commits: last change", "address", f.Address, "err", err)
			continue
		}
		f.Commit = &drift.Commit{Hash: c.Commit, Author: c.Author, Time: c.Time, Subject: c.Subject}
	}
}

// block is the file (relative to moduleDir, slash-separated; a local
// module may lie beside it) and lines of the block declaring address, read
// from the checkout at root; ok is false when there is no such block in a
// native-syntax file.
func block(ctx context.Context, loc *source.Locator, root, moduleDir, address string) (file string, start, end int, ok bool) {
	l := loc.Locate(ctx, moduleDir, address)
	if !l.Exact {
		return "", 0, 0, false
	}
	inRoot, err := filepath.Rel(root, l.File)
	if err != nil {
		return "", 0, 0, false
	}
	src, err := source.ReadFile(ctx, root, inRoot, source.MaxConfigFileSize)
	if err != nil {
		return "", 0, 0, false
	}
	start, end, found, err := source.BlockLines(l.File, src, address)
	if err != nil || !found {
		return "", 0, 0, false
	}
	rel, err := filepath.Rel(moduleDir, l.File)
	if err != nil {
		return "", 0, 0, false
	}
	return filepath.ToSlash(rel), start, end, true
}
