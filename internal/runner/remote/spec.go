package remote

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/driftwatch/driftwatch/internal/backend/backendpolicy"
	"github.com/driftwatch/driftwatch/internal/terraform"
)

// Version is the wire version of Spec and Result. Fields may be added
// without a bump (decoders ignore unknown fields); a change in meaning bumps
// it, and each end refuses a version it does not know.
const Version = 1

// maxSpecBytes bounds the spec file: it is a handful of paths and variables.
const maxSpecBytes = 1 << 20

// Spec is what a remote run needs: terraform.Request without the daemon's own
// paths (plugin cache, work dir, git cache are the pod's), with secret files
// as mounted in the pod, plus where and until when to deliver the result.
type Spec struct {
	Version   int    `json:"version"`
	RunID     string `json:"run_id"`
	Workspace string `json:"workspace"`
	// Binary is as in terraform.Request: empty means terraform, then tofu, from
	// the pod's PATH.
	Binary      string            `json:"binary,omitempty"`
	Source      Source            `json:"source"`
	TFWorkspace string            `json:"tf_workspace,omitempty"`
	VarFiles    []string          `json:"var_files,omitempty"`
	Vars        map[string]string `json:"vars,omitempty"`
	Env         map[string]string `json:"env,omitempty"`
	// SecretEnvFiles maps an environment variable to the file, in the pod,
	// holding its value.
	SecretEnvFiles map[string]string `json:"secret_env_files,omitempty"`
	BackendConfig  []string          `json:"backend_config,omitempty"`
	// Backend is the state-backend hygiene policy (nil: no check).
	Backend        *backendpolicy.Policy `json:"backend_policy,omitempty"`
	Timeout        Duration              `json:"timeout,omitempty"`
	KillGrace      Duration              `json:"kill_grace,omitempty"`
	CLIConfigFile  string                `json:"cli_config_file,omitempty"`
	PluginCacheDir string                `json:"plugin_cache_dir,omitempty"`
	WorkDir        string                `json:"work_dir,omitempty"`
	GitCacheDir    string                `json:"git_cache_dir,omitempty"`
	// NoFastPaths is terraform.Request's (config terraform.fast_paths: false):
	// show -json after every plan.
	NoFastPaths bool `json:"no_fast_paths,omitempty"`
	// Query is terraform.Request's: a scan instead of a plan.
	Query *terraform.Query `json:"query,omitempty"`
	// Remediation, if set, makes this a remediation run: the pod applies
	// the approved change set instead of detecting, and delivers the
	// outcome.
	Remediation *Remediation `json:"remediation,omitempty"`

	// CallbackURL is where the result is POSTed (the Receiver's route for
	// this run).
	CallbackURL string `json:"callback_url"`
	// CallbackCA is PEM text of the CA certificate(s) that signed the
	// daemon's serving certificate, for an https CallbackURL with a private
	// CA (runner.kubernetes.callback_ca_file). The pod trusts the system
	// roots plus these for CallbackURL and ProceedURL; empty: the system
	// roots alone. Not a secret.
	CallbackCA string `json:"callback_ca,omitempty"`
	// ProceedURL is where a remediation pod asks, right before the apply,
	// whether it may (the Receiver's ProceedRoute for this run); required
	// with Remediation.
	ProceedURL string `json:"proceed_url,omitempty"`
	// LogURL is where the reporter posts the run's log as it goes (the
	// Receiver's LogRoute for this run); empty: the log is not sent.
	LogURL string `json:"log_url,omitempty"`
	// TokenFile holds the bearer token for CallbackURL, ProceedURL and
	// LogURL. It
	// is a separate file so the spec itself holds no credential and can be
	// shown; in a run pod only the reporter container has it (the runner
	// container, Terraform's, hands its result over to the reporter).
	TokenFile string `json:"token_file"`
	// ExpiresAt is when the daemon stops accepting this run's result; the
	// pod stops retrying then.
	ExpiresAt time.Time `json:"expires_at"`
}

// Source is terraform.Source as seen from the pod.
type Source struct {
	Path string `json:"path,omitempty"`
	Git  *Git   `json:"git,omitempty"`
}

// Git is terraform.Git as seen from the pod: CredentialsFile is the mounted file.
type Git struct {
	URL             string `json:"url"`
	Ref             string `json:"ref,omitempty"`
	Path            string `json:"path,omitempty"`
	CredentialsFile string `json:"credentials_file,omitempty"`
}

