package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

// revisionFileResource (dwtest_revision_file) is a local file like
// dwtest_file, plus what tests of an apply's failure modes need:
//
//   - revision, computed, incremented by every Create and Update, like a
//     real resource's last-modified attribute: a revert of drift then
//     changes the state (Terraform writes a new serial), where reverting
//     dwtest_file leaves the state byte-identical;
//   - journal, a file every Create and Update appends "<op> begin" and
//     "<op> end" to, so a test counts the writes an apply attempted;
//   - hold_while_exists: a write waits (after "begin", before touching the
//     file) for as long as that file exists, or until Terraform stops the
//     provider, so a test can catch an apply mid-way, holding the state
//     lock, and cancel or kill it;
//   - fail_if_exists: a write fails (after the hold, without touching the
//     file) while that file exists.
//
// Its identity is {filename}, like dwtest_file's (it has no import).
//
// The switches are paths rather than values so that a test flips them
// without changing the configuration: a changed attribute would be a
// configuration change, which a remediation refuses to apply.
type revisionFileResource struct {
	typeName string
}

type revisionFileModel struct {
	ID              types.String `tfsdk:"id"`
	Filename        types.String `tfsdk:"filename"`
	Content         types.String `tfsdk:"content"`
	Revision        types.Int64  `tfsdk:"revision"`
	Journal         types.String `tfsdk:"journal"`
	HoldWhileExists types.String `tfsdk:"hold_while_exists"`
	FailIfExists    types.String `tfsdk:"fail_if_exists"`
}

var _ resource.ResourceWithIdentity = (*revisionFileResource)(nil)

func (r *revisionFileResource) IdentitySchema(_ context.Context, _ resource.IdentitySchemaRequest, resp *resource.IdentitySchemaResponse) {
	fileIdentitySchema(resp)
}

func (r *revisionFileResource) Metadata(_ context.Context, _ resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = r.typeName
}

func (r *revisionFileResource) Schema(_ context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	resp.Schema = schema.Schema{
		Description: "A local file with a revision number that every write increments, and test switches for failing or holding a write.",
		Attributes: map[string]schema.Attribute{
			"id": schema.StringAttribute{
				Computed:      true,
				Description:   "Same as filename.",
				PlanModifiers: []planmodifier.String{stringplanmodifier.UseStateForUnknown()},
			},
			"filename": schema.StringAttribute{
				Required:      true,
				Description:   "Path of the file (use an absolute path).",
				PlanModifiers: []planmodifier.String{stringplanmodifier.RequiresReplace()},
			},
			"content": schema.StringAttribute{
				Optional:    true,
				Description: "File content.",
			},
			"revision": schema.Int64Attribute{
				Computed:    true,
				Description: "Number of writes (Create is 1, each Update adds 1): unknown until an apply.",
			},
			"journal": schema.StringAttribute{
				Optional:    true,
				Description: `File each write appends "<op> begin" and "<op> end" to.`,
			},
			"hold_while_exists": schema.StringAttribute{
				Optional:    true,
				Description: "A write waits while this file exists (or until the provider is stopped).",
			},
			"fail_if_exists": schema.StringAttribute{
				Optional:    true,
				Description: "A write fails while this file exists.",
			},
		},
	}
}

func exists(p types.String) bool {
	if p.IsNull() || p.IsUnknown() || p.ValueString() == "" {
		return false
	}
	_, err := os.Stat(p.ValueString())
	return err == nil
}

// note appends line to the journal, if any.
func (m *revisionFileModel) note(line string, diags *diag.Diagnostics) {
	if m.Journal.IsNull() || m.Journal.ValueString() == "" {
		return
	}
	f, err := os.OpenFile(m.Journal.ValueString(), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err == nil {
		_, err = fmt.Fprintln(f, line)
		err = errors.Join(err, f.Close())
	}
	if err != nil {
		diags.AddError("Cannot write journal", err.Error())
	}
}

// write performs one Create or Update (op) of plan, whose revision
// becomes revision: journal, hold, failure switch, file.
func (r *revisionFileResource) write(ctx context.Context, op string, plan *revisionFileModel, revision int64, diags *diag.Diagnostics) bool {
	plan.note(op+" begin", diags)
	if diags.HasError() {
		return false
	}
	for exists(plan.HoldWhileExists) {
		select {
		case <-ctx.Done():
			diags.AddError("Write interrupted", "the provider was stopped while the write was held")
			return false
		case <-time.After(50 * time.Millisecond):
		}
	}
	if exists(plan.FailIfExists) {
		diags.AddError("Injected write failure", fmt.Sprintf("%s exists: this write fails on purpose", plan.FailIfExists.ValueString()))
		return false
	}
	content := ""
	if !plan.Content.IsNull() && !plan.Content.IsUnknown() {
		content = plan.Content.ValueString()
	}
	if err := writeFile(plan.Filename.ValueString(), content); err != nil {
		diags.AddError("Cannot write file", err.Error())
		return false
	}
	plan.ID = types.StringValue(plan.Filename.ValueString())
	plan.Revision = types.Int64Value(revision)
	plan.note(op+" end", diags)
	return !diags.HasError()
}

func (r *revisionFileResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	var plan revisionFileModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	if resp.Diagnostics.HasError() {
		return
	}
	if !r.write(ctx, "create", &plan, 1, &resp.Diagnostics) {
		return
	}
	setIdentity(ctx, resp.Identity, plan.Filename.ValueString(), &resp.Diagnostics)
	resp.Diagnostics.Append(resp.State.Set(ctx, &plan)...)
}

func (r *revisionFileResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	var state revisionFileModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	name := state.Filename.ValueString()
	setIdentity(ctx, resp.Identity, name, &resp.Diagnostics) // also when the file is gone
	data, err := os.ReadFile(name)
	if errors.Is(err, fs.ErrNotExist) {
		resp.State.RemoveResource(ctx)
		return
	}
	if err != nil {
		resp.Diagnostics.AddError("Cannot read file", err.Error())
		return
	}
	if !state.Content.IsNull() {
		state.Content = types.StringValue(string(data))
	}
	state.ID = types.StringValue(name)
	resp.Diagnostics.Append(resp.State.Set(ctx, &state)...)
}

func (r *revisionFileResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	var plan, prior revisionFileModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	resp.Diagnostics.Append(req.State.Get(ctx, &prior)...)
	if resp.Diagnostics.HasError() {
		return
	}
	if !r.write(ctx, "update", &plan, prior.Revision.ValueInt64()+1, &resp.Diagnostics) {
		// Nothing was written: the object is as it was.
		resp.State.Raw = req.State.Raw.Copy()
		setIdentity(ctx, resp.Identity, prior.Filename.ValueString(), &resp.Diagnostics)
		return
	}
	setIdentity(ctx, resp.Identity, plan.Filename.ValueString(), &resp.Diagnostics)
	resp.Diagnostics.Append(resp.State.Set(ctx, &plan)...)
}

func (r *revisionFileResource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	var filename types.String
	resp.Diagnostics.Append(req.State.GetAttribute(ctx, path.Root("filename"), &filename)...)
	if resp.Diagnostics.HasError() {
		return
	}
	if err := os.Remove(filename.ValueString()); err != nil && !errors.Is(err, fs.ErrNotExist) {
		resp.Diagnostics.AddError("Cannot delete file", err.Error())
	}
}
