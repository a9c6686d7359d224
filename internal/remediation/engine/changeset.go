package engine

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/driftwatch/driftwatch/internal/terraform/planparse"
)

// Entry is one resource the apply would change: its address, the action in
// one word (planparse.Change.Action: update, create, delete, replace, ...)
// and the attribute paths that change. It never holds a value.
type Entry struct {
	Address    string   `json:"address"`
	Action     string   `json:"action"`
	Attributes []string `json:"attributes"`
}

// ChangeSet is the normalised set of changes an apply of a plan would
// perform: one Entry per managed resource instance with a non-no-op
// resource_changes entry (deposed objects get their own entry). Data-source
// reads and output changes are not part of it: they change no
// infrastructure.
//
// Two plans with the same Hash make the same changes to the same attribute
// paths of the same resources; that is how Apply proves that the plan it is
// about to apply is the one that was approved.
type ChangeSet struct {
	Entries []Entry `json:"entries"`
}

// changeSetVersion prefixes the hashed encoding, so that a future change of
// the normalisation cannot make an old approval match a new plan.
const changeSetVersion = "driftwatch.changeset.v1\n"

// ChangeSetOf returns the change set of p (empty for a nil plan).
func ChangeSetOf(p *planparse.Plan) ChangeSet {
	var cs ChangeSet
	if p == nil {
		return cs
	}
	for _, c := range p.Changes {
		if c.Mode != modeManaged || c.IsNoOp() {
			continue
		}
		cs.Entries = append(cs.Entries, Entry{
			Address:    changeAddress(c),
			Action:     c.Action(),
			Attributes: slices.Clone(c.Attributes),
		})
	}
	return cs.Normalize()
}

// changeAddress names a change; a deposed object gets its key appended (as
// policy.Classify and Terraform's renderer do) so it cannot be mistaken for
// the current object.
func changeAddress(c planparse.Change) string {
	if c.Deposed == "" {
		return c.Address
	}
	return c.Address + " (deposed object " + c.Deposed + ")"
}

// Normalize returns a copy with entries sorted by address then action, and
// each entry's attribute paths sorted, deduplicated and never nil.
// Duplicate entries collapse into one.
func (c ChangeSet) Normalize() ChangeSet {
	out := ChangeSet{Entries: make([]Entry, 0, len(c.Entries))}
	for _, e := range c.Entries {
		attrs := slices.Clone(e.Attributes)
		if attrs == nil {
			attrs = []string{}
		}
		slices.Sort(attrs)
		out.Entries = append(out.Entries, Entry{Address: e.Address, Action: e.Action, Attributes: slices.Compact(attrs)})
	}
	slices.SortFunc(out.Entries, compareEntries)
	out.Entries = slices.CompactFunc(out.Entries, func(a, b Entry) bool { return compareEntries(a, b) == 0 })
	return out
}

func compareEntries(a, b Entry) int {
	return cmp.Or(
		strings.Compare(a.Address, b.Address),
		strings.Compare(a.Action, b.Action),
		slices.Compare(a.Attributes, b.Attributes),
	)
}

// Hash is the hex SHA-256 of "driftwatch.changeset.v1\n" followed by the
// encoding/json encoding of the normalised entries. It is independent of
// entry and attribute order, and changes with any address, action or
// attribute path. The empty change set has a hash too.
func (c ChangeSet) Hash() string {
	// JSON of the normalised entries is an unambiguous encoding: addresses
	// may contain quotes, brackets and any other byte.
	b, err := json.Marshal(c.Normalize().Entries)
	if err != nil {
		// Entries hold strings only; Marshal cannot fail.
		panic(fmt.Sprintf("remediate: marshal change set: %v", err))
	}
	sum := sha256.Sum256(append([]byte(changeSetVersion), b...))
	return hex.EncodeToString(sum[:])
}

// Len is the number of resources the change set touches.
func (c ChangeSet) Len() int { return len(c.Entries) }

// Addresses returns the entries' addresses, sorted.
func (c ChangeSet) Addresses() []string {
	out := make([]string, 0, len(c.Entries))
	for _, e := range c.Normalize().Entries {
		out = append(out, e.Address)
	}
	return slices.Compact(out)
}

// Lookup returns the entry for address.
func (c ChangeSet) Lookup(address string) (Entry, bool) {
	for _, e := range c.Entries {
		if e.Address == address {
			return e, true
		}
	}
	return Entry{}, false
}

// String renders the entry in one line, e.g. `dwtest_file.a: update
// [content]`.
func (e Entry) String() string {
	if len(e.Attributes) == 0 {
		return e.Address + ": " + e.Action
	}
	return e.Address + ": " + e.Action + " [" + strings.Join(e.Attributes, ", ") + "]"
}

// maxDiffItems bounds DescribeDiff's output: a reason is one line.
const maxDiffItems = 5

// DescribeDiff says in one value-free line how fresh differs from approved,
// e.g. `new: dwtest_file.b: update [content]; gone: dwtest_file.c: update
// [content]`. It returns "" when the two have the same hash.
func DescribeDiff(approved, fresh ChangeSet) string {
	a, f := approved.Normalize(), fresh.Normalize()
	if a.Hash() == f.Hash() {
		return ""
	}
	inA := map[string]Entry{}
	for _, e := range a.Entries {
		inA[e.Address+"\x00"+e.Action] = e
	}
	var items []string
	seen := map[string]bool{}
	for _, e := range f.Entries {
		k := e.Address + "\x00" + e.Action
		seen[k] = true
		old, ok := inA[k]
		switch {
		case !ok:
			items = append(items, "new: "+e.String())
		case !slices.Equal(old.Attributes, e.Attributes):
			items = append(items, "changed: "+e.String()+" (approved ["+strings.Join(old.Attributes, ", ")+"])")
		}
	}
	for _, e := range a.Entries {
		if !seen[e.Address+"\x00"+e.Action] {
			items = append(items, "gone: "+e.String())
		}
	}
	if len(items) > maxDiffItems {
		items = append(items[:maxDiffItems], "and "+strconv.Itoa(len(items)-maxDiffItems)+" more")
	}
	return strings.Join(items, "; ")
}
