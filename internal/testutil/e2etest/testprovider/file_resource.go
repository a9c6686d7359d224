package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/identityschema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

// fileResource manages one local file. The same implementation is served as
// dwtest_file, kubernetes_config_map and helm_release.
//
// Its identity is {filename}, the file's path (equal to id), set by every
// Create, Read, Update and import: Terraform 1.12 and later store it in the
// state beside the attributes, older Terraform and OpenTofu never ask for
// it. An import takes either the path as its ID or an identity.
type fileResource struct {
	typeName string
	// trim reads content with its trailing white space trimmed (version
	// 0.2.0's normalisation).
	trim bool
}

type fileModel struct {
	ID               types.String `tfsdk:"id"`
	Filename         types.String `tfsdk:"filename"`
	Content          types.String `tfsdk:"content"`
	SensitiveContent types.String `tfsdk:"sensitive_content"`
}

var (
	_ resource.ResourceWithIdentity    = (*fileResource)(nil)
	_ resource.ResourceWithImportState = (*fileResource)(nil)
)

// identityAttr is the one attribute of a file's identity: its path.
const identityAttr = "filename"

// fileIdentitySchema is the identity of every file-backed resource.
func fileIdentitySchema(resp *resource.IdentitySchemaResponse) {
	resp.IdentitySchema = identityschema.Schema{
		Attributes: map[string]identityschema.Attribute{
			identityAttr: identityschema.StringAttribute{
				RequiredForImport: true,
				Description:       "Absolute path of the file (the resource's id).",
			},
		},
	}
}

// setIdentity records name as the identity, when the framework offers one
// (it does whenever the resource has an identity schema).
func setIdentity(ctx context.Context, identity *tfsdk.ResourceIdentity, name string, diags *diag.Diagnostics) {
	if identity != nil {
		diags.Append(identity.SetAttribute(ctx, path.Root(identityAttr), name)...)
	}
}

func (r *fileResource) IdentitySchema(_ context.Context, _ resource.IdentitySchemaRequest, resp *resource.IdentitySchemaResponse) {
	fileIdentitySchema(resp)
}

func (r *fileResource) Metadata(_ context.Context, _ resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = r.typeName
}

func (r *fileResource) Schema(_ context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	resp.Schema = schema.Schema{
		Description: "A local file. Editing it outside Terraform is reported as drift; deleting it makes the resource disappear.",
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
			"sensitive_content": schema.StringAttribute{
				Optional:    true,
				Sensitive:   true,
				Description: "File content, marked sensitive. Used when content is null.",
			},
		},
	}
}

func (m *fileModel) body() string {
	switch {
	case !m.Content.IsNull() && !m.Content.IsUnknown():
		return m.Content.ValueString()
	case !m.SensitiveContent.IsNull() && !m.SensitiveContent.IsUnknown():
		return m.SensitiveContent.ValueString()
	default:
		return ""
	}
}

// contentOf is what content reads as for a file holding data: version
// 0.2.0 trims trailing white space (sensitive_content is never trimmed).
func (r *fileResource) contentOf(data []byte) string {
	if r.trim {
		return strings.TrimRight(string(data), " \t\r\n")
	}
	return string(data)
}

func writeFile(name, body string) error {
	if dir := filepath.Dir(name); dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	if err := os.WriteFile(name, []byte(body), 0o644); err != nil {
		return err
	}
	// WriteFile keeps the mode of an existing file; force 0644.
	return os.Chmod(name, 0o644)
}

// write creates or overwrites the planned file and sets the computed id.
func (r *fileResource) write(plan *fileModel, diags *diag.Diagnostics) bool {
	name := plan.Filename.ValueString()
	if err := writeFile(name, plan.body()); err != nil {
		diags.AddError("Cannot write file", err.Error())
		return false
	}
	plan.ID = types.StringValue(name)
	return true
}

func (r *fileResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	var plan fileModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	if resp.Diagnostics.HasError() {
		return
	}
	if !r.write(&plan, &resp.Diagnostics) {
		return
	}
	setIdentity(ctx, resp.Identity, plan.Filename.ValueString(), &resp.Diagnostics)
	resp.Diagnostics.Append(resp.State.Set(ctx, &plan)...)
}

func (r *fileResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	var state fileModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	name := state.Filename.ValueString()
	// Also when the file is gone: the framework wants an identity after
	// every Read, and a state written before identities has none yet.
	setIdentity(ctx, resp.Identity, name, &resp.Diagnostics)
	data, err := os.ReadFile(name)
	if errors.Is(err, fs.ErrNotExist) {
		resp.State.RemoveResource(ctx)
		return
	}
	if err != nil {
		resp.Diagnostics.AddError("Cannot read file", err.Error())
		return
	}
	switch {
	case !state.Content.IsNull():
		state.Content = types.StringValue(r.contentOf(data))
	case !state.SensitiveContent.IsNull():
		state.SensitiveContent = types.StringValue(string(data))
	}
	state.ID = types.StringValue(name)
	resp.Diagnostics.Append(resp.State.Set(ctx, &state)...)
}

func (r *fileResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	var plan fileModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	if resp.Diagnostics.HasError() {
		return
	}
	if !r.write(&plan, &resp.Diagnostics) {
		return
	}
	setIdentity(ctx, resp.Identity, plan.Filename.ValueString(), &resp.Diagnostics)
	resp.Diagnostics.Append(resp.State.Set(ctx, &plan)...)
}

func (r *fileResource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	var filename types.String
	resp.Diagnostics.Append(req.State.GetAttribute(ctx, path.Root("filename"), &filename)...)
	if resp.Diagnostics.HasError() {
		return
	}
	if err := os.Remove(filename.ValueString()); err != nil && !errors.Is(err, fs.ErrNotExist) {
		resp.Diagnostics.AddError("Cannot delete file", err.Error())
	}
}

// ImportState adopts an existing file, named by its path (the import ID) or
// by an identity {filename}. The file's content becomes content (never
// sensitive_content), so a configuration generated from a listed file plans
// no change after the import.
func (r *fileResource) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	resource.ImportStatePassthroughWithIdentity(ctx, path.Root("filename"), path.Root(identityAttr), req, resp)
	if resp.Diagnostics.HasError() {
		return
	}
	var name types.String
	resp.Diagnostics.Append(resp.State.GetAttribute(ctx, path.Root("filename"), &name)...)
	if resp.Diagnostics.HasError() {
		return
	}
	if !filepath.IsAbs(name.ValueString()) {
		resp.Diagnostics.AddError("Cannot import file", fmt.Sprintf("%q is not an absolute path", name.ValueString()))
		return
	}
	data, err := os.ReadFile(name.ValueString())
	if err != nil {
		resp.Diagnostics.AddError("Cannot import file", err.Error())
		return
	}
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("id"), name)...)
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("content"), r.contentOf(data))...)
	setIdentity(ctx, resp.Identity, name.ValueString(), &resp.Diagnostics)
}
