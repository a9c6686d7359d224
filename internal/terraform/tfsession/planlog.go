package tfsession

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/terraform/planparse"
	"github.com/driftwatch/driftwatch/internal/terraform/sandbox"
)

// planLog renders `plan -json`'s machine-readable stream into the run log
// without attribute values: Terraform's version, each drifted and planned
// resource as address and action, the change summary, and diagnostics
// (summary, address, file and line, and the detail, redacted by the log's
// writer), and progress as it happens: each resource's refresh and each
// data source's read as it starts and ends, with the time it took, at most
// maxProgress such lines a second (the rest folded into a count). Resource
// ids are never shown (a refresh message's id may be a secret), nor
// anything else of the stream: provisioner output and snippets carry
// values, and output messages may carry values. The human-readable plan text, values and all,
// reaches the log only where a workspace opts in (log_plan_text), never
// from here.
type planLog struct {
	vars varOrigins
	mu   sync.Mutex
	w    io.Writer // the run log's stdout writer (redacting, line based)
	// diags, if set, receives each error diagnostic whole, as Terraform
	// writes it to stderr without -json (Session.newStream).
	diags io.Writer
	buf   []byte
	// errs are the error diagnostics as one line each (summary, address,
	// location; no detail): with -json they are on stdout, not stderr.
	errs []string
	// listed, if set, receives a query's list_resource_found messages,
	// and generated, if non-nil, their generated configuration.
	listed    *[]drift.Listed
	generated []Generated
	// sum is what the stream says about the plan as a whole.
	sum streamSummary
	// red redacts an error diagnostic's detail where a reason keeps it (a
	// failed condition's message).
	red func(string) string
	// dataDiags are the diagnostics of data sources nested in check blocks,
	// as "summary: detail": a check whose problem is one of them failed
	// because its data source did, not because of its assertion.
	dataDiags map[string]bool
	// now is the clock of progress lines; started holds when each
	// resource's refresh or read began; window, shown and folded throttle
	// the progress lines (at most maxProgress in a second from window).
	now     func() time.Time
	started map[string]time.Time
	window  time.Time
	shown   int
	folded  int
}

// maxProgress bounds the progress lines a second: a plan of thousands of
// resources refreshes them in bursts, and its log must stay readable.
const maxProgress = 20

// hook is the part of a progress message's hook rendered here: the
// resource's address and the action, never the id.
type hook struct {
	Resource struct {
		Addr string `json:"addr"`
	} `json:"resource"`
	Action  string  `json:"action"`
	Elapsed float64 `json:"elapsed_seconds"`
}

// progress renders a progress message (refresh_start, refresh_complete,
// apply_start, apply_progress, apply_complete, apply_errored) as one
// line, "" for none: "refresh  ADDR: refreshing", "refresh  ADDR:
// refreshed after 31s", "read     ADDR: reading", "read     ADDR: read
// after 30s"; an apply's "apply    ADDR: creating", "still creating
// (10s)", "created after 30s", "create failed after 30s".
func (p *planLog) progress(typ string, h *hook, at time.Time) string {
	if h == nil || h.Resource.Addr == "" {
		return ""
	}
	addr := h.Resource.Addr
	took := func() string {
		d := time.Duration(h.Elapsed * float64(time.Second))
		if start, ok := p.started[addr]; ok && d == 0 {
			d = at.Sub(start)
		}
		delete(p.started, addr)
		return " after " + d.Round(time.Second).String()
	}
	verb := h.Action
	switch typ {
	case "refresh_start":
		p.started[addr] = at
		return "refresh  " + addr + ": refreshing"
	case "refresh_complete":
		return "refresh  " + addr + ": refreshed" + took()
	case "apply_start":
		p.started[addr] = at
		if verb == "read" {
			return "read     " + addr + ": reading"
		}
		return "apply    " + addr + ": " + ing(verb)
	case "apply_progress":
		d := time.Duration(h.Elapsed * float64(time.Second)).Round(time.Second)
		if verb == "read" {
			return fmt.Sprintf("read     %s: still reading (%s)", addr, d)
		}
		return fmt.Sprintf("apply    %s: still %s (%s)", addr, ing(verb), d)
	case "apply_complete":
		if verb == "read" {
			return "read     " + addr + ": read" + took()
		}
		return "apply    " + addr + ": " + ed(verb) + took()
	case "apply_errored":
		return "apply    " + addr + ": " + verb + " failed" + took()
	}
	return ""
}

