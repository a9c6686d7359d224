package source

import (
	"errors"
	"fmt"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	hcljson "github.com/hashicorp/hcl/v2/json"
)

// ParseConfig parses one Terraform configuration file: HCL native syntax,
// or JSON when its name ends in .json. Its error is DiagError's.
func ParseConfig(name string, src []byte) (*hcl.File, error) {
	var (
		f     *hcl.File
		diags hcl.Diagnostics
	)
	if strings.HasSuffix(name, ".json") {
		f, diags = hcljson.Parse(src, name)
	} else {
		f, diags = hclsyntax.ParseConfig(src, name, hcl.InitialPos)
	}
	if err := DiagError(name, diags); err != nil {
		return nil, err
	}
	return f, nil
}

// DiagError turns error diagnostics into a one-line error naming the
// file, line and column of the first, with a count of the rest; nil
// without an error among them. Only summaries are kept: details can quote
// source text, which may hold a secret.
func DiagError(name string, diags hcl.Diagnostics) error {
	errs := diags.Errs()
	if len(errs) == 0 {
		return nil
	}
	var d *hcl.Diagnostic
	for _, e := range diags {
		if e.Severity == hcl.DiagError {
			d = e
			break
		}
	}
	pos := name
	if d.Subject != nil {
		pos = fmt.Sprintf("%s:%d,%d", d.Subject.Filename, d.Subject.Start.Line, d.Subject.Start.Column)
	}
	msg := pos + ": " + lowerFirst(d.Summary)
	if n := len(errs) - 1; n > 0 {
		msg += fmt.Sprintf(" (and %d more)", n)
	}
	return errors.New(msg)
}

// lowerFirst lowercases the first letter of an HCL summary.
func lowerFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToLower(s[:1]) + s[1:]
}
