package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/list"
	"github.com/hashicorp/terraform-plugin-framework/list/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

// fileListResource lists the files a fileResource of the same type name
// could manage, for `terraform query` (Terraform 1.14 and later): the
// regular files directly in config.directory (no recursion) whose base name
// matches config.pattern (a filepath.Match glob, "*" when unset), sorted by
// path. Each result has the identity {filename}, the path as its display
// name and, when the query includes resources, the state an import of that
// file would give (id, filename, content; sensitive_content null).
type fileListResource struct {
	file fileResource
}

type fileListConfig struct {
	Directory types.String `tfsdk:"directory"`
	Pattern   types.String `tfsdk:"pattern"`
}

var _ list.ListResource = (*fileListResource)(nil)

func (l *fileListResource) Metadata(ctx context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	l.file.Metadata(ctx, req, resp)
}

func (l *fileListResource) ListResourceConfigSchema(_ context.Context, _ list.ListResourceSchemaRequest, resp *list.ListResourceSchemaResponse) {
	resp.Schema = schema.Schema{
		Description: "The regular files directly in a directory.",
		Attributes: map[string]schema.Attribute{
			"directory": schema.StringAttribute{
				Required:    true,
				Description: "Absolute path of the directory to list (not recursive).",
			},
			"pattern": schema.StringAttribute{
				Optional:    true,
				Description: `Glob (filepath.Match) on a file's base name; "*" when unset.`,
			},
		},
	}
}

// listFiles is the sorted paths of the regular files directly in dir whose
// base name matches pattern.
func listFiles(dir, pattern string) ([]string, error) {
	if !filepath.IsAbs(dir) {
		return nil, fmt.Errorf("directory %q is not an absolute path", dir)
	}
	if _, err := filepath.Match(pattern, ""); err != nil {
		return nil, fmt.Errorf("pattern %q: %w", pattern, err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("directory %q: %w", dir, err)
	}
	var files []string
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		if ok, _ := filepath.Match(pattern, e.Name()); ok {
			files = append(files, filepath.Join(dir, e.Name()))
		}
	}
	slices.Sort(files)
	return files, nil
}

func (l *fileListResource) List(ctx context.Context, req list.ListRequest, stream *list.ListResultsStream) {
	var cfg fileListConfig
	if diags := req.Config.Get(ctx, &cfg); diags.HasError() {
		stream.Results = list.ListResultsStreamDiagnostics(diags)
		return
	}
	pattern := "*"
	if !cfg.Pattern.IsNull() && !cfg.Pattern.IsUnknown() {
		pattern = cfg.Pattern.ValueString()
	}
	files, err := listFiles(cfg.Directory.ValueString(), pattern)
	if err != nil {
		var diags diag.Diagnostics
		diags.AddError("Cannot list files", err.Error())
		stream.Results = list.ListResultsStreamDiagnostics(diags)
		return
	}
	stream.Results = func(push func(list.ListResult) bool) {
		for i, name := range files {
			if req.Limit > 0 && int64(i) >= req.Limit {
				return
			}
			if !push(l.result(ctx, req, name)) {
				return
			}
		}
	}
}

// result is one listed file. A file that vanished or cannot be read since
// the directory was read gives a result carrying the error.
func (l *fileListResource) result(ctx context.Context, req list.ListRequest, name string) list.ListResult {
	res := req.NewListResult(ctx)
	res.DisplayName = name
	setIdentity(ctx, res.Identity, name, &res.Diagnostics)
	if !req.IncludeResource {
		return res
	}
	data, err := os.ReadFile(name)
	if err != nil {
		res.Diagnostics.AddError("Cannot read file", err.Error())
		return res
	}
	res.Diagnostics.Append(res.Resource.Set(ctx, fileModel{
		ID:               types.StringValue(name),
		Filename:         types.StringValue(name),
		Content:          types.StringValue(l.file.contentOf(data)),
		SensitiveContent: types.StringNull(),
	})...)
	return res
}
