package report

import (
	"context"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/driftwatch/driftwatch/internal/drift"
)

// Version of the JSON report contract. Version 2 added findings of kind
// check, the status validation and summary.validation.
const Version = 2

// Exit codes of `driftwatch audit`, mirroring -detailed-exitcode.
const (
	ExitClean   = 0
	ExitError   = 1
	ExitChanges = 2
)

// Report is the JSON report contract.
type Report struct {
	Version    int         `json:"version"`
	StartedAt  time.Time   `json:"started_at"`
	FinishedAt time.Time   `json:"finished_at"`
	Summary    Summary     `json:"summary"`
	Workspaces []Workspace `json:"workspaces"`
	// Groups are the findings of several workspaces that share one cause
	// (GroupFindings); omitted when there are none.
	Groups []Group `json:"groups,omitempty"`
	// SourceRoot is the directory that SARIF and GitHub annotation file
	// paths are relative to: the repository's checkout (in GitHub Actions,
	// $GITHUB_WORKSPACE); empty: the working directory. It is not part of
	// the JSON contract.
	SourceRoot string `json:"-"`
}

// Summary counts workspaces by status.
type Summary struct {
	Clean     int `json:"clean"`
	Drift     int `json:"drift"`
	Pending   int `json:"pending"`
	Forbidden int `json:"forbidden"`
	// Validation counts workspaces whose status is validation: failing or
	// unknown checks, and neither drift nor forbidden resources.
	Validation int `json:"validation"`
	Errored    int `json:"errored"`
	// Hygiene counts workspaces with state-backend findings (kind backend),
	// whatever their status.
	Hygiene int `json:"hygiene"`
}

// Workspace is one workspace's entry in the report.
type Workspace struct {
	Name       string            `json:"name"`
	Status     drift.Status      `json:"status"`
	DurationMS int64             `json:"duration_ms"`
	Error      string            `json:"error"`
	Labels     map[string]string `json:"labels,omitempty"`
	Tool       string            `json:"tool,omitempty"`
	Findings   []drift.Finding   `json:"findings"`
	// SourceDir is the workspace's root module directory (absolute, or
	// relative to Report.SourceRoot), where SARIF results and GitHub
	// annotations locate its findings; empty when unknown (then
	// SourceRoot itself). It is not part of the JSON contract.
	SourceDir string `json:"-"`
}

// New builds a report from results.
func New(started, finished time.Time, results []drift.Result) *Report {
	r := &Report{Version: Version, StartedAt: started.UTC(), FinishedAt: finished.UTC(), Workspaces: []Workspace{}}
	for _, res := range results {
		fs := res.Findings
		if fs == nil {
			fs = []drift.Finding{}
		}
		for i := range fs {
			if fs[i].Attributes == nil {
				fs[i].Attributes = []string{}
			}
		}
		r.Workspaces = append(r.Workspaces, Workspace{
			Name: res.Workspace, Status: res.Status, DurationMS: res.Duration.Milliseconds(),
			Error: res.Error, Labels: res.Labels, Tool: res.Tool, Findings: fs,
		})
		if drift.CountFindings(fs).Hygiene > 0 {
			r.Summary.Hygiene++
		}
		switch res.Status {
		case drift.StatusClean:
			r.Summary.Clean++
		case drift.StatusDrift:
			r.Summary.Drift++
		case drift.StatusPending:
			r.Summary.Pending++
		case drift.StatusForbidden:
			r.Summary.Forbidden++
		case drift.StatusValidation:
			r.Summary.Validation++
		case drift.StatusErrored:
			r.Summary.Errored++
		}
	}
	return r
}

// ExitCode is 1 if any workspace errored, else 2 if any has drift, pending
// changes, forbidden resources or failing checks (or, when strict, backend
// findings), else 0.
func (r *Report) ExitCode(strict bool) int {
	switch {
	case r.Summary.Errored > 0:
		return ExitError
	case r.Summary.Drift+r.Summary.Pending+r.Summary.Forbidden+r.Summary.Validation > 0:
		return ExitChanges
	case strict && r.Summary.Hygiene > 0:
		return ExitChanges
	}
	return ExitClean
}

