package tfsession

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/hashicorp/terraform-exec/tfexec"

	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/terraform"
	"github.com/driftwatch/driftwatch/internal/terraform/sandbox"
)

// Options are what a Session is built from: what the caller prepared for
// the run in its sandbox.
type Options struct {
	// Request is the run's request. The session reads its Binary, Jail,
	// JailPaths, CLIConfigFile, PluginCacheDir, TFWorkspace, VarFiles, Vars
	// and BackendConfig.
	Request terraform.Request
	// Dir is the run directory (sandbox.NewDir); ModuleDir is the module in
	// the run's copy of the source (sandbox.PrepareSource).
	Dir, ModuleDir string
	// Env is the child's whole environment (sandbox.BuildEnv).
	Env map[string]string
	// Secrets are redacted from every reason and from the log: the secret
	// env values, terraform.Request.Redact, sandbox.SensitiveValues and
	// backend.ConfigSecrets. The log redacts the values of Request.Vars
	// too, and every URL's user info and query string (sandbox.Redactor).
	Secrets []string
	// Grace is how long Terraform gets to stop after SIGINT before it is
	// killed (sandbox.Begin).
	Grace time.Duration
	// Log, if set, receives Terraform's output as terraform.Request.Log says:
	// complete, redacted lines under "== phase ==" headers, the plan
	// rendered without values, never show -json. Without it, Terraform's
	// stdout is dropped and its stderr only explains failures.
	Log io.Writer
	// StepDiagnostics explains a failed step from its own stderr only
	// (Stderr is then the last step's); otherwise from the run's stderr so
	// far.
	StepDiagnostics bool
	// LockTimeout is how long a plan with Lock and an apply wait for the
	// state lock (in whole seconds; zero fails at once).
	LockTimeout time.Duration
	// Shared, if set, is shared with the process's other sessions: the
	// lock on cold inits of the plugin cache and the version cache.
	Shared *Shared
	// Phases, if set, records the phases marked with Session.Phase.
	Phases *Phases
}

// Session is one run's Terraform: every step of the run goes through it.
// It is not safe for concurrent use: a run's steps follow each other.
type Session struct {
	req      terraform.Request
	bin      string
	red      sandbox.Redactor
	log      *runLog
	stderr   *sandbox.Tail
	stepDiag bool
	jail     *sandbox.Jail
	// cmd runs the steps terraform-exec does not serve as needed: init (no
	// extra version process), version, and show (streamed).
	cmd      *sandbox.Command
	tf       *tfexec.Terraform
	varFiles []string
	// vars tells a failed variable validation where the value came from.
	vars     varOrigins
	lockWait string
	shared   *Shared
	phases   *Phases
	// nothing is set by a Plan whose stream reported no change at all
	// (Unchanged).
	nothing bool
	// stream is the last Plan's rendered stream (with JSON): Show asks it
	// which checks failed because a nested data source did.
	stream *planLog
}

// stderrTail bounds the stderr a failure is explained from.
const stderrTail = 16 << 10

