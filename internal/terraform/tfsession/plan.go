package tfsession

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/go-version"
	"github.com/hashicorp/terraform-exec/tfexec"

	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/terraform"
	"github.com/driftwatch/driftwatch/internal/terraform/planfile"
	"github.com/driftwatch/driftwatch/internal/terraform/planparse"
)

// WorkspaceSelect selects the request's Terraform workspace
// (terraform.Request.TFWorkspace); for the default workspace it does nothing.
func (s *Session) WorkspaceSelect(ctx context.Context) error {
	w := s.req.TFWorkspace
	if w == "" || w == "default" {
		return nil
	}
	s.step("workspace")
	s.tf.SetStdout(s.log.stdout())
	defer s.tf.SetStdout(io.Discard)
	if err := s.tf.WorkspaceSelect(ctx, w); err != nil {
		return s.fail("workspace", err)
	}
	return nil
}

// PlanOptions are Plan's.
type PlanOptions struct {
	// Out is the plan file to write.
	Out string
	// Lock takes the state lock, waiting up to Options.LockTimeout for it
	// (remediation). Without it the plan runs with -lock=false: detection
	// changes nothing and must not queue behind an apply.
	Lock bool
	// LockWait, when positive, is waited instead of Options.LockTimeout
	// (the rest of a timeout a caller is spending over several plans).
	LockWait time.Duration
	// JSON runs `plan -json` and renders its machine-readable stream into
	// the log without values (version, drifted and planned resources as
	// address and action, the change summary, diagnostics); its error
	// diagnostics, which then are on stdout, give a failure's reason.
	// Without it, the plan's output is dropped: its text holds values.
	JSON bool
}

// Plan runs `terraform plan -detailed-exitcode -refresh=true -out` with
// the request's variables (files only). changed is the exit code's "there
// are changes", a coarse signal only.
func (s *Session) Plan(ctx context.Context, o PlanOptions) (changed bool, err error) {
	s.step("plan")
	if !o.JSON {
		opts := []tfexec.PlanOption{tfexec.Out(o.Out), tfexec.Lock(o.Lock), tfexec.Refresh(true)}
		if o.Lock {
			opts = append(opts, tfexec.LockTimeout(s.lockWaitFor(o)))
		}
		for _, f := range s.varFiles {
			opts = append(opts, tfexec.VarFile(f))
		}
		if changed, err = s.tf.Plan(ctx, opts...); err != nil {
			return false, s.fail("plan", err)
		}
		return changed, nil
	}
	// The JSON plan runs through the session's own command, not
	// terraform-exec's PlanJSON: that spends a `version -json` process on
	// every new handle (one per run) to check compatibility, where the
	// session asks each binary's version once (Version).
	args := []string{"plan", "-no-color", "-input=false", "-detailed-exitcode", "-refresh=true", "-out=" + o.Out, "-json"}
	if o.Lock {
		args = append(args, "-lock=true", "-lock-timeout="+s.lockWaitFor(o))
	} else {
		args = append(args, "-lock=false")
	}
	for _, f := range s.varFiles {
		args = append(args, "-var-file="+f)
	}
	pl := s.newStream()
	s.stream = pl
	err = s.cmd.Run(ctx, pl, args...)
	pl.flush()
	var exit *exec.ExitError
	if errors.As(err, &exit) && exit.ExitCode() == 2 {
		changed, err = true, nil
	}
	s.nothing = err == nil && !changed && pl.summary().nothing()
	if err != nil {
		return false, s.streamFail(ctx, "plan", pl, err)
	}
	return changed, nil
}

// lockWaitFor is the -lock-timeout of a plan with o.
func (s *Session) lockWaitFor(o PlanOptions) string {
	if o.LockWait > 0 {
		return lockWait(o.LockWait)
	}
	return s.lockWait
}

// newStream renders a -json command's machine-readable stream into the
// log without values (planLog). Its error diagnostics also reach the
// stderr tail, in the form Terraform writes them without -json (summary,
// then detail), so that Stderr explains a failure as it would without
// -json: a held state lock's "Lock Info", a stale saved plan.
func (s *Session) newStream() *planLog {
	pl := newPlanLog(s.log.stdout(), s.log.red.Apply, s.vars)
	pl.diags = s.stderr
	return pl
}

