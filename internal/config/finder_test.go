package config

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// stubFinder answers Roots and Checkout from its fields and records what
// it was asked.
type stubFinder struct {
	roots    []Root
	rootsErr error
	checkErr error
	asked    []string // "roots <tree> <include> <exclude> <prefix>", "checkout <url> <path>", "done"
}

func (f *stubFinder) Roots(_ context.Context, tree string, include, exclude []string, prefix string) ([]Root, error) {
	f.asked = append(f.asked, "roots "+tree+" "+strings.Join(include, ",")+" "+strings.Join(exclude, ",")+" "+prefix)
	return f.roots, f.rootsErr
}

func (f *stubFinder) Checkout(_ context.Context, g GitSource, _, _ string) (string, func(), error) {
	f.asked = append(f.asked, "checkout "+g.URL+" "+g.Path)
	if f.checkErr != nil {
		return "", nil, f.checkErr
	}
	return "/checkout/" + g.Path, func() { f.asked = append(f.asked, "done") }, nil
}

func writeDiscover(t *testing.T, yaml string) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "live", "envs", "prod"), 0o755))
	path := filepath.Join(dir, "driftwatch.yaml")
	require.NoError(t, os.WriteFile(path, []byte(yaml), 0o644))
	return path
}

// Config reads no tree: LoadFile validates discover: entries and leaves
// them unexpanded; LoadFileWith asks its Finder for a local entry's roots
// and makes them workspaces, and the Finder's error is the entry's,
// keyed at its source.
func TestFinderLocal(t *testing.T) {
	path := writeDiscover(t, `discover:
  - name_prefix: acme
    source: {path: live}
    include: ["envs/**"]
    exclude: ["envs/old"]
`)
	cfg, err := LoadFile(path)
	require.NoError(t, err)
	require.Empty(t, cfg.Workspaces, "no Finder: nothing expanded")

	f := &stubFinder{roots: []Root{{Path: "envs/prod", Name: "acme-envs-prod"}}}
	cfg, err = LoadFileWith(path, f)
	require.NoError(t, err)
	live := filepath.Join(filepath.Dir(path), "live")
	require.Equal(t, []string{"roots " + live + " envs/** envs/old acme"}, f.asked)
	require.Len(t, cfg.Workspaces, 1)
	require.Equal(t, "acme-envs-prod", cfg.Workspaces[0].Name)
	require.Equal(t, filepath.Join(live, "envs", "prod"), cfg.Workspaces[0].Source.Path)
	require.Equal(t, &Discovered{Entry: 0, Path: "envs/prod"}, cfg.Workspaces[0].Discovered)

	_, err = LoadFileWith(path, &stubFinder{rootsErr: errors.New("cannot read")})
	require.EqualError(t, err, path+":3: discover[0].source: cannot read")
}

// DiscoverGit checks out with its Finder, finds the roots in the
// checkout, removes the checkout after; a checkout's error is keyed at
// the entry's source.git.
func TestFinderGit(t *testing.T) {
	path := writeDiscover(t, `discover:
  - source:
      git: {url: "https://git.example/r", ref: main, path: live}
`)
	cfg, err := LoadFileWith(path, &stubFinder{})
	require.NoError(t, err)
	require.Empty(t, cfg.Workspaces)

	require.EqualError(t, cfg.DiscoverGit(t.Context(), &stubFinder{checkErr: errors.New("unreachable")}),
		path+":3: discover[0].source.git: unreachable")
	require.Empty(t, cfg.Workspaces, "unchanged on error")

	f := &stubFinder{roots: []Root{{Path: "envs/prod", Name: "envs-prod"}}}
	require.NoError(t, cfg.DiscoverGit(t.Context(), f))
	require.Equal(t, []string{"checkout https://git.example/r live", "roots /checkout/live   ", "done"}, f.asked)
	require.Len(t, cfg.Workspaces, 1)
	require.Equal(t, &GitSource{URL: "https://git.example/r", Ref: "main", Path: "live/envs/prod"}, cfg.Workspaces[0].Source.Git)
}

// Include and exclude globs are path.Match's per segment, "**" any
// number of segments, as the Finder matches them.
func TestCheckPathGlob(t *testing.T) {
	require.Error(t, checkPathGlob("a/["))
	require.EqualError(t, checkPathGlob(""), "empty glob")
	require.NoError(t, checkPathGlob("**/x*"))
}