// Formats lists the supported output formats.
var Formats = []string{"table", "json", "markdown", "junit", "sarif"}

// Write renders r in format to w (sarif: WriteSARIF).
func Write(w io.Writer, format string, r *Report) error {
	switch format {
	case "table", "":
		return writeTable(w, r)
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	case "markdown":
		return writeMarkdown(w, r)
	case "junit":
		return writeJUnit(w, r)
	case "sarif":
		return WriteSARIF(context.Background(), w, r)
	}
	return fmt.Errorf("unknown format %q (use one of %s)", format, strings.Join(Formats, ", "))
}

func counted(fs []drift.Finding) []drift.Finding {
	var out []drift.Finding
	for _, f := range fs {
		if f.Kind != drift.KindNoise && !f.Ignored {
			out = append(out, f)
		}
	}
	return out
}

func withoutKind(fs []drift.Finding, k drift.Kind) []drift.Finding {
	var out []drift.Finding
	for _, f := range fs {
		if f.Kind != k {
			out = append(out, f)
		}
	}
	return out
}

func attrs(f drift.Finding) string {
	if len(f.ManagedBy) > 0 {
		return strings.TrimPrefix(f.Detail+"; managed by "+strings.Join(f.ManagedBy, " and "), "; ")
	}
	if f.Detail != "" {
		return f.Detail
	}
	if len(f.SeenIn) > 0 && len(f.Attributes) == 0 {
		return "in " + strings.Join(f.SeenIn, ", ")
	}
	return strings.Join(f.Attributes, ", ")
}

func writeTable(w io.Writer, r *Report) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "WORKSPACE\tSTATUS\tDRIFT\tPENDING\tFORBIDDEN\tCHECK\tDURATION\tDETAIL")
	for _, ws := range r.Workspaces {
		c := drift.CountFindings(ws.Findings)
		detail := ws.Error
		if detail == "" {
			var parts []string
			for _, p := range []struct {
				n    int
				what string
			}{{c.Unmanaged, "unmanaged"}, {c.ManagedTwice, "managed twice"}, {c.Noise, "noise"}} {
				if p.n > 0 {
					parts = append(parts, fmt.Sprintf("%d %s", p.n, p.what))
				}
			}
			detail = strings.Join(parts, ", ")
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%s\t%s\n", ws.Name, ws.Status, c.Drift, c.Pending, c.Forbidden, c.Check,
			(time.Duration(ws.DurationMS) * time.Millisecond).Round(100*time.Millisecond), detail)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	ftw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	header := false
	for _, ws := range r.Workspaces {
		for _, f := range counted(ws.Findings) {
			if !header {
				fmt.Fprintln(ftw, "\nWORKSPACE\tKIND\tACTION\tADDRESS\tATTRIBUTES / DETAIL")
				header = true
			}
			fmt.Fprintf(ftw, "%s\t%s\t%s\t%s\t%s\n", ws.Name, f.Kind, f.Action, f.Address, attrs(f))
		}
	}
	if err := ftw.Flush(); err != nil {
		return err
	}
	if err := writeGroupsTable(w, r.Groups); err != nil {
		return err
	}
	s := r.Summary
	_, err := fmt.Fprintf(w, "\n%d workspaces: %d clean, %d drift, %d pending, %d forbidden, %d validation, %d errored; %d with state-backend findings\n",
		len(r.Workspaces), s.Clean, s.Drift, s.Pending, s.Forbidden, s.Validation, s.Errored, s.Hygiene)
	return err
}

// mdEscape keeps user-controlled text from breaking a Markdown table.
func mdEscape(s string) string {
	r := strings.NewReplacer("|", `\|`, "\n", " ", "`", "'", "<", "&lt;", ">", "&gt;")
	return r.Replace(s)
}

