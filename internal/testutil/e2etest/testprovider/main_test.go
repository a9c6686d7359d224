package main

import (
	"context"
	"slices"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/resource"
)

func TestProviderName(t *testing.T) {
	cases := map[string]string{
		"/m/registry.terraform.io/driftwatch/helm/0.1.0/linux_amd64/terraform-provider-helm_v0.1.0": "helm",
		"terraform-provider-kubernetes_v0.1.0":                                                      "kubernetes",
		"./terraform-provider-dwtest":                                                               "dwtest",
		"/tmp/go-build123/exe/testprovider":                                                         "dwtest",
		"terraform-provider-_v1":                                                                    "dwtest",
	}
	for in, want := range cases {
		if got := providerName(in); got != want {
			t.Errorf("providerName(%q) = %q, want %q", in, got, want)
		}
	}
	for name, want := range map[string]string{"dwtest": "dwtest_file", "kubernetes": "kubernetes_config_map", "helm": "helm_release"} {
		if got := resourceTypeName(name); got != want {
			t.Errorf("resourceTypeName(%q) = %q, want %q", name, got, want)
		}
	}
}

// dwtest serves dwtest_revision_file besides dwtest_file; the other
// names serve their one type only.
func TestResourceTypes(t *testing.T) {
	want := map[string][]string{
		"dwtest":     {"dwtest_file", "dwtest_revision_file"},
		"kubernetes": {"kubernetes_config_map"},
		"helm":       {"helm_release"},
	}
	for name, types := range want {
		var got []string
		for _, r := range newProvider(name, defaultVersion)().Resources(context.Background()) {
			var resp resource.MetadataResponse
			r().Metadata(context.Background(), resource.MetadataRequest{}, &resp)
			got = append(got, resp.TypeName)
		}
		if !slices.Equal(got, types) {
			t.Errorf("%s serves %v, want %v", name, got, types)
		}
	}
}

func TestProviderVersion(t *testing.T) {
	cases := map[string]string{
		"/m/registry.terraform.io/driftwatch/dwtest/0.2.0/linux_amd64/terraform-provider-dwtest_v0.2.0": "0.2.0",
		"terraform-provider-dwtest_v0.1.0":  "0.1.0",
		"./terraform-provider-dwtest":       "0.1.0",
		"/tmp/go-build123/exe/testprovider": "0.1.0",
		"terraform-provider-dwtest_vX":      "0.1.0",
	}
	for in, want := range cases {
		if got := providerVersion(in); got != want {
			t.Errorf("providerVersion(%q) = %q, want %q", in, got, want)
		}
	}
}
