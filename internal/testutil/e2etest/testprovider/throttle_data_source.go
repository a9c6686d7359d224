package main

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

// throttleDataSource (dwtest_throttle) plays a cloud API that throttles
// its callers: while the file `while_exists` exists, every read fails as
// AWS's APIs do when throttled ("ThrottlingException: Rate exceeded").
// Each read appends its time (RFC 3339, nanoseconds) to `journal`, so a
// test can count how often the API was called.
type throttleDataSource struct {
	typeName string
}

type throttleModel struct {
	WhileExists types.String `tfsdk:"while_exists"`
	Journal     types.String `tfsdk:"journal"`
	ID          types.String `tfsdk:"id"`
}

var _ datasource.DataSource = (*throttleDataSource)(nil)

func (d *throttleDataSource) Metadata(_ context.Context, _ datasource.MetadataRequest, resp *datasource.MetadataResponse) {
	resp.TypeName = d.typeName
}

func (d *throttleDataSource) Schema(_ context.Context, _ datasource.SchemaRequest, resp *datasource.SchemaResponse) {
	resp.Schema = schema.Schema{
		Description: "A read that is throttled while a file exists.",
		Attributes: map[string]schema.Attribute{
			"while_exists": schema.StringAttribute{Required: true, Description: "Reads are throttled while this file exists."},
			"journal":      schema.StringAttribute{Required: true, Description: "Each read appends its time to this file."},
			"id":           schema.StringAttribute{Computed: true},
		},
	}
}

func (d *throttleDataSource) Read(ctx context.Context, req datasource.ReadRequest, resp *datasource.ReadResponse) {
	var m throttleModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	f, err := os.OpenFile(m.Journal.ValueString(), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err == nil {
		_, err = f.WriteString(time.Now().UTC().Format(time.RFC3339Nano) + "\n")
		err = errors.Join(err, f.Close())
	}
	if err != nil {
		resp.Diagnostics.AddError("Cannot write the journal", err.Error())
		return
	}
	switch _, err := os.Stat(m.WhileExists.ValueString()); {
	case err == nil:
		resp.Diagnostics.AddError("reading dwtest_throttle: ThrottlingException: Rate exceeded",
			"The API throttled the request; retry with backoff.")
		return
	case !errors.Is(err, fs.ErrNotExist):
		resp.Diagnostics.AddError("Cannot stat while_exists", err.Error())
		return
	}
	m.ID = types.StringValue("ok")
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}
