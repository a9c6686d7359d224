package slack

import (
	"fmt"
	"strings"

	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/notify"
)

func findingGroups(fs []drift.Finding, limit int) []group {
	var groups []group
	for _, f := range fs {
		if len(groups) == 0 || groups[len(groups)-1].title != kindTitle(f.Kind) {
			groups = append(groups, group{title: kindTitle(f.Kind)})
		}
		g := &groups[len(groups)-1]
		if limit > 0 {
			g.lines = append(g.lines, findingLine(f))
			limit--
		} else {
			g.more++
		}
	}
	return groups
}

func deltaGroups(d *notify.Delta) []group {
	if d == nil {
		return nil
	}
	mk := func(title string, fs []drift.Finding) group {
		g := group{title: fmt.Sprintf("*%s (%d)*", title, len(fs))}
		for i, f := range fs {
			if i >= maxDeltaListed {
				g.more = len(fs) - i
				break
			}
			g.lines = append(g.lines, findingLine(f))
		}
		return g
	}
	var gs []group
	if len(d.Added) > 0 {
		gs = append(gs, mk("Added", d.Added))
	}
	if len(d.Removed) > 0 {
		gs = append(gs, mk("Removed", d.Removed))
	}
	if len(d.Changed) > 0 {
		gs = append(gs, mk("Changed", d.Changed))
	}
	return gs
}

// findingLine is one finding: address, action and attribute paths (never
// values), each capped so that one line stays far below a section's limit.
func findingLine(f drift.Finding) string {
	var b strings.Builder
	b.WriteString("• ")
	b.WriteString(codeSpan(orUnknown(f.Address), maxAddressRunes))
	if f.Kind == drift.KindForbidden {
		b.WriteString(" _forbidden type_ ")
		b.WriteString(codeSpan(orUnknown(f.Type), maxAttributeRunes))
		if len(f.SeenIn) > 0 {
			b.WriteString(" (in " + esc(notify.Truncate(strings.Join(f.SeenIn, ", "), 100)) + ")")
		}
		return b.String()
	}
	if f.Action != "" {
		b.WriteString(" _" + esc(notify.Truncate(notify.OneLine(f.Action), 40)) + "_")
	}
	if len(f.Attributes) > 0 {
		b.WriteString(": ")
		for i, a := range f.Attributes {
			if i == maxAttributesListed {
				fmt.Fprintf(&b, " +%d more", len(f.Attributes)-i)
				break
			}
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(codeSpan(a, maxAttributeRunes))
		}
	}
	if p := notify.Provenance(f); p != "" {
		b.WriteString(" — " + esc(p))
	}
	return b.String()
}
