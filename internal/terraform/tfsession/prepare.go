package tfsession

import (
	"context"
	"os"
	"slices"

	"github.com/driftwatch/driftwatch/internal/backend"
	"github.com/driftwatch/driftwatch/internal/terraform"
	"github.com/driftwatch/driftwatch/internal/terraform/sandbox"
)

// PrepareOptions are what Prepare sets a run up from.
type PrepareOptions struct {
	// Options are the session's: Request, Grace, Log, StepDiagnostics,
	// LockTimeout, Shared and Phases. Prepare fills in Dir, ModuleDir, Env
	// and Secrets.
	Options
	// DirPrefix names the run directory: sandbox.DetectDirPrefix or
	// sandbox.ApplyDirPrefix.
	DirPrefix string
	// Marker tags the run's processes (sandbox.Begin).
	Marker string
	// Sourced, if set, is called once the source is in place and the
	// secrets are known, before the session opens (detection's static
	// backend check, which holds even when the session fails). The
	// "source" phase ends after it.
	Sourced func(p *Prepared)
}

// Prepared is one run's sandbox and its open Terraform session.
type Prepared struct {
	// Dir is the run directory (sandbox.NewDir), removed by Close.
	Dir string
	// ModuleDir is the module in the run's copy of the source, Commit the
	// resolved commit of a git source.
	ModuleDir, Commit string
	// Env is Terraform's whole environment (sandbox.BuildEnv).
	Env map[string]string
	// Secrets are every value the run redacts, and Redactor redacts them.
	Secrets  []string
	Redactor sandbox.Redactor
	Session  *Session
}

// Prepare sets up a run of o.Request, the same way for a detection and
// for a remediation's apply: a fresh run directory, the scrubbed
// environment, the code copied or checked out into it, the values to
// redact (the environment's secrets, every secret the daemon knows
// (Request.Redact), the backend_config values, the values of variables
// declared sensitive), then the Terraform session (Open).
//
// Its error is a *terraform.Error of phase setup or source whose reason
// is redacted of every value known when it failed, and which wraps the
// cause; or Open's. On error nothing is left behind: the run directory is
// removed. Otherwise Close the result when the run ends.
func Prepare(ctx context.Context, o PrepareOptions) (*Prepared, error) {
	req := o.Request
	// Every secret the daemon knows is redacted, not only this workspace's;
	// and every backend_config value (the files' values once the source
	// is in place: a relative file lies in it).
	secrets := slices.Concat(req.Redact, backend.ConfigSecrets(req.BackendConfig, nil))
	p := &Prepared{Redactor: sandbox.NewRedactor(secrets)}
	fail := func(phase string, err error) (*Prepared, error) {
		p.Close()
		return nil, &terraform.Error{Phase: phase, Reason: p.Redactor.Apply(sandbox.ErrorText(err)), Err: err}
	}
	var err error
	if p.Dir, err = sandbox.NewDir(req.WorkDir, o.DirPrefix, req.Owner); err != nil {
		return fail("setup", err)
	}
	env, envSecrets, err := sandbox.BuildEnv(req, p.Dir, o.Marker)
	if err != nil {
		return fail("setup", err)
	}
	secrets = append(envSecrets, secrets...)
	p.Env, p.Redactor = env, sandbox.NewRedactor(secrets)

	moduleDir, commit, err := sandbox.PrepareSource(ctx, req, p.Dir)
	if err != nil {
		return fail("source", err)
	}
	// Values of variables declared sensitive (var files, vars, TF_VAR_)
	// are redacted too: a provider's error message prints them verbatim.
	src := sandbox.SourceDir(p.Dir)
	secrets = append(secrets, sandbox.SensitiveValues(ctx, src, moduleDir, req.VarFiles, req.Vars, req.Env)...)
	secrets = append(secrets, backend.ConfigSecrets(req.BackendConfig, backend.ConfigFileReader(ctx, src, moduleDir))...)
	p.ModuleDir, p.Commit, p.Secrets, p.Redactor = moduleDir, commit, secrets, sandbox.NewRedactor(secrets)
	if o.Sourced != nil {
		o.Sourced(p)
	}
	if o.Phases != nil {
		o.Phases.Mark("source")
	}

	so := o.Options
	so.Dir, so.ModuleDir, so.Env, so.Secrets = p.Dir, moduleDir, env, secrets
	if p.Session, err = Open(so); err != nil {
		p.Close()
		return nil, err
	}
	return p, nil
}

// Close closes the session and removes the run directory.
func (p *Prepared) Close() {
	if p.Session != nil {
		p.Session.Close()
	}
	if p.Dir != "" {
		_ = os.RemoveAll(p.Dir)
	}
}
