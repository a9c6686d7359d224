package main

import (
	"context"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/providerserver"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
)

// The tests here talk to the provider through the plugin protocol, as
// Terraform does, so they cover what the framework checks around the
// provider's own code (identity after every Read, registration).

var (
	fileType = tftypes.Object{AttributeTypes: map[string]tftypes.Type{
		"id": tftypes.String, "filename": tftypes.String, "content": tftypes.String, "sensitive_content": tftypes.String,
	}}
	identityType   = tftypes.Object{AttributeTypes: map[string]tftypes.Type{"filename": tftypes.String}}
	listConfigType = tftypes.Object{AttributeTypes: map[string]tftypes.Type{"directory": tftypes.String, "pattern": tftypes.String}}
)

// listServer is a provider server that also lists resources (the plugin
// protocol's ProviderServer does not include that yet).
type listServer interface {
	tfprotov6.ProviderServer
	ListResource(context.Context, *tfprotov6.ListResourceRequest) (*tfprotov6.ListResourceServerStream, error)
}

// protocolServer is the provider (name, version) as Terraform sees it.
func protocolServer(t *testing.T, name, version string) listServer {
	t.Helper()
	s, err := providerserver.NewProtocol6WithError(newProvider(name, version)())()
	if err != nil {
		t.Fatal(err)
	}
	ls, ok := s.(listServer)
	if !ok {
		t.Fatal("the provider server does not serve list resources")
	}
	return ls
}

// str is a string value, or null for nil.
func str(s *string) tftypes.Value {
	if s == nil {
		return tftypes.NewValue(tftypes.String, nil)
	}
	return tftypes.NewValue(tftypes.String, *s)
}

func ptr(s string) *string { return &s }

// dynamic encodes an object of string attributes (missing ones null), or
// the null object.
func dynamic(t *testing.T, typ tftypes.Object, attrs map[string]*string, null bool) *tfprotov6.DynamicValue {
	t.Helper()
	val := tftypes.NewValue(typ, nil)
	if !null {
		vals := map[string]tftypes.Value{}
		for k := range typ.AttributeTypes {
			vals[k] = str(attrs[k])
		}
		val = tftypes.NewValue(typ, vals)
	}
	v, err := tfprotov6.NewDynamicValue(typ, val)
	if err != nil {
		t.Fatal(err)
	}
	return &v
}

// decode decodes an object of string attributes; a null attribute is
// "<null>", a null object nil.
func decode(t *testing.T, typ tftypes.Object, dv *tfprotov6.DynamicValue) map[string]string {
	t.Helper()
	if dv == nil {
		return nil
	}
	v, err := dv.Unmarshal(typ)
	if err != nil {
		t.Fatal(err)
	}
	if v.IsNull() {
		return nil
	}
	var attrs map[string]tftypes.Value
	if err := v.As(&attrs); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for k, a := range attrs {
		var s *string
		if err := a.As(&s); err != nil {
			t.Fatal(err)
		}
		out[k] = "<null>"
		if s != nil {
			out[k] = *s
		}
	}
	return out
}

func identityOf(t *testing.T, id *tfprotov6.ResourceIdentityData) map[string]string {
	t.Helper()
	if id == nil {
		return nil
	}
	return decode(t, identityType, id.IdentityData)
}

func requireNoDiags(t *testing.T, diags []*tfprotov6.Diagnostic) {
	t.Helper()
	for _, d := range diags {
		if d.Severity == tfprotov6.DiagnosticSeverityError {
			t.Fatalf("error diagnostic: %s: %s", d.Summary, d.Detail)
		}
	}
}

func hasError(diags []*tfprotov6.Diagnostic) bool {
	for _, d := range diags {
		if d.Severity == tfprotov6.DiagnosticSeverityError {
			return true
		}
	}
	return false
}
