package main

import (
	"context"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
)

// Every file resource has the identity {filename}, required for import;
// every name lists its file resource.
func TestIdentityAndListSchemas(t *testing.T) {
	ctx := context.Background()
	for name, types := range map[string][]string{
		"dwtest":     {"dwtest_file", "dwtest_revision_file"},
		"kubernetes": {"kubernetes_config_map"},
	} {
		s := protocolServer(t, name, defaultVersion)
		ids, err := s.GetResourceIdentitySchemas(ctx, &tfprotov6.GetResourceIdentitySchemasRequest{})
		if err != nil {
			t.Fatal(err)
		}
		requireNoDiags(t, ids.Diagnostics)
		if len(ids.IdentitySchemas) != len(types) {
			t.Errorf("%s: identity schemas for %d types, want %v", name, len(ids.IdentitySchemas), types)
		}
		for _, typ := range types {
			is := ids.IdentitySchemas[typ]
			if is == nil || len(is.IdentityAttributes) != 1 {
				t.Fatalf("%s: identity schema of %s = %+v, want {filename}", name, typ, is)
			}
			a := is.IdentityAttributes[0]
			if a.Name != "filename" || !a.Type.Is(tftypes.String) || !a.RequiredForImport {
				t.Errorf("%s: identity attribute %+v, want filename, a string required for import", typ, a)
			}
		}
		schemas, err := s.GetProviderSchema(ctx, &tfprotov6.GetProviderSchemaRequest{})
		if err != nil {
			t.Fatal(err)
		}
		requireNoDiags(t, schemas.Diagnostics)
		if len(schemas.ListResourceSchemas) != 1 || schemas.ListResourceSchemas[types[0]] == nil {
			t.Errorf("%s: list resources %v, want %s only", name, slices.Collect(maps.Keys(schemas.ListResourceSchemas)), types[0])
		}
	}
}

func TestCreateSetsIdentity(t *testing.T) {
	ctx := context.Background()
	name := filepath.Join(t.TempDir(), "a.txt")
	obj := map[string]*string{"id": ptr(name), "filename": ptr(name), "content": ptr("hello")}
	resp, err := protocolServer(t, "dwtest", defaultVersion).ApplyResourceChange(ctx, &tfprotov6.ApplyResourceChangeRequest{
		TypeName:     "dwtest_file",
		PriorState:   dynamic(t, fileType, nil, true),
		PlannedState: dynamic(t, fileType, obj, false),
		Config:       dynamic(t, fileType, map[string]*string{"filename": ptr(name), "content": ptr("hello")}, false),
	})
	if err != nil {
		t.Fatal(err)
	}
	requireNoDiags(t, resp.Diagnostics)
	if got := identityOf(t, resp.NewIdentity); got["filename"] != name {
		t.Errorf("identity after create = %v, want filename %s", got, name)
	}
}

// A state written before identities (or by a Terraform that never asks for
// them) gets one at its next Read, also when the file is gone.
func TestReadSetsIdentity(t *testing.T) {
	ctx := context.Background()
	name := filepath.Join(t.TempDir(), "a.txt")
	if err := os.WriteFile(name, []byte("edited\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s := protocolServer(t, "dwtest", defaultVersion)
	read := func() *tfprotov6.ReadResourceResponse {
		resp, err := s.ReadResource(ctx, &tfprotov6.ReadResourceRequest{
			TypeName:     "dwtest_file",
			CurrentState: dynamic(t, fileType, map[string]*string{"id": ptr(name), "filename": ptr(name), "content": ptr("hello")}, false),
		})
		if err != nil {
			t.Fatal(err)
		}
		requireNoDiags(t, resp.Diagnostics)
		return resp
	}
	resp := read()
	if got := decode(t, fileType, resp.NewState); got["content"] != "edited\n" {
		t.Errorf("state after read = %v, want the file's content", got)
	}
	if got := identityOf(t, resp.NewIdentity); got["filename"] != name {
		t.Errorf("identity after read = %v, want filename %s", got, name)
	}

	if err := os.Remove(name); err != nil {
		t.Fatal(err)
	}
	if got := decode(t, fileType, read().NewState); got != nil {
		t.Errorf("state after the file went = %v, want none", got)
	}
}

// An import names the file by its path or by an identity; either way the
// state holds the file's content (as this version reads it) and the
// identity.
func TestImport(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	name := filepath.Join(dir, "a.txt")
	if err := os.WriteFile(name, []byte("by hand \n"), 0o644); err != nil {
		t.Fatal(err)
	}
	byIdentity := &tfprotov6.ResourceIdentityData{IdentityData: dynamic(t, identityType, map[string]*string{"filename": ptr(name)}, false)}
	for _, c := range []struct {
		label, version, id string
		identity           *tfprotov6.ResourceIdentityData
		content            string
	}{
		{"by id", defaultVersion, name, nil, "by hand \n"},
		{"by identity", defaultVersion, "", byIdentity, "by hand \n"},
		{"by id, trimming version", trimVersion, name, nil, "by hand"},
	} {
		resp, err := protocolServer(t, "dwtest", c.version).ImportResourceState(ctx, &tfprotov6.ImportResourceStateRequest{
			TypeName: "dwtest_file", ID: c.id, Identity: c.identity,
		})
		if err != nil {
			t.Fatal(err)
		}
		requireNoDiags(t, resp.Diagnostics)
		if len(resp.ImportedResources) != 1 {
			t.Fatalf("%s: imported %d resources, want 1", c.label, len(resp.ImportedResources))
		}
		got := resp.ImportedResources[0]
		want := map[string]string{"id": name, "filename": name, "content": c.content, "sensitive_content": "<null>"}
		if st := decode(t, fileType, got.State); !maps.Equal(st, want) {
			t.Errorf("%s: imported state %v, want %v", c.label, st, want)
		}
		if id := identityOf(t, got.Identity); id["filename"] != name {
			t.Errorf("%s: imported identity %v, want filename %s", c.label, id, name)
		}
	}

	for _, bad := range []string{"a.txt", filepath.Join(dir, "missing")} {
		resp, err := protocolServer(t, "dwtest", defaultVersion).ImportResourceState(ctx, &tfprotov6.ImportResourceStateRequest{
			TypeName: "dwtest_file", ID: bad,
		})
		if err != nil {
			t.Fatal(err)
		}
		if !hasError(resp.Diagnostics) {
			t.Errorf("import of %q: no error", bad)
		}
	}
}
