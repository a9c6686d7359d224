package main

import (
	"context"
	"os"

	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

// fileDataSource reads a local file (served as data source dwtest_file).
type fileDataSource struct {
	typeName string
}

type fileDataModel struct {
	Filename types.String `tfsdk:"filename"`
	Content  types.String `tfsdk:"content"`
}

var _ datasource.DataSource = (*fileDataSource)(nil)

func (d *fileDataSource) Metadata(_ context.Context, _ datasource.MetadataRequest, resp *datasource.MetadataResponse) {
	resp.TypeName = d.typeName
}

func (d *fileDataSource) Schema(_ context.Context, _ datasource.SchemaRequest, resp *datasource.SchemaResponse) {
	resp.Schema = schema.Schema{
		Description: "Reads a local file.",
		Attributes: map[string]schema.Attribute{
			"filename": schema.StringAttribute{Required: true, Description: "Path of the file."},
			"content":  schema.StringAttribute{Computed: true, Description: "File content."},
		},
	}
}

func (d *fileDataSource) Read(ctx context.Context, req datasource.ReadRequest, resp *datasource.ReadResponse) {
	var m fileDataModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	data, err := os.ReadFile(m.Filename.ValueString())
	if err != nil {
		resp.Diagnostics.AddError("Cannot read file", err.Error())
		return
	}
	m.Content = types.StringValue(string(data))
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}
