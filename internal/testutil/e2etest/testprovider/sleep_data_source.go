package main

import (
	"context"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

// sleepDataSource (dwtest_sleep) sleeps for `duration` while it is read,
// i.e. during every plan: it makes a real plan slow, for tests of
// timeouts, overlap, concurrency caps and shutdown. It honours
// cancellation, as a real provider call does.
type sleepDataSource struct {
	typeName string
}

type sleepModel struct {
	Duration types.String `tfsdk:"duration"`
	ID       types.String `tfsdk:"id"`
}

var _ datasource.DataSource = (*sleepDataSource)(nil)

func (d *sleepDataSource) Metadata(_ context.Context, _ datasource.MetadataRequest, resp *datasource.MetadataResponse) {
	resp.TypeName = d.typeName
}

func (d *sleepDataSource) Schema(_ context.Context, _ datasource.SchemaRequest, resp *datasource.SchemaResponse) {
	resp.Schema = schema.Schema{
		Description: "Sleeps while read.",
		Attributes: map[string]schema.Attribute{
			"duration": schema.StringAttribute{Required: true, Description: "Go duration to sleep, e.g. 5s."},
			"id":       schema.StringAttribute{Computed: true},
		},
	}
}

func (d *sleepDataSource) Read(ctx context.Context, req datasource.ReadRequest, resp *datasource.ReadResponse) {
	var m sleepModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	dur, err := time.ParseDuration(m.Duration.ValueString())
	if err != nil {
		resp.Diagnostics.AddError("Invalid duration", err.Error())
		return
	}
	select {
	case <-time.After(dur):
	case <-ctx.Done():
		resp.Diagnostics.AddError("Cancelled", ctx.Err().Error())
		return
	}
	m.ID = types.StringValue(m.Duration.ValueString())
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}
