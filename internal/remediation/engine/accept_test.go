package engine

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/remediation/accept"
	"github.com/driftwatch/driftwatch/internal/terraform/planparse"
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
		out, err := Accept(t.Context(), req, AcceptScope{})
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
		out, err := Accept(t.Context(), e.request(dir), AcceptScope{Addresses: []string{"dwtest_file.a"}})
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
		_, err := Accept(t.Context(), e.request(dir), AcceptScope{})
		require.ErrorContains(t, err, "no drift to accept")
		entries, _ := os.ReadDir(filepath.Join(e.root, "runs"))
		for _, en := range entries {
			require.False(t, strings.HasPrefix(en.Name(), "dwr-"))
		}
	})
}

// A resource deleted outside Terraform: refused unless asked; asked, its
// block becomes a removed block and the proof plan (a forget with
// Terraform, nothing with OpenTofu) proves it. The world is not touched.
func TestAcceptDeletion(t *testing.T) {
	forEachTool(t, func(t *testing.T, e *tfEnv) {
		dir := e.workspace(t, "deleted", providers+`
resource "dwtest_file" "a" {
  filename = "@ROOT@/out/a.txt"
  content  = "v1"
}

resource "dwtest_file" "gone" {
  filename = "@ROOT@/out/gone.txt"
  content  = "v1"
}
`)
		e.apply(t, dir)
		require.NoError(t, os.Remove(e.out("gone.txt")))
		req := e.request(dir)
		out, err := Accept(t.Context(), req, AcceptScope{})
		require.NoError(t, err)
		require.Empty(t, out.Change.Accepted)
		require.Len(t, out.Change.Refused, 1)
		require.Contains(t, out.Change.Refused[0].String(), "dwtest_file.gone: deleted outside Terraform: accepting a deletion is a removed block")

		out, err = Accept(t.Context(), req, AcceptScope{Deletions: true})
		require.NoError(t, err)
		require.Empty(t, out.Change.Refused)
		require.Equal(t, []string{"dwtest_file.gone: main.tf:14 (removed block)"}, []string{out.Change.Accepted[0].String()})
		require.True(t, out.Proven, "remaining: %v", out.Remaining)
		require.Contains(t, out.Change.Patch(), "+removed {\n+  from = dwtest_file.gone\n")
		require.NoFileExists(t, e.out("gone.txt"))
		requireNoSandboxLeft(t, req)
	})
}

// The proof's rule for a removed block: a forget of the accepted
// address, or nothing, proves it; its creation still planned does not,
// nor does a forget of an address accepted otherwise.
func TestRemainingOfARemovedBlock(t *testing.T) {
	first := &planparse.Plan{Changes: []planparse.Change{{Address: "x.gone", Actions: []string{"create"}}, {Address: "x.a", Actions: []string{"update"}}}}
	acc := []accept.Accepted{{Address: "x.gone", Kind: accept.KindRemoved}, {Address: "x.a", Attribute: "content", Kind: accept.KindLiteral}}
	proof := func(cs ...planparse.Change) *planparse.Plan { return &planparse.Plan{Changes: cs} }
	require.Empty(t, remaining(first, proof(), acc))
	require.Empty(t, remaining(first, proof(planparse.Change{Address: "x.gone", Actions: []string{"forget"}}), acc))
	require.Equal(t, []string{"x.gone: still create (the changed code does not produce what exists)"},
		remaining(first, proof(planparse.Change{Address: "x.gone", Actions: []string{"create"}}), acc))
	require.Equal(t, []string{"x.a: still forget (the changed code does not produce what exists)"},
		remaining(first, proof(planparse.Change{Address: "x.a", Actions: []string{"forget"}}), acc))
}