// ing and ed are an apply action's forms: create -> creating, created.
func ing(action string) string {
	switch action {
	case "create", "update", "delete", "replace", "read":
		return strings.TrimSuffix(action, "e") + "ing"
	}
	return action + "ing"
}

func ed(action string) string {
	switch action {
	case "create", "update", "delete", "replace":
		return action + "d"
	}
	return action + "ed"
}

// throttle reports whether a progress line at at may be written, and
// first writes how many were folded in the window before.
func (p *planLog) throttle(at time.Time) bool {
	if at.Sub(p.window) >= time.Second {
		p.writeFolded()
		p.window, p.shown = at, 0
	}
	if p.shown < maxProgress {
		p.shown++
		return true
	}
	p.folded++
	return false
}

// writeFolded writes the count of progress lines left out, if any.
func (p *planLog) writeFolded() {
	if p.folded > 0 {
		_, _ = fmt.Fprintf(p.w, "(%d more progress lines)\n", p.folded)
		p.folded = 0
	}
}

// Summaries of the diagnostics of failed conditions, as Terraform and
// OpenTofu write them. A check block's assertion that fails or is unknown
// warns with a summary that starts with checkAssertion.
const (
	checkAssertion       = "Check block assertion"
	summaryPostcondition = "Resource postcondition failed"
	summaryPrecondition  = "Resource precondition failed"
	summaryOutputPre     = "Module output value precondition failed"
	summaryVariable      = "Invalid value for variable"
)

// conditionFailed reports whether an error diagnostic's summary is one of
// a failed condition: a resource's or output's precondition or
// postcondition, or a variable's validation.
func conditionFailed(summary string) bool {
	switch summary {
	case summaryPostcondition, summaryPrecondition, summaryOutputPre, summaryVariable:
		return true
	}
	return false
}

// streamSummary counts what a `plan -json` stream reported: enough to tell
// a plan with nothing to classify (streamSummary.nothing) from one that
// needs `show -json`.
type streamSummary struct {
	// version is the stream's version message was seen; summary its
	// change_summary.
	version, summary bool
	// changes is the change_summary's add+change+remove+import.
	changes int
	// drift, planned and outputs count resource_drift, planned_change and
	// root outputs whose action is not a no-op.
	drift, planned, outputs int
	// unread is set when a line was not read as a UI message (not JSON, or
	// too long to keep): it may have been a change.
	unread bool
	// checks counts warnings raised within check blocks (a failing or
	// unknown assertion, a nested data source's failure): show -json has
	// the checks' results.
	checks int
}

// nothing reports whether the stream was complete (a version message and a
// change summary), every line of it read, and reported no change of any
// kind: no drift (relevant or not), no planned change (no-op moves and
// imports included), no output change, a zero summary, and no warning from
// within a check block (a failing check is a finding that only show -json
// describes in full: its address with module path, its kind, every
// message).
func (s streamSummary) nothing() bool {
	return s.version && s.summary && !s.unread && s.changes == 0 && s.drift == 0 && s.planned == 0 && s.outputs == 0 && s.checks == 0
}

// summary is the stream's summary so far.
func (p *planLog) summary() streamSummary {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.sum
}

// reason is the first error diagnostic, and how many more there were, in
// sandbox.Diagnostic's form; "" if there was none.
func (p *planLog) reason() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.errs) == 0 {
		return ""
	}
	return p.errs[0] + sandbox.MoreErrors(len(p.errs)-1)
}

// newPlanLog renders into w; red redacts the messages of failed conditions
// that a reason keeps; vars tells where variables' values came from.
func newPlanLog(w io.Writer, red func(string) string, vars varOrigins) *planLog {
	return &planLog{w: w, red: red, vars: vars, dataDiags: map[string]bool{}, now: time.Now, started: map[string]time.Time{}}
}

