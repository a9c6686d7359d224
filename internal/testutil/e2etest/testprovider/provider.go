package main

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/list"
	"github.com/hashicorp/terraform-plugin-framework/provider"
	"github.com/hashicorp/terraform-plugin-framework/provider/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource"
)

// testProvider has no configuration; its name decides which types it serves.
type testProvider struct {
	name, version string
}

var _ provider.ProviderWithListResources = (*testProvider)(nil)

func newProvider(name, version string) func() provider.Provider {
	return func() provider.Provider { return &testProvider{name: name, version: version} }
}

func (p *testProvider) Metadata(_ context.Context, _ provider.MetadataRequest, resp *provider.MetadataResponse) {
	resp.TypeName = p.name
	resp.Version = p.version
}

func (p *testProvider) Schema(_ context.Context, _ provider.SchemaRequest, resp *provider.SchemaResponse) {
	resp.Schema = schema.Schema{
		Description: "driftwatch end-to-end test provider (" + p.name + "); resources are local files.",
	}
}

func (p *testProvider) Configure(context.Context, provider.ConfigureRequest, *provider.ConfigureResponse) {
}

// file is the file resource this name and version serve.
func (p *testProvider) file() fileResource {
	return fileResource{typeName: resourceTypeName(p.name), trim: p.version == trimVersion}
}

func (p *testProvider) Resources(context.Context) []func() resource.Resource {
	rs := []func() resource.Resource{
		func() resource.Resource { f := p.file(); return &f },
	}
	if p.name == defaultName {
		rs = append(rs, func() resource.Resource { return &revisionFileResource{typeName: p.name + "_revision_file"} })
	}
	return rs
}

func (p *testProvider) DataSources(context.Context) []func() datasource.DataSource {
	if p.name != defaultName {
		return nil
	}
	return []func() datasource.DataSource{
		func() datasource.DataSource { return &fileDataSource{typeName: p.name + "_file"} },
		func() datasource.DataSource { return &sleepDataSource{typeName: p.name + "_sleep"} },
		func() datasource.DataSource { return &throttleDataSource{typeName: p.name + "_throttle"} },
	}
}

// ListResources lists the files of the one file resource each name serves
// (for `terraform query`).
func (p *testProvider) ListResources(context.Context) []func() list.ListResource {
	return []func() list.ListResource{
		func() list.ListResource { return &fileListResource{file: p.file()} },
	}
}
