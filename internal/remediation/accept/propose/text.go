package propose

import (
	"cmp"
	"fmt"
	"net/url"
	"strings"

	"github.com/driftwatch/driftwatch/internal/notify"
	"github.com/driftwatch/driftwatch/internal/remediation/accept"
)

// Bounds of the request's text.
const (
	maxRows = 200   // rows of each table
	maxBody = 60000 // characters of the body (GitHub takes 65536)
	maxCell = 300   // characters of one cell
)

// Title is the pull or merge request's title, and the commit's subject:
// how many attributes it accepts, and deletions (removed blocks) if any.
func Title(workspace string, change *accept.Result) string {
	n := deletions(change)
	what := notify.Plural(len(change.Accepted)-n, "attribute")
	if n > 0 {
		what += ", " + notify.Plural(n, "deletion")
	}
	return fmt.Sprintf("driftwatch: accept drift of %s (%s)", notify.OneLine(workspace), what)
}

// deletions counts the accepted deletions (accept.KindRemoved).
func deletions(change *accept.Result) int {
	n := 0
	for _, a := range change.Accepted {
		if a.Kind == accept.KindRemoved {
			n++
		}
	}
	return n
}

// commitMessage is the commit's message: the title and the places
// rewritten. It depends on the change alone (not on the tool or the
// link), so that the same change is the same commit.
func commitMessage(title string, req Request) string {
	var b strings.Builder
	b.WriteString(title + "\n\nAccept the drift driftwatch found in workspace " + notify.OneLine(req.Workspace) + " as code:\n\n")
	for _, a := range req.Change.Accepted {
		what := notify.OneLine(a.Address)
		if a.Attribute != "" {
			what += " " + notify.OneLine(a.Attribute)
		}
		fmt.Fprintf(&b, "- %s: %s (%s)\n", what, where(req.Git.Path, a.Where), notify.OneLine(a.Kind))
	}
	return b.String()
}

// Body is the request's description (Markdown): the workspace, the base
// commit, each accepted attribute and where it was rewritten, each
// refusal and its reason, the proof, and the workspace's page. It names
// places, never values: the diff holds the values.
func Body(req Request) string {
	var b strings.Builder
	ws := code(req.Workspace)
	fmt.Fprintf(&b, "### driftwatch: accept the drift of %s as code\n\n", ws)
	fmt.Fprintf(&b, "Something changed these resources outside Terraform, and the change was meant: this request makes the configuration say what exists, "+
		"so that once it is merged the next check of %s is clean.\n\n", ws)
	fmt.Fprintf(&b, "- **Workspace:** %s", ws)
	if u := link(req.Link); u != "" {
		fmt.Fprintf(&b, " · [workspace page](%s)", u)
	}
	fmt.Fprintf(&b, "\n- **Base commit:** %s", code(req.Commit))
	if p := strings.Trim(req.Git.Path, "/"); p != "" {
		fmt.Fprintf(&b, " (root module %s)", code(p))
	}
	fmt.Fprintf(&b, "\n- **Proof:** a plan of the changed code with %s shows no change for the accepted resources and nothing new.\n",
		code(cmp.Or(req.Tool, "Terraform")))
	if deletions(req.Change) > 0 {
		fmt.Fprintf(&b, "- **Deletions:** each %s keeps a resource deleted outside Terraform out of the code without destroying anything; "+
			"the workspace's next apply drops it from the state.\n", code(accept.KindRemoved))
	}

	acc := req.Change.Accepted
	fmt.Fprintf(&b, "\n#### Accepted (%d)\n\n| Address | Attribute | Rewritten at | Set by |\n| --- | --- | --- | --- |\n", len(acc))
	for i, a := range acc {
		if i == maxRows {
			fmt.Fprintf(&b, "\n… and %d more.\n", len(acc)-maxRows)
			break
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", cell(a.Address), cell(a.Attribute), cell(where(req.Git.Path, a.Where)), cell(a.Kind))
	}
	if ref := req.Change.Refused; len(ref) > 0 {
		fmt.Fprintf(&b, "\n#### Not accepted (%d)\n\nLeft as drift: each needs a person's change, or stays to be reverted.\n\n| Address | Attribute | Why |\n| --- | --- | --- |\n", len(ref))
		for i, r := range ref {
			if i == maxRows {
				fmt.Fprintf(&b, "\n… and %d more.\n", len(ref)-maxRows)
				break
			}
			fmt.Fprintf(&b, "| %s | %s | %s |\n", cell(r.Address), cell(r.Attribute), cell(r.Reason))
		}
	}
	b.WriteString("\n_Attribute values are not shown here: the diff has them. driftwatch proposes the same change on the same branch, so accepting it again reuses this request._\n")
	return notify.Truncate(b.String(), maxBody)
}

// where is an accept.Accepted's place (FILE:LINE relative to the root
// module) relative to the repository.
func where(dir, w string) string {
	file, line, ok := strings.Cut(w, ":")
	if !ok {
		return notify.OneLine(w)
	}
	return notify.OneLine(repoPath(dir, file) + ":" + line)
}

// code is s on one line, cut to maxCell, as a Markdown code span
// (notify.CodeSpan): no mention, link or HTML in it is rendered.
func code(s string) string {
	if s = notify.Truncate(notify.OneLine(s), maxCell); s == "" {
		return ""
	}
	return notify.CodeSpan(s)
}

// cell is code for a table cell, where a pipe must be escaped even in a
// code span.
func cell(s string) string { return strings.ReplaceAll(code(s), "|", `\|`) }

// link is u as a Markdown link destination when it is an absolute
// http(s) URL with nothing that would end one ("" otherwise).
func link(u string) string {
	p, err := url.Parse(u)
	if err != nil || (p.Scheme != "https" && p.Scheme != "http") || p.Host == "" || strings.ContainsAny(u, " \t\r\n<>()`") {
		return ""
	}
	return u
}