// varOrigins tells where a variable's value came from, which a
// diagnostic's range does not say plainly: Terraform points at the file
// it read the value from (for the inventory's vars that is the run's own
// var file, whose name and path mean nothing to a reader; var files are
// read from the run's copy of the source), OpenTofu at the variable's
// declaration, and neither names the environment.
type varOrigins struct {
	// file is the run's var file of the inventory's vars, moduleDir the
	// module in the run's copy of the source.
	file, moduleDir string
	// inventory and env are the variables the inventory's vars and the
	// workspace's environment (TF_VAR_NAME) set; varFiles tells whether
	// the workspace reads var files.
	inventory, env map[string]bool
	varFiles       bool
}

// origin is where variable name's value came from: the inventory's vars
// (which win over every other source), the var file or declaration
// Terraform names (relative to the module), or the environment when
// nothing else can have set it.
func (v varOrigins) origin(name, file string, line int) string {
	switch {
	case v.inventory[name]: // the run's var file holds only these
		return "from the inventory's vars"
	case v.env[name] && !v.varFiles:
		return "from TF_VAR_" + name + " in the workspace's env"
	}
	return v.place(file, line)
}

// place is "FILE line N", FILE relative to the module when it lies in the
// run's copy of the source; "" without a file.
func (v varOrigins) place(file string, line int) string {
	if file == "" {
		return ""
	}
	if v.file != "" && file == v.file {
		return "the inventory's vars"
	}
	if v.moduleDir != "" && filepath.IsAbs(file) {
		if rel, err := filepath.Rel(v.moduleDir, file); err == nil && filepath.IsLocal(rel) {
			file = rel
		}
	}
	return fmt.Sprintf("%s line %d", file, line)
}

// checkDataFailure reports whether msg, a check's problem, is the failure
// of a data source nested in a check block.
func (p *planLog) checkDataFailure(msg string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.dataDiags[msg]
}

// Write takes the stream; complete lines are rendered.
func (p *planLog) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.buf = append(p.buf, b...)
	for {
		i := bytes.IndexByte(p.buf, '\n')
		if i < 0 {
			break
		}
		p.render(p.buf[:i])
		p.buf = p.buf[i+1:]
	}
	if len(p.buf) > maxLogLine*16 {
		p.buf = p.buf[:0] // a message this long is not one to show
		p.sum.unread = true
	}
	p.buf = append([]byte(nil), p.buf...)
	return len(b), nil
}

// uiMessage is the part of a machine-readable UI message rendered here.
type uiMessage struct {
	Level   string `json:"@level"`
	Message string `json:"@message"`
	Type    string `json:"type"`
	Hook    *hook  `json:"hook"`
	Change  *struct {
		Resource struct {
			Addr string `json:"addr"`
		} `json:"resource"`
		Action string `json:"action"`
		Reason string `json:"reason"`
	} `json:"change"`
	Changes *struct {
		Add, Change, Import, Remove int
	} `json:"changes"`
	// Outputs is an outputs message: root module outputs by name.
	Outputs map[string]struct {
		Action string `json:"action"`
	} `json:"outputs"`
	// ListFound and ListComplete are a query's messages
	// (list_resource_found, list_complete).
	ListFound *struct {
		DisplayName  string          `json:"display_name"`
		Identity     json.RawMessage `json:"identity"`
		ResourceType string          `json:"resource_type"`
		Config       string          `json:"config"`
		ImportConfig string          `json:"import_config"`
	} `json:"list_resource_found"`
	ListComplete *struct {
		Address string `json:"address"`
		Total   int    `json:"total"`
	} `json:"list_complete"`
	Diagnostic *struct {
		Severity string `json:"severity"`
		Summary  string `json:"summary"`
		Detail   string `json:"detail"`
		Address  string `json:"address"`
		Range    *struct {
			Filename string `json:"filename"`
			Start    struct {
				Line int `json:"line"`
			} `json:"start"`
		} `json:"range"`
		// Snippet is read for its context (the enclosing block's header)
		// only: its values hold the values of the expression's references
		// and are never decoded.
		// Of its values, only the traversals (var.size) are read, which
		// name a variable; their statements hold values.
		Snippet *struct {
			Context string `json:"context"`
			Values  []struct {
				Traversal string `json:"traversal"`
			} `json:"values"`
		} `json:"snippet"`
	} `json:"diagnostic"`
}

