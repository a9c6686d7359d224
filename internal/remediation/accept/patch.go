package accept

import (
	"strings"

	"github.com/pmezard/go-difflib/difflib"
)

// Patch is the change as a unified diff (git's a/ and b/ prefixes,
// paths relative to the root module), to apply with `git apply` or
// `patch -p1`.
func (r *Result) Patch() string {
	var b strings.Builder
	for _, f := range r.Files {
		d, _ := difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
			A: difflib.SplitLines(string(f.Old)), B: difflib.SplitLines(string(f.New)),
			FromFile: "a/" + f.Path, ToFile: "b/" + f.Path, Context: 3,
		})
		b.WriteString(d)
	}
	return b.String()
}