// streamFail is a failed -json step as a *terraform.Error: its reason is
// the stream's first error diagnostic, or, without one (killed, a crash,
// an error before the stream began), the stderr's (fail).
func (s *Session) streamFail(ctx context.Context, phase string, pl *planLog, err error) error {
	if reason := pl.reason(); reason != "" && ctx.Err() == nil {
		s.log.flush()
		return &terraform.Error{Phase: phase, Reason: s.red.Apply(reason), Err: s.firstLine(err)}
	}
	return s.fail(phase, err)
}

// Unchanged is the value-free summary of the last Plan's saved plan file
// when that plan (with JSON) found nothing at all: exit code 0, and its
// machine-readable stream complete with no drift, no planned change, no
// output change, no warning from within a check block and a zero summary
// (a failing check needs show -json: its kind, its address with module
// path and every message are there only). It is read from the plan file alone
// (planfile.CleanResources: prior state and configuration snapshot), so
// the caller skips `show -json`, a second Terraform process that starts
// every provider again. Its Resources are what show -json's would be, so
// the forbidden-resource rule finds a forbidden type in configuration
// (count = 0 too) or state. ok is false when there was a change, or the
// file cannot be read that way (an encrypted plan): then Show.
func (s *Session) Unchanged(planFile string) (plan *planparse.Plan, ok bool) {
	if !s.nothing {
		return nil, false
	}
	res, managed, err := planfile.CleanResources(planFile)
	if err != nil {
		return nil, false
	}
	return &planparse.Plan{Resources: res, Managed: managed, RelevantAttributes: map[string][]string{}}, true
}

// Decoded is the value-free summary of the last Plan's saved plan file
// when that plan (with JSON) found something: planfile.Decode reads it
// from the plan file itself, as show -json would summarise it, so the
// caller skips `show -json`, a second Terraform process that starts every
// provider again. ok is false, and the caller runs Show, when the plan
// raised a warning within a check block or the file records a check that
// did not pass (show -json describes those in full), when the tool is not
// a minor version the decoder was proven on (decodable), or when the file
// cannot be read that way.
func (s *Session) Decoded(ctx context.Context, planFile string) (plan *planparse.Plan, ok bool) {
	if s.stream == nil || s.stream.summary().checks > 0 || !decodable(s.Version(ctx)) {
		return nil, false
	}
	plan, err := planfile.Decode(planFile)
	if err != nil {
		return nil, false
	}
	return plan, true
}

// decodable reports whether tool ("terraform 1.11.4", as Version says) is
// a release of a minor version whose plan files Decode was proven on:
// its summary equals show -json's on every fixture (TestFastPathsSameFindings
// and planfile's comparisons with the real tools, run against every tool
// of the test matrix). A plan file records, from Terraform 1.11 and
// OpenTofu 1.10, the sensitive paths a provider's schema declares, beside
// those the configuration marks: Decode's paths stop at a sensitive value
// as show -json's do only then. A later minor version may record
// something new in its plan files (docs/architecture/terraform.md): it
// runs show -json until it is proven and added here.
func decodable(tool string) bool {
	name, v, ok := strings.Cut(tool, " ")
	if !ok {
		return false
	}
	ver, err := version.NewVersion(v)
	if err != nil || ver.Prerelease() != "" || ver.Metadata() != "" {
		return false
	}
	seg := ver.Segments()
	return slices.Contains(provenMinors[name], fmt.Sprintf("%d.%d", seg[0], seg[1]))
}

// provenMinors are the minor versions, per tool, that decodable trusts.
var provenMinors = map[string][]string{
	"terraform": {"1.11", "1.14"},
	"tofu":      {"1.10", "1.12"},
}

// Apply applies exactly the saved plan file, lock on (waiting up to
// Options.LockTimeout), with `apply -json`: its progress reaches the log
// as each resource's apply starts, goes on and ends, with addresses,
// actions and times and never a value or id (planLog). Variables are in
// the plan file: Terraform rejects var files with a saved plan.
func (s *Session) Apply(ctx context.Context, planFile string) error {
	s.step("apply")
	pl := s.newStream()
	err := s.cmd.Run(ctx, pl, "apply", "-no-color", "-input=false", "-json", "-lock=true", "-lock-timeout="+s.lockWait, planFile)
	pl.flush()
	if err != nil {
		return s.streamFail(ctx, "apply", pl, err)
	}
	return nil
}

