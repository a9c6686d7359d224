package engine

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// A drifted literal is accepted and proven by a plan of the changed copy;
// a value from a function is refused; the workspace's own files are not
// touched and no run directory is left.
func TestAcceptProves(t *testing.T) {
	forEachTool(t, func(t *testing.T, e *tfEnv) {
		dir := e.workspace(t, "accept", providers+`
resource "dwtest_file" "a" {
  filename = "@ROOT@/out/a.txt"
  content  = "v1" # set by hand in the console since
}

resource "dwtest_file" "b" {
  filename = "@ROOT@/out/b.txt"
  content  = lower("V1")
}
`)
		e.apply(t, dir)
		before := read(t, filepath.Join(dir, "main.tf"))
		write(t, e.out("a.txt"), "scaled up during the incident")
		write(t, e.out("b.txt"), "also by hand")
		req := e.request(dir)
		out, err := Accept(t.Context(), req, nil)
		require.NoError(t, err)
		require.NotNil(t, out.Change)
		require.Len(t, out.Change.Accepted, 1)
		require.Equal(t, "dwtest_file.a.content: main.tf:11 (literal)", out.Change.Accepted[0].String())
		require.Len(t, out.Change.Refused, 1)
		require.Contains(t, out.Change.Refused[0].String(), "dwtest_file.b.content: the value comes from a function call (lower)")
		// b's drift is still there: the proof is about what was accepted.
		require.True(t, out.Proven, "remaining: %v", out.Remaining)
		require.Contains(t, out.Change.Patch(), `+  content  = "scaled up during the incident" # set by hand in the console since`)
		require.Equal(t, before, read(t, filepath.Join(dir, "main.tf")))
		requireNoSandboxLeft(t, req)
	})
}

// A change that makes something else change is not proven: the answer is
// the proof plan's remaining difference.
func TestAcceptNotProven(t *testing.T) {
	forEachTool(t, func(t *testing.T, e *tfEnv) {
		dir := e.workspace(t, "shared", providers+`
locals {
  text = "v1"
}

resource "dwtest_file" "a" {
  filename = "@ROOT@/out/a.txt"
  content  = local.text
}

resource "dwtest_file" "b" {
  filename = "@ROOT@/out/b.txt"
  content  = local.text
}
`)
		e.apply(t, dir)
		write(t, e.out("a.txt"), "edited by hand")
		out, err := Accept(t.Context(), e.request(dir), []string{"dwtest_file.a"})
		require.NoError(t, err)
		require.Len(t, out.Change.Accepted, 1)
		require.False(t, out.Proven)
		require.Equal(t, []string{"dwtest_file.b: update, which the change brings"}, out.Remaining)
	})
}

// No drift: nothing to accept, said as such.
func TestAcceptNoDrift(t *testing.T) {
	forEachTool(t, func(t *testing.T, e *tfEnv) {
		dir := e.workspace(t, "clean", providers+`
resource "dwtest_file" "a" {
  filename = "@ROOT@/out/a.txt"
  content  = "v1"
}
`)
		e.apply(t, dir)
		_, err := Accept(t.Context(), e.request(dir), nil)
		require.ErrorContains(t, err, "no drift to accept")
		entries, _ := os.ReadDir(filepath.Join(e.root, "runs"))
		for _, en := range entries {
			require.False(t, strings.HasPrefix(en.Name(), "dwr-"))
		}
	})
}