func writeMarkdown(w io.Writer, r *Report) error {
	s := r.Summary
	var b strings.Builder
	icon := map[drift.Status]string{drift.StatusClean: "✅", drift.StatusPending: "🕓", drift.StatusDrift: "⚠️", drift.StatusForbidden: "⛔", drift.StatusErrored: "❌", drift.StatusValidation: "🔎"}
	fmt.Fprintf(&b, "## driftwatch audit\n\n%d workspaces: **%d drift**, **%d forbidden**, **%d validation**, %d pending, %d errored, %d clean; %d with state-backend findings.\n\n",
		len(r.Workspaces), s.Drift, s.Forbidden, s.Validation, s.Pending, s.Errored, s.Clean, s.Hygiene)
	b.WriteString("| Workspace | Status | Drift | Pending | Forbidden | Check | Duration | Detail |\n|---|---|---:|---:|---:|---:|---:|---|\n")
	for _, ws := range r.Workspaces {
		c := drift.CountFindings(ws.Findings)
		fmt.Fprintf(&b, "| %s | %s %s | %d | %d | %d | %d | %s | %s |\n", mdEscape(ws.Name), icon[ws.Status], ws.Status,
			c.Drift, c.Pending, c.Forbidden, c.Check, (time.Duration(ws.DurationMS) * time.Millisecond).Round(100*time.Millisecond), mdEscape(ws.Error))
	}
	writeGroupsMarkdown(&b, r.Groups)
	for _, ws := range r.Workspaces {
		fs := counted(ws.Findings)
		if len(fs) == 0 {
			continue
		}
		fmt.Fprintf(&b, "\n<details><summary><code>%s</code>: %d findings</summary>\n\n| Kind | Action | Address | Attributes / detail |\n|---|---|---|---|\n", mdEscape(ws.Name), len(fs))
		for _, f := range fs {
			fmt.Fprintf(&b, "| %s | %s | `%s` | %s |\n", f.Kind, f.Action, mdEscape(f.Address), mdEscape(attrs(f)))
		}
		b.WriteString("\n</details>\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Time     string       `xml:"time,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Errors   int         `xml:"errors,attr"`
	Time     string      `xml:"time,attr"`
	Cases    []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      string        `xml:"time,attr"`
	Failure   *junitMessage `xml:"failure,omitempty"`
	Error     *junitMessage `xml:"error,omitempty"`
}

type junitMessage struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Body    string `xml:",chardata"`
}

// writeJUnit renders one test suite per workspace and one test case per
// counted finding; a clean workspace is one passing case, an errored one an
// error case, so CI test tabs show drift as failures.
func writeJUnit(w io.Writer, r *Report) error {
	out := junitSuites{Name: "driftwatch", Time: secs(r.FinishedAt.Sub(r.StartedAt).Milliseconds())}
	for _, ws := range r.Workspaces {
		s := junitSuite{Name: ws.Name, Time: secs(ws.DurationMS)}
		switch fs := withoutKind(counted(ws.Findings), drift.KindBackend); {
		case ws.Status == drift.StatusErrored:
			s.Cases = append(s.Cases, junitCase{Name: "plan", Classname: ws.Name, Time: s.Time,
				Error: &junitMessage{Message: ws.Error, Type: "errored", Body: ws.Error}})
			s.Errors++
		case len(fs) == 0:
			s.Cases = append(s.Cases, junitCase{Name: "no drift", Classname: ws.Name, Time: s.Time})
		default:
			sort.SliceStable(fs, func(i, j int) bool { return fs[i].Address < fs[j].Address })
			for _, f := range fs {
				msg := fmt.Sprintf("%s: %s %s", f.Kind, f.Action, f.Address)
				if a := attrs(f); a != "" {
					msg += " (" + a + ")"
				}
				s.Cases = append(s.Cases, junitCase{Name: f.Address, Classname: ws.Name + "." + string(f.Kind), Time: "0",
					Failure: &junitMessage{Message: msg, Type: string(f.Kind), Body: msg}})
				s.Failures++
			}
		}
		s.Tests = len(s.Cases)
		out.Tests += s.Tests
		out.Failures += s.Failures
		out.Errors += s.Errors
		out.Suites = append(out.Suites, s)
	}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(out); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}

func secs(ms int64) string { return fmt.Sprintf("%.3f", float64(ms)/1000) }