// Show streams `show -json` of planFile into planparse and into each of
// also (another reader of the same JSON, such as remediation's revert
// check, run concurrently): the plan JSON, which holds every value, is
// never buffered whole and never reaches the log (show's stderr does).
//
// The plan's checks' messages are redacted as the log is. A check that
// could not be evaluated makes the run fail (a *terraform.Error of phase
// plan), as a failed plan does: its status is error, or its problem is the
// failure of a data source nested in its check block (the last Plan's
// stream, with JSON, names those). A failing check is not an error.
func (s *Session) Show(ctx context.Context, planFile string, also ...func(io.Reader) error) (*planparse.Plan, error) {
	s.step("show")
	plan, err := s.showJSON(ctx, planFile, also)
	if err != nil {
		return nil, s.fail("show", err)
	}
	if reason := s.checkErrored(plan); reason != "" {
		s.log.flush()
		return nil, &terraform.Error{Phase: "plan", Reason: reason, Err: errors.New("a check could not be evaluated")}
	}
	for i := range plan.Checks {
		c := &plan.Checks[i]
		for j, m := range c.Messages {
			c.Messages[j] = s.log.red.Apply(m)
		}
	}
	return plan, nil
}

// checkErrored is the redacted reason a check of plan could not be
// evaluated, "" if every check could.
func (s *Session) checkErrored(plan *planparse.Plan) string {
	for _, c := range plan.Checks {
		why := ""
		switch {
		case c.Status == planparse.CheckError:
			why = "could not be evaluated"
		case s.stream != nil && slices.ContainsFunc(c.Messages, s.stream.checkDataFailure):
			why = "could not be evaluated: a data source in it failed"
		default:
			continue
		}
		reason := c.Address + " " + why
		if len(c.Messages) > 0 {
			reason += ": " + drift.CapDetail(s.log.red.Apply(strings.Join(c.Messages, "; ")))
		}
		return s.red.Apply(reason)
	}
	return ""
}

func (s *Session) showJSON(ctx context.Context, planFile string, also []func(io.Reader) error) (*planparse.Plan, error) {
	var plan *planparse.Plan
	readers := append([]func(io.Reader) error{func(r io.Reader) (err error) {
		plan, err = planparse.Parse(r)
		return err
	}}, also...)
	writers := make([]io.Writer, len(readers))
	pipes := make([]*io.PipeWriter, len(readers))
	errs := make(chan error, len(readers))
	for i, read := range readers {
		pr, pw := io.Pipe()
		writers[i], pipes[i] = pw, pw
		go func() {
			err := read(bufio.NewReaderSize(pr, 1<<20))
			// Drain whatever is left so show never blocks on a full pipe.
			_, _ = io.Copy(io.Discard, pr)
			errs <- err
		}()
	}
	cmd, err := s.cmd.Start(ctx, io.MultiWriter(writers...), "show", "-json", "-no-color", planFile)
	if err == nil {
		err = cmd.Wait()
	}
	for _, pw := range pipes {
		pw.Close()
	}
	var perr error
	for range readers {
		perr = errors.Join(perr, <-errs)
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil, context.Cause(ctx)
		}
		return nil, err
	}
	if perr != nil {
		return nil, fmt.Errorf("parse plan json: %w", perr)
	}
	return plan, nil
}

// LogChanges writes what the plan found to the log under "== changes ==":
// per drifted or changed resource its address, actions and changed
// attribute paths, never their values.
func (s *Session) LogChanges(plan *planparse.Plan) {
	s.log.header("changes")
	writeChanges(s.log.stdout(), plan)
}

// ShowText writes Terraform's human-readable plan text of planFile to the
// log under "== plan text ==". It prints every attribute not marked
// sensitive: only for a workspace that opted in (log_plan_text), whose
// log's owner marks the log as holding values first.
func (s *Session) ShowText(ctx context.Context, planFile string) error {
	s.step("plan text")
	if err := s.cmd.Run(ctx, s.log.stdout(), "show", "-no-color", planFile); err != nil {
		return s.fail("show", err)
	}
	return nil
}