var actionSigns = map[string]string{
	"create": "+", "read": "<=", "update": "~", "delete": "-", "replace": "-/+",
	"move": "->", "import": "<-", "remove": "x", "noop": " ",
}

func (p *planLog) render(line []byte) {
	line = bytes.TrimSpace(line)
	if len(line) == 0 {
		return
	}
	var m uiMessage
	if json.Unmarshal(line, &m) != nil {
		p.sum.unread = true
		return // not a UI message: nothing of it is shown
	}
	var out string
	switch m.Type {
	case "refresh_start", "refresh_complete", "apply_start", "apply_progress", "apply_complete", "apply_errored":
		at := p.now()
		if line := p.progress(m.Type, m.Hook, at); line != "" && p.throttle(at) {
			out = line
		}
	case "version":
		out = m.Message
		p.sum.version = true
	case "resource_drift":
		p.sum.drift++
		if m.Change != nil {
			out = fmt.Sprintf("drift  %-3s %s  %s (changed outside Terraform)", actionSigns[m.Change.Action], m.Change.Action, m.Change.Resource.Addr)
		}
	case "planned_change":
		p.sum.planned++
		if m.Change != nil {
			out = fmt.Sprintf("plan   %-3s %s  %s", actionSigns[m.Change.Action], m.Change.Action, m.Change.Resource.Addr)
			if m.Change.Reason != "" {
				out += " (" + strings.ReplaceAll(m.Change.Reason, "_", " ") + ")"
			}
		}
	case "outputs":
		for _, o := range m.Outputs {
			if o.Action != "noop" {
				p.sum.outputs++
			}
		}
	case "list_resource_found":
		if f := m.ListFound; f != nil && p.listed != nil {
			l := drift.Listed{Type: f.ResourceType, DisplayName: f.DisplayName, Identity: drift.IdentityOf(f.Identity)}
			*p.listed = append(*p.listed, l)
			if p.generated != nil {
				p.generated = append(p.generated, Generated{Listed: l, Config: f.Config, Import: f.ImportConfig})
			}
		}
	case "list_complete":
		if c := m.ListComplete; c != nil {
			out = fmt.Sprintf("list   %s: %d found", c.Address, c.Total)
		}
	case "change_summary":
		if c := m.Changes; c != nil {
			p.sum.summary = true
			p.sum.changes += c.Add + c.Change + c.Remove + c.Import
			out = fmt.Sprintf("Plan: %d to add, %d to change, %d to destroy.", c.Add, c.Change, c.Remove)
			if c.Import > 0 {
				out = fmt.Sprintf("Plan: %d to import, %d to add, %d to change, %d to destroy.", c.Import, c.Add, c.Change, c.Remove)
			}
		}
	case "diagnostic":
		if d := m.Diagnostic; d != nil {
			file, line := "", 0
			if d.Range != nil {
				file, line = d.Range.Filename, d.Range.Start.Line
			}
			at := p.vars.place(file, line)
			addr := d.Address
			if d.Summary == summaryVariable && addr == "" && d.Snippet != nil {
				// Where the value came from, rather than the file (one of
				// the run's own) Terraform read it from.
				for _, v := range d.Snippet.Values {
					if name, ok := strings.CutPrefix(v.Traversal, "var."); ok {
						addr, at = v.Traversal, p.vars.origin(name, file, line)
						break
					}
				}
			}
			out = diagnosticText(d.Severity, d.Summary, addr, d.Detail, at)
			var context string
			if d.Snippet != nil {
				context = d.Snippet.Context
			}
			if d.Severity == "warning" && strings.HasPrefix(context, `check "`) {
				p.sum.checks++
				if !strings.HasPrefix(d.Summary, checkAssertion) {
					// A nested data source failed: Terraform records it as
					// the check's problem, "summary: detail".
					p.dataDiags[d.Summary+": "+d.Detail] = true
					if d.Detail == "" {
						p.dataDiags[d.Summary] = true
					}
				}
			}
			if d.Severity == "error" {
				reason := diagnosticText(d.Severity, d.Summary, addr, "", at)
				if conditionFailed(d.Summary) {
					reason = conditionReason(d.Summary, addr, context, d.Detail, at, p.red)
				}
				// A failed call of the state backend says so, from the
				// summary or the detail (which the reason otherwise omits).
				if r, ok := sandbox.BackendFailure(d.Summary, d.Summary+"\n\n"+d.Detail); ok {
					reason = r
				}
				p.errs = append(p.errs, reason)
				if p.diags != nil {
					_, _ = fmt.Fprintf(p.diags, "Error: %s\n\n%s\n\n", d.Summary, d.Detail)
				}
			}
		}
	}
	if out != "" {
		_, _ = io.WriteString(p.w, out+"\n")
	}
}