// Open builds the session: it resolves the binary, prepares the run's jail
// and writes the variables file. Its error is a *terraform.Error of phase
// setup. Close the session when the run ends.
func Open(o Options) (*Session, error) {
	s := &Session{
		req:      o.Request,
		red:      sandbox.NewRedactor(o.Secrets),
		log:      newRunLog(o.Log, logRedactor(o.Secrets, o.Request.Vars)),
		stderr:   sandbox.NewTail(stderrTail),
		stepDiag: o.StepDiagnostics,
		lockWait: lockWait(o.LockTimeout),
		shared:   o.Shared,
		phases:   o.Phases,
	}
	setup := func(err error) (*Session, error) {
		s.Close()
		return nil, &terraform.Error{Phase: "setup", Reason: s.red.Apply(sandbox.FirstLine(err.Error())), Err: err}
	}
	bin, err := sandbox.ResolveBinary(o.Request.Binary, o.Env["PATH"])
	if err != nil {
		return setup(err)
	}
	s.bin = bin
	if s.jail, err = sandbox.NewJail(o.Request, o.Dir, bin); err != nil {
		return setup(err)
	}
	stderr := s.log.tee(s.stderr)
	s.cmd = &sandbox.Command{Bin: bin, Jail: s.jail, Dir: o.ModuleDir, Env: sandbox.EnvList(o.Env), Grace: o.Grace, Stderr: stderr}

	tf, err := tfexec.NewTerraform(o.ModuleDir, s.jail.Exe())
	if err != nil {
		return setup(err)
	}
	if err := tf.SetEnv(o.Env); err != nil {
		return setup(err)
	}
	// Stdout is dropped but where a step says otherwise: a plan's or an
	// apply's text holds attribute values.
	tf.SetStdout(io.Discard)
	tf.SetStderr(stderr)
	if err := tf.SetWaitDelay(o.Grace); err != nil {
		return setup(err)
	}
	s.tf = tf

	for _, f := range o.Request.VarFiles {
		if !filepath.IsAbs(f) {
			f = filepath.Join(o.ModuleDir, f)
		}
		s.varFiles = append(s.varFiles, f)
	}
	s.vars = varOrigins{moduleDir: o.ModuleDir, inventory: map[string]bool{}, env: map[string]bool{}, varFiles: len(s.varFiles) > 0}
	for name := range o.Request.Vars {
		s.vars.inventory[name] = true
	}
	for k := range o.Env {
		if name, ok := strings.CutPrefix(k, "TF_VAR_"); ok {
			s.vars.env[name] = true
		}
	}
	if len(o.Request.Vars) > 0 {
		// Variables go through a file, never -var: argv is visible to every
		// user of the machine, and terraform-exec logs it.
		f := filepath.Join(o.Dir, "driftwatch-vars.tfvars.json")
		b, _ := json.Marshal(o.Request.Vars)
		if err := os.WriteFile(f, b, 0o600); err != nil {
			return setup(err)
		}
		s.varFiles = append(s.varFiles, f)
		s.vars.file = f
	}
	return s, nil
}

// Close releases the jail and writes the log's partial last lines. The
// run directory is the caller's.
func (s *Session) Close() {
	if s.jail != nil {
		s.jail.Close()
	}
	s.log.flush()
}

// Binary is the resolved Terraform binary's path.
func (s *Session) Binary() string { return s.bin }

// Stderr is Terraform's stderr that failures are explained from (the
// last 16 KiB): the last step's with StepDiagnostics, else the run's.
func (s *Session) Stderr() string { return s.stderr.String() }

// Phase ends the phase name: it took the time since the previous Phase
// (or since NewPhases).
func (s *Session) Phase(name string) {
	if s.phases != nil {
		s.phases.Mark(name)
	}
}

// step starts a step: its log header and, with StepDiagnostics, a fresh
// stderr tail.
func (s *Session) step(header string) {
	s.log.header(header)
	if s.stepDiag {
		s.stderr.Reset()
	}
}

// fail is a failed step as a *terraform.Error: its phase, the one-line
// reason from Terraform's diagnostics and the error's first line, both
// redacted.
func (s *Session) fail(phase string, err error) error {
	s.log.flush()
	return &terraform.Error{Phase: phase, Reason: s.red.Apply(sandbox.Diagnostic(s.stderr.String(), err)), Err: s.firstLine(err)}
}

// firstLine is err's first line, redacted: terraform-exec's errors carry
// the whole stderr.
func (s *Session) firstLine(err error) error {
	return errors.New(s.red.Apply(sandbox.FirstLine(sandbox.ErrorText(err))))
}

// Phases times a run's phases: each Mark ends one, which began at the
// previous Mark (or at NewPhases).
type Phases struct {
	list  *[]drift.Phase
	start time.Time
}

// NewPhases starts the clock; Mark appends to *list.
func NewPhases(list *[]drift.Phase) *Phases { return &Phases{list: list, start: time.Now()} }

// Mark ends the phase name.
func (p *Phases) Mark(name string) {
	*p.list = append(*p.list, drift.Phase{Name: name, Duration: time.Since(p.start)})
	p.start = time.Now()
}

// lockWait is d as a -lock-timeout value, in whole seconds.
func lockWait(d time.Duration) string {
	return fmt.Sprintf("%ds", int(d.Round(time.Second)/time.Second))
}