// Duration is a time.Duration written as a Go duration string ("10m0s").
type Duration time.Duration

// MarshalText implements encoding.TextMarshaler.
func (d Duration) MarshalText() ([]byte, error) { return []byte(time.Duration(d).String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

// Validate checks what the pod needs to run and to deliver.
func (s *Spec) Validate() error {
	var errs []error
	if s.Version != Version {
		errs = append(errs, fmt.Errorf("unsupported spec version %d (this build speaks %d)", s.Version, Version))
	}
	if s.RunID == "" {
		errs = append(errs, errors.New("run_id is required"))
	}
	if s.Workspace == "" {
		errs = append(errs, errors.New("workspace is required"))
	}
	if (s.Source.Path == "") == (s.Source.Git == nil) {
		errs = append(errs, errors.New("exactly one of source.path and source.git is required"))
	}
	if err := checkURL(s.CallbackURL); err != nil {
		errs = append(errs, fmt.Errorf("callback_url: %w", err))
	}
	if err := s.checkCallbackCA(); err != nil {
		errs = append(errs, err)
	}
	if s.LogURL != "" {
		if err := checkURL(s.LogURL); err != nil {
			errs = append(errs, fmt.Errorf("log_url: %w", err))
		}
	}
	if s.TokenFile == "" {
		errs = append(errs, errors.New("token_file is required"))
	}
	if s.ExpiresAt.IsZero() {
		errs = append(errs, errors.New("expires_at is required"))
	}
	if s.Remediation != nil {
		errs = append(errs, s.Remediation.validate())
		if err := checkURL(s.ProceedURL); err != nil {
			errs = append(errs, fmt.Errorf("proceed_url: %w", err))
		}
	}
	return errors.Join(errs...)
}

func checkURL(s string) error {
	u, err := url.Parse(s)
	if err != nil {
		return err
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%q is not an absolute http(s) URL", s)
	}
	return nil
}

// Request is the terraform.Request the pod runs.
func (s *Spec) Request() terraform.Request {
	req := terraform.Request{
		RunID:          s.RunID,
		Workspace:      s.Workspace,
		Binary:         s.Binary,
		Source:         terraform.Source{Path: s.Source.Path},
		TFWorkspace:    s.TFWorkspace,
		VarFiles:       s.VarFiles,
		Vars:           s.Vars,
		Env:            s.Env,
		SecretEnvFiles: s.SecretEnvFiles,
		BackendConfig:  s.BackendConfig,
		Timeout:        time.Duration(s.Timeout),
		CLIConfigFile:  s.CLIConfigFile,
		PluginCacheDir: s.PluginCacheDir,
		WorkDir:        s.WorkDir,
		GitCacheDir:    s.GitCacheDir,
		KillGrace:      time.Duration(s.KillGrace),
		NoFastPaths:    s.NoFastPaths,
		Query:          s.Query,
	}
	if g := s.Source.Git; g != nil {
		req.Source.Git = &terraform.Git{URL: g.URL, Ref: g.Ref, Path: g.Path, CredentialsFile: g.CredentialsFile}
	}
	if s.Backend != nil {
		req.Backend = *s.Backend
	}
	return req
}

// Encode returns the spec as JSON (the content of the pod's spec file).
func (s *Spec) Encode() ([]byte, error) {
	return json.MarshalIndent(s, "", "  ")
}

// DecodeSpec reads and validates a spec.
func DecodeSpec(r io.Reader) (*Spec, error) {
	b, err := io.ReadAll(io.LimitReader(r, maxSpecBytes+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxSpecBytes {
		return nil, fmt.Errorf("spec larger than %d bytes", maxSpecBytes)
	}
	var s Spec
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("decode spec: %w", err)
	}
	if err := s.Validate(); err != nil {
		return nil, fmt.Errorf("invalid spec: %w", err)
	}
	return &s, nil
}

// LoadSpec reads and validates the spec file at path.
func LoadSpec(path string) (*Spec, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	s, err := DecodeSpec(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}

// readToken reads a token file (trailing newline tolerated).
func readToken(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	tok := strings.TrimSpace(string(b))
	if tok == "" {
		return "", fmt.Errorf("%s: empty token", path)
	}
	return tok, nil
}