// conditionReason is the reason of a failed condition: its summary, the
// object it belongs to (the diagnostic's address, else the block its
// snippet names), where, and its author's message, redacted, without
// Terraform's "This was checked by..." trailer, one line, capped.
func conditionReason(summary, addr, context, detail, at string, red func(string) string) string {
	if addr == "" {
		addr = blockAddress(context)
	}
	s := diagnosticText("error", summary, addr, "", at)
	if msg := conditionMessage(detail); msg != "" {
		if red != nil {
			msg = red(msg)
		}
		s += ": " + drift.CapDetail(msg)
	}
	return s
}

// conditionMessage is a failed condition's detail without the trailer
// Terraform appends to a variable validation's ("This was checked by the
// validation rule at ...").
func conditionMessage(detail string) string {
	if i := strings.Index(detail, "\n\nThis was checked by "); i >= 0 {
		detail = detail[:i]
	}
	return strings.TrimSpace(detail)
}

// blockAddress turns a diagnostic snippet's context, the header of the
// block it is in, into that block's address: check "health" → check.health,
// resource "T" "N" → T.N, data "T" "N" → data.T.N, output "o" → output.o,
// variable "n" → var.n. Any other context gives "". Module paths are not
// in a context.
func blockAddress(context string) string {
	f := strings.Fields(context)
	for i := range f {
		f[i] = strings.Trim(f[i], `"`)
	}
	switch {
	case len(f) == 2 && f[0] == "check":
		return "check." + f[1]
	case len(f) == 2 && f[0] == "output":
		return "output." + f[1]
	case len(f) == 2 && f[0] == "variable":
		return "var." + f[1]
	case len(f) == 3 && f[0] == "resource":
		return f[1] + "." + f[2]
	case len(f) == 3 && f[0] == "data":
		return "data." + f[1] + "." + f[2]
	}
	return ""
}

func diagnosticText(severity, summary, addr, detail, at string) string {
	sev := "Error"
	if severity == "warning" {
		sev = "Warning"
	}
	s := sev + ": " + summary
	var where []string
	if addr != "" {
		where = append(where, addr)
	}
	if at != "" {
		where = append(where, at)
	}
	if len(where) > 0 {
		s += " (" + strings.Join(where, ", ") + ")"
	}
	if detail = strings.TrimSpace(detail); detail != "" {
		s += "\n    " + strings.ReplaceAll(detail, "\n", "\n    ")
	}
	return s
}

// flush renders a last line without its newline.
func (p *planLog) flush() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.render(p.buf)
	p.buf = p.buf[:0]
	p.writeFolded()
}

// writeChanges lists, after show, what the plan found: per drifted or
// changed resource its address, actions and changed attribute paths, never
// their values.
func writeChanges(w io.Writer, plan *planparse.Plan) {
	line := func(kind string, c planparse.Change) {
		s := fmt.Sprintf("%-7s %s  %s", kind, strings.Join(c.Actions, ","), c.Address)
		if len(c.Attributes) > 0 {
			s += "  attributes: " + strings.Join(c.Attributes, ", ")
		}
		_, _ = io.WriteString(w, s+"\n")
	}
	for _, c := range plan.Drift {
		line("drift", c)
	}
	for _, c := range plan.Changes {
		line("change", c)
	}
	for _, o := range plan.OutputChanges {
		_, _ = io.WriteString(w, "output  "+o+"\n")
	}
	if len(plan.Drift)+len(plan.Changes)+len(plan.OutputChanges) == 0 {
		_, _ = io.WriteString(w, "no changes\n")
	}
}
