package tfsession

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2/hclsyntax"

	"github.com/hashicorp/go-version"

	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/terraform"
	"github.com/driftwatch/driftwatch/internal/terraform/sandbox"
)

// minQuery is the first Terraform with `terraform query`.
var minQuery = version.Must(version.NewVersion("1.14.0"))

// QuerySupported says why tool ("terraform 1.14.9", as Version says)
// cannot run a scan, or nil when it can: Terraform 1.14 or later.
// OpenTofu has no query command.
func QuerySupported(tool string) error {
	name, v, _ := strings.Cut(tool, " ")
	if name == "tofu" {
		return fmt.Errorf("%s has no query command: scans need Terraform 1.14 or later", tool)
	}
	ver, err := version.NewVersion(v)
	if name != "terraform" || err != nil {
		return fmt.Errorf("%q is not a Terraform version: scans need Terraform 1.14 or later", tool)
	}
	if ver.Core().LessThan(minQuery) {
		return fmt.Errorf("%s has no query command: scans need Terraform 1.14 or later", tool)
	}
	return nil
}

// CheckQueryBinary runs bin (a path, a name on PATH, or "": terraform,
// then tofu) as `version -json` and says why it cannot run a scan
// (QuerySupported), or nil. validate calls it for every scan.
func CheckQueryBinary(ctx context.Context, bin string) error {
	path, err := sandbox.ResolveBinary(bin, os.Getenv("PATH"))
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, "version", "-json")
	cmd.Env = append(os.Environ(), "CHECKPOINT_DISABLE=1")
	out, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("%s version: %w", path, err)
	}
	var v struct {
		Version string `json:"terraform_version"`
	}
	if json.Unmarshal(out, &v) != nil || v.Version == "" {
		return fmt.Errorf("%s version: no version in its answer", path)
	}
	return QuerySupported(sandbox.ToolName(path) + " " + v.Version)
}

// Query runs `terraform query -json` in the module directory and returns
// every resource its list blocks found (never nil: an empty list is an
// answer). The stream's progress reaches the log as one line per list
// block ("list   list.dwtest_file.all: 3 found"); resource objects and
// generated configuration are never asked for.
func (s *Session) Query(ctx context.Context) ([]drift.Listed, error) {
	listed, _, err := s.query(ctx, "")
	return listed, err
}

// Generated is one listed resource with the configuration Terraform
// generated for it: its resource block (Config) and its import block
// (Import). The configuration holds the resource's attribute values (a
// sensitive one is written as null): it is code for the user, never
// logged.
type Generated struct {
	Listed         drift.Listed
	Config, Import string
}

// QueryGenerate is Query with `-generate-config-out`: every listed
// resource with its generated configuration, which comes on the JSON
// stream (nothing is written to out, which must not exist).
func (s *Session) QueryGenerate(ctx context.Context, out string) ([]Generated, error) {
	_, gen, err := s.query(ctx, out)
	return gen, err
}

func (s *Session) query(ctx context.Context, generateOut string) ([]drift.Listed, []Generated, error) {
	if err := QuerySupported(s.Version(ctx)); err != nil {
		return nil, nil, &terraform.Error{Phase: "query", Reason: err.Error(), Err: err}
	}
	s.step("query")
	pl := s.newStream()
	listed := []drift.Listed{}
	pl.listed = &listed
	args := []string{"query", "-no-color", "-json"}
	if generateOut != "" {
		pl.generated = []Generated{}
		args = append(args, "-generate-config-out="+generateOut)
	}
	err := s.cmd.Run(ctx, pl, args...)
	pl.flush()
	if err != nil {
		return nil, nil, s.streamFail(ctx, "query", pl, err)
	}
	return listed, pl.generated, nil
}

// WriteLists writes lists as list blocks to moduleDir/terraform.ListsFile,
// replacing a file of that name the source may hold.
func WriteLists(moduleDir string, lists []terraform.List) error {
	var b strings.Builder
	b.WriteString("# Written by driftwatch for a scan: one list block per scanned type.\n")
	for _, l := range lists {
		if !hclsyntax.ValidIdentifier(l.Type) || !hclsyntax.ValidIdentifier(l.Provider) {
			return fmt.Errorf("scan list %q (provider %q): not a resource type and provider name", l.Type, l.Provider)
		}
		fmt.Fprintf(&b, "\nlist %q \"all\" {\n  provider = %s\n", l.Type, l.Provider)
		if l.Limit > 0 {
			fmt.Fprintf(&b, "  limit    = %d\n", l.Limit)
		}
		if len(l.Config) > 0 {
			b.WriteString("  config {\n")
			for _, k := range slices.Sorted(maps.Keys(l.Config)) {
				if !hclsyntax.ValidIdentifier(k) {
					return fmt.Errorf("scan list %q: config key %q is not an attribute name", l.Type, k)
				}
				v, err := hclValue(l.Config[k])
				if err != nil {
					return fmt.Errorf("scan list %q: config key %q: %w", l.Type, k, err)
				}
				fmt.Fprintf(&b, "    %s = %s\n", k, v)
			}
			b.WriteString("  }\n")
		}
		b.WriteString("}\n")
	}
	return os.WriteFile(filepath.Join(moduleDir, terraform.ListsFile), []byte(b.String()), 0o600)
}

// hclValue renders a config value as an HCL literal: a string (quoted,
// with interpolation sequences escaped), a number, a boolean or a list of
// those.
func hclValue(v any) (string, error) {
	switch v := v.(type) {
	case string:
		q := strconv.Quote(v)
		q = strings.ReplaceAll(q, "${", "$${")
		return strings.ReplaceAll(q, "%{", "%%{"), nil
	case bool:
		return strconv.FormatBool(v), nil
	case int:
		return strconv.Itoa(v), nil
	case int64:
		return strconv.FormatInt(v, 10), nil
	case uint64:
		return strconv.FormatUint(v, 10), nil
	case float64:
		if math.IsInf(v, 0) || math.IsNaN(v) {
			return "", errors.New("not a finite number")
		}
		return strconv.FormatFloat(v, 'g', -1, 64), nil
	case []any:
		parts := make([]string, len(v))
		for i, e := range v {
			p, err := hclValue(e)
			if err != nil {
				return "", err
			}
			parts[i] = p
		}
		return "[" + strings.Join(parts, ", ") + "]", nil
	}
	return "", fmt.Errorf("a %T is not a string, number, boolean or list", v)
}
