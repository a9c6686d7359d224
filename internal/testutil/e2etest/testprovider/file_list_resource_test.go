package main

import (
	"context"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
)

// listDir is a directory with two files, a log, a subdirectory (with a
// file of its own) and a symbolic link to a file.
func listDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range map[string]string{"b.txt": "bee", "a.txt": "ay \n", "c.log": "", "sub/d.txt": "dee"} {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(dir, "b.txt"), filepath.Join(dir, "link.txt")); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestListFiles(t *testing.T) {
	dir := listDir(t)
	in := func(names ...string) []string {
		var out []string
		for _, n := range names {
			out = append(out, filepath.Join(dir, n))
		}
		return out
	}
	for pattern, want := range map[string][]string{
		"*":     in("a.txt", "b.txt", "c.log"),
		"*.txt": in("a.txt", "b.txt"),
		"x*":    nil,
	} {
		got, err := listFiles(dir, pattern)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want) {
			t.Errorf("listFiles(%q) = %v, want %v", pattern, got, want)
		}
	}
	for _, c := range []struct{ dir, pattern, wantErr string }{
		{"rel/dir", "*", `directory "rel/dir" is not an absolute path`},
		{filepath.Join(dir, "missing"), "*", filepath.Join(dir, "missing")},
		{dir, "[", `pattern "["`},
	} {
		if _, err := listFiles(c.dir, c.pattern); err == nil || !strings.Contains(err.Error(), c.wantErr) {
			t.Errorf("listFiles(%q, %q) = %v, want an error naming %s", c.dir, c.pattern, err, c.wantErr)
		}
	}
}

// listed is one result as Terraform receives it.
type listed struct {
	display  string
	identity map[string]string
	object   map[string]string
}

func listVia(t *testing.T, name, version string, req *tfprotov6.ListResourceRequest) ([]listed, []*tfprotov6.Diagnostic) {
	t.Helper()
	stream, err := protocolServer(t, name, version).ListResource(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	var out []listed
	var diags []*tfprotov6.Diagnostic
	for r := range stream.Results {
		diags = append(diags, r.Diagnostics...)
		if hasError(r.Diagnostics) {
			continue
		}
		out = append(out, listed{r.DisplayName, identityOf(t, r.Identity), decode(t, fileType, r.Resource)})
	}
	return out, diags
}

func TestListResource(t *testing.T) {
	dir := listDir(t)
	a, b, c := filepath.Join(dir, "a.txt"), filepath.Join(dir, "b.txt"), filepath.Join(dir, "c.log")
	config := func(directory string, pattern *string) *tfprotov6.DynamicValue {
		return dynamic(t, listConfigType, map[string]*string{"directory": &directory, "pattern": pattern}, false)
	}
	object := func(name, content string) map[string]string {
		return map[string]string{"id": name, "filename": name, "content": content, "sensitive_content": "<null>"}
	}

	// With resource objects: every regular file, sorted, with its state.
	got, diags := listVia(t, "dwtest", defaultVersion, &tfprotov6.ListResourceRequest{
		TypeName: "dwtest_file", Config: config(dir, nil), IncludeResource: true,
	})
	requireNoDiags(t, diags)
	want := []listed{
		{a, map[string]string{"filename": a}, object(a, "ay \n")},
		{b, map[string]string{"filename": b}, object(b, "bee")},
		{c, map[string]string{"filename": c}, object(c, "")},
	}
	if !slices.EqualFunc(got, want, equalListed) {
		t.Errorf("listed %v, want %v", got, want)
	}

	// Identities only, a pattern, a limit; the trimming version trims
	// content as its Read does.
	got, diags = listVia(t, "dwtest", defaultVersion, &tfprotov6.ListResourceRequest{
		TypeName: "dwtest_file", Config: config(dir, ptr("*.txt")), Limit: 1,
	})
	requireNoDiags(t, diags)
	if want := []listed{{a, map[string]string{"filename": a}, nil}}; !slices.EqualFunc(got, want, equalListed) {
		t.Errorf("listed %v, want %v", got, want)
	}
	got, diags = listVia(t, "kubernetes", trimVersion, &tfprotov6.ListResourceRequest{
		TypeName: "kubernetes_config_map", Config: config(dir, ptr("a.txt")), IncludeResource: true,
	})
	requireNoDiags(t, diags)
	if want := []listed{{a, map[string]string{"filename": a}, object(a, "ay")}}; !slices.EqualFunc(got, want, equalListed) {
		t.Errorf("listed %v, want %v", got, want)
	}

	// A missing directory is an error naming it.
	missing := filepath.Join(dir, "missing")
	got, diags = listVia(t, "dwtest", defaultVersion, &tfprotov6.ListResourceRequest{TypeName: "dwtest_file", Config: config(missing, nil)})
	if len(got) != 0 || len(diags) != 1 || !strings.Contains(diags[0].Detail, missing) {
		t.Errorf("listing a missing directory gave %v, %v; want one error naming %s", got, diags, missing)
	}
}

func equalListed(a, b listed) bool {
	return a.display == b.display && maps.Equal(a.identity, b.identity) && maps.Equal(a.object, b.object)
}
