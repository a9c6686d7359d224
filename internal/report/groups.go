package report

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/driftwatch/driftwatch/internal/incident/group"
)

// Group is a group of the report: findings of several workspaces that
// share one cause (incident/group), which the daemon would alert as one
// incident.
type Group struct {
	ID string `json:"id"`
	// Cause is "commit" or "shape" (an audit knows no provider
	// upgrades); CauseKey the cause, readable.
	Cause      string        `json:"cause"`
	CauseKey   string        `json:"cause_key"`
	Title      string        `json:"title"`
	Workspaces int           `json:"workspaces"`
	Members    []GroupMember `json:"members"`
}

// GroupMember is one grouped finding: a workspace's resource.
type GroupMember struct {
	Workspace string `json:"workspace"`
	Address   string `json:"address"`
}

// GroupFindings sets r.Groups: the groups of r's drift and pending
// findings (not ignored) across its workspaces, as group.Compute makes
// them with opts, every finding first seen at r.FinishedAt. A report
// whose findings share no cause has none.
func (r *Report) GroupFindings(opts group.Options) {
	var fs []group.Finding
	for _, ws := range r.Workspaces {
		fs = append(fs, group.Candidates(ws.Name, ws.Findings, r.FinishedAt)...)
	}
	gs, _ := group.Compute(fs, nil, opts)
	r.Groups = nil
	for _, g := range gs {
		out := Group{ID: g.ID, Cause: string(g.Cause), CauseKey: strings.TrimSpace(g.Key), Title: g.Title, Workspaces: g.Workspaces}
		for _, m := range g.Members {
			out.Members = append(out.Members, GroupMember{Workspace: m.Workspace, Address: m.Address})
		}
		r.Groups = append(r.Groups, out)
	}
}

// writeGroupsTable lists the groups under the table's findings.
func writeGroupsTable(w io.Writer, gs []Group) error {
	if len(gs) == 0 {
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "\nGROUP\tWORKSPACES\tRESOURCES\tTITLE")
	for _, g := range gs {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\n", g.ID, g.Workspaces, len(g.Members), g.Title)
	}
	return tw.Flush()
}

// writeGroupsMarkdown is the Markdown report's Groups section: each
// group's title and its members.
func writeGroupsMarkdown(b *strings.Builder, gs []Group) {
	if len(gs) == 0 {
		return
	}
	b.WriteString("\n### Groups\n\nFindings of several workspaces that share one cause: the daemon alerts each group as one incident.\n\n")
	for _, g := range gs {
		fmt.Fprintf(b, "- **%s** (`%s`)\n", mdEscape(g.Title), g.ID)
		for _, m := range g.Members {
			fmt.Fprintf(b, "  - %s: `%s`\n", mdEscape(m.Workspace), mdEscape(m.Address))
		}
	}
}
