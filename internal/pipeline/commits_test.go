package pipeline

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/source"
	"github.com/driftwatch/driftwatch/internal/terraform"
	"github.com/driftwatch/driftwatch/internal/testutil/gittest"
)

func TestBlock(t *testing.T) {
	root := t.TempDir()
	write := func(name, text string) {
		p := filepath.Join(root, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o700))
		require.NoError(t, os.WriteFile(p, []byte(text), 0o600))
	}
	write("envs/prod/main.tf", "terraform {}\n\nresource \"x\" \"a\" {\n  v = 1\n}\n\nmodule \"m\" {\n  source = \"../../modules/m\"\n}\n\nmodule \"r\" {\n  source = \"git::https://example.com/r.git\"\n}\n")
	write("envs/prod/more.tf", "resource \"x\" \"b\" {\n  count = 2\n}\n")
	write("envs/prod/j.tf.json", `{"resource": {"x": {"j": {}}}}`)
	write("modules/m/main.tf", "\nresource \"x\" \"inner\" {}\n")
	moduleDir := filepath.Join(root, "envs", "prod")
	loc := source.NewLocator()
	for addr, want := range map[string]struct {
		file       string
		start, end int
	}{
		"x.a":              {"main.tf", 3, 5},
		"x.b[1]":           {"more.tf", 1, 3},
		"module.m.x.inner": {"../../modules/m/main.tf", 2, 2},
	} {
		file, start, end, ok := block(t.Context(), loc, root, moduleDir, addr)
		require.True(t, ok, addr)
		require.Equal(t, want.file, file, addr)
		require.Equal(t, []int{want.start, want.end}, []int{start, end}, addr)
	}
	for _, addr := range []string{"x.missing", "module.r.x.remote", "x.j"} {
		_, _, _, ok := block(t.Context(), loc, root, moduleDir, addr)
		require.False(t, ok, addr)
	}
}

func TestCommits(t *testing.T) {
	srv := gittest.NewServer(t, "tok-pipeline-commits")
	url, commit := srv.Publish(t, "infra.git", map[string]string{
		"envs/prod/main.tf":  "resource \"x\" \"a\" {}\n\nmodule \"m\" {\n  source = \"../../modules/m\"\n}\n",
		"modules/m/main.tf":  "resource \"x\" \"inner\" {}\n",
		"envs/prod/other.tf": "# nothing\n",
	})
	creds := filepath.Join(t.TempDir(), "creds")
	require.NoError(t, os.WriteFile(creds, []byte("tok-pipeline-commits\n"), 0o600))
	tg := target("ws")
	tg.Request.Source.Git = &terraform.Git{URL: url, Ref: "main", Path: "envs/prod", CredentialsFile: creds}
	tg.Request.GitCacheDir = t.TempDir()

	fs := []drift.Finding{
		{Kind: drift.KindDrift, Address: "x.a"},
		{Kind: drift.KindPending, Address: "module.m.x.inner"},
		{Kind: drift.KindPending, Address: "x.missing"},
		{Kind: drift.KindPending, Address: "x.a", Ignored: true},
	}
	for range MaxCommits {
		fs = append(fs, drift.Finding{Kind: drift.KindPending, Address: "x.a"})
	}
	var logs bytes.Buffer
	commits(t.Context(), slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})), tg, commit, fs)
	want := &drift.Commit{Hash: commit, Author: "driftwatch", Subject: "initial"}
	got := fs[1].Commit
	require.NotNil(t, got, logs.String())
	require.False(t, got.Time.IsZero())
	got.Time = time.Time{}
	require.Equal(t, want, got, "a local module's block")
	require.Nil(t, fs[0].Commit, "drift has none")
	require.Nil(t, fs[2].Commit, "no block")
	require.Nil(t, fs[3].Commit, "ignored")
	n := 0
	for _, f := range fs[4:] {
		if f.Commit != nil {
			n++
		}
	}
	require.Equal(t, MaxCommits-2, n, "at most MaxCommits pending findings are looked at")
	require.NotContains(t, logs.String(), "tok-pipeline-commits")

	// Not a git source, or no commit: nothing.
	fs = []drift.Finding{{Kind: drift.KindPending, Address: "x.a"}}
	commits(t.Context(), slog.New(slog.DiscardHandler), target("ws"), commit, fs)
	commits(t.Context(), slog.New(slog.DiscardHandler), tg, "", fs)
	require.Nil(t, fs[0].Commit)
}
