package discover

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// tree writes files (slash paths relative to a temp dir) and returns the dir.
func tree(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(body), 0o644))
	}
	return dir
}

const backend = "terraform {\n  backend \"local\" {}\n}\n"

func TestFind(t *testing.T) {
	dir := tree(t, map[string]string{
		"envs/prod/network/main.tf":      backend + "module \"vpc\" {\n  source = \"../../../modules/vpc\"\n}\n",
		"envs/prod/app/main.tf":          "provider \"null\" {}\nmodule \"svc\" {\n  source = \"./svc\"\n}\n",
		"envs/prod/app/svc/main.tf":      "terraform {\n  required_providers {}\n}\n", // a module of a root
		"envs/staging/main.tf.json":      `{"terraform": {"backend": {"local": {}}}}`,
		"modules/vpc/main.tf":            "terraform {\n  required_version = \">= 1.5\"\n}\nresource \"null_resource\" \"x\" {}\n",
		"modules/plain/main.tf":          "resource \"null_resource\" \"x\" {}\n", // no root block
		"envs/dev/README.md":             "not terraform",
		"envs/dev/.terraform/x/a.tf":     backend, // hidden dirs are skipped
		"envs/remote/main.tf":            backend + "module \"m\" {\n  source = \"git::https://example.com/m.git\"\n}\n",
		"envs/self/main.tf":              backend + "module \"m\" {\n  source = \"./\"\n}\n", // calls itself: still a root
		"envs/outside/main.tf":           backend + "module \"m\" {\n  source = \"../../../../elsewhere\"\n}\n",
		"Envs_Weird/Name.With.Dots/a.tf": backend,
	})
	roots, err := Find(t.Context(), dir, Options{})
	require.NoError(t, err)
	require.Equal(t, []Root{
		{Path: "Envs_Weird/Name.With.Dots", Name: "envs-weird-name-with-dots"},
		{Path: "envs/outside", Name: "envs-outside", Outside: []string{"../../../../elsewhere"}},
		{Path: "envs/prod/app", Name: "envs-prod-app"},
		{Path: "envs/prod/network", Name: "envs-prod-network", Outside: []string{"modules/vpc"}},
		{Path: "envs/remote", Name: "envs-remote"},
		{Path: "envs/self", Name: "envs-self"},
		{Path: "envs/staging", Name: "envs-staging"},
	}, roots)
}

func TestFindIncludeExcludePrefix(t *testing.T) {
	dir := tree(t, map[string]string{
		"envs/prod/network/main.tf": backend,
		"envs/prod/dns/main.tf":     backend,
		"envs/dev/network/main.tf":  backend,
		"sandbox/main.tf":           backend,
		"main.tf":                   backend,
	})
	roots, err := Find(t.Context(), dir, Options{Include: []string{"envs/**"}, Exclude: []string{"**/dns"}, NamePrefix: "acme"})
	require.NoError(t, err)
	require.Equal(t, []Root{
		{Path: "envs/dev/network", Name: "acme-envs-dev-network"},
		{Path: "envs/prod/network", Name: "acme-envs-prod-network"},
	}, roots)

	roots, err = Find(t.Context(), dir, Options{Include: []string{".", "sandbox"}})
	require.NoError(t, err)
	require.Equal(t, []Root{{Path: ".", Name: "root"}, {Path: "sandbox", Name: "sandbox"}}, roots)
}

func TestFindCollision(t *testing.T) {
	dir := tree(t, map[string]string{
		"envs/prod/main.tf": backend,
		"envs-prod/main.tf": backend,
	})
	_, err := Find(t.Context(), dir, Options{})
	require.EqualError(t, err, `discover in `+dir+`: roots "envs-prod" and "envs/prod" both get the name "envs-prod"`)
}

func TestFindParseError(t *testing.T) {
	dir := tree(t, map[string]string{"envs/prod/main.tf": "terraform {\n"})
	_, err := Find(t.Context(), dir, Options{})
	require.ErrorContains(t, err, "envs/prod/main.tf:")
}

func TestFindSkipsLinks(t *testing.T) {
	outside := tree(t, map[string]string{"secret.tf": backend})
	dir := tree(t, map[string]string{"envs/prod/main.tf": backend, "envs/linked/README": ""})
	require.NoError(t, os.Symlink(filepath.Join(outside, "secret.tf"), filepath.Join(dir, "envs/linked/link.tf")))
	require.NoError(t, os.Symlink(outside, filepath.Join(dir, "envs/dirlink")))
	roots, err := Find(t.Context(), dir, Options{})
	require.NoError(t, err)
	require.Equal(t, []Root{{Path: "envs/prod", Name: "envs-prod"}}, roots) // links are never followed
}

func TestName(t *testing.T) {
	for _, c := range []struct{ prefix, rel, want string }{
		{"", "envs/prod/network", "envs-prod-network"},
		{"", ".", "root"},
		{"Team A", "x", "team-a-x"},
		{"", "__", "x"},
		{"", "a//b--c", "a-b-c"},
	} {
		require.Equal(t, c.want, Name(c.prefix, c.rel), "%q %q", c.prefix, c.rel)
	}
	long := strings.Repeat("segment/", 12)
	n := Name("", long)
	require.Len(t, n, MaxNameLength)
	require.Equal(t, n, Name("", long), "stable")
	require.NotEqual(t, n, Name("", long+"x"), "distinct paths stay distinct")
	require.Regexp(t, `^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$`, n)
}

func TestMatch(t *testing.T) {
	for _, c := range []struct {
		pat, rel string
		want     bool
	}{
		{"envs/**", "envs/prod/network", true},
		{"envs/**", "envs", true},
		{"envs/*", "envs/prod/network", false},
		{"**/network", "envs/prod/network", true},
		{"**/network", "network", true},
		{"envs/*/network", "envs/prod/network", true},
		{"envs/p*", "envs/prod", true},
		{"[", "x", false},
	} {
		require.Equal(t, c.want, Match(c.pat, c.rel), "%q %q", c.pat, c.rel)
	}
}

// A module called through another module still counts: the run needs it.
func TestFindOutsideTransitive(t *testing.T) {
	dir := tree(t, map[string]string{
		"envs/prod/main.tf":   backend + "module \"a\" {\n  source = \"./a\"\n}\n",
		"envs/prod/a/main.tf": "module \"b\" {\n  source = \"../../../shared/b\"\n}\n",
		"shared/b/main.tf":    "module \"a\" {\n  source = \"../../envs/prod/a\"\n}\n", // a cycle ends
		"envs/self/main.tf":   backend + "module \"a\" {\n  source = \"./a\"\n}\n",
		"envs/self/a/main.tf": "resource \"terraform_data\" \"x\" {}\n",
	})
	roots, err := Find(t.Context(), dir, Options{})
	require.NoError(t, err)
	require.Equal(t, []Root{
		{Path: "envs/prod", Name: "envs-prod", Outside: []string{"shared/b"}},
		{Path: "envs/self", Name: "envs-self"},
	}, roots)
}
