package terraform

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/driftwatch/driftwatch/internal/backend"
)

// Request is everything one run needs. Secret values are referenced by file,
// never carried inline.
type Request struct {
	RunID     string
	Workspace string
	// Binary is "terraform", "tofu", a name on PATH or an absolute path; empty
	// means terraform, then tofu, from PATH.
	Binary string
	Source Source
	// TFWorkspace is the Terraform workspace to select (empty: default).
	TFWorkspace    string
	VarFiles       []string // relative to the module directory, or absolute
	Vars           map[string]string
	Env            map[string]string
	SecretEnvFiles map[string]string // env name -> file holding the value
	BackendConfig  []string
	Timeout        time.Duration
	CLIConfigFile  string
	PluginCacheDir string
	WorkDir        string
	GitCacheDir    string
	KillGrace      time.Duration
	// Backend is the state-backend hygiene policy (Enabled false: no check).
	Backend backend.Policy
	// Owner, if set, tags every process of the run (sandbox.OwnerEnv) with
	// the daemon that started it, so that a restarted daemon can kill what
	// a killed one left behind (sandbox.KillOwned).
	Owner string
	// Jail, if set, is the bubblewrap binary every Terraform process of the
	// run is confined with (sandbox.NewJail; sandbox.DetectIsolation finds
	// it). Empty: no namespaces (the Kubernetes pod is the sandbox there).
	Jail string `json:"-"`
	// JailNet, if set with Jail, is the pasta binary that gives every
	// jailed process a network namespace of its own: outbound access only,
	// no port of the host (sandbox.NetSpec). Empty: the host's network.
	JailNet string `json:"-"`
	// JailHostPorts are the host's loopback ports ("127.0.0.1:6443")
	// reachable from that namespace (config sandbox_host_ports).
	JailHostPorts []string `json:"-"`
	// JailPaths are host paths bound read-write into the jail (config
	// terraform.sandbox_paths).
	JailPaths []string `json:"-"`
	// Redact lists more values to redact from the run's log and errors: the
	// daemon's own secrets and every workspace's, not only this run's.
	// Never serialised: it must not travel into a Job's Secret.
	Redact []string `json:"-"`
	// Query, if set, makes the run a scan (Query): Result.Listed instead
	// of a plan.
	Query *Query
	// NoFastPaths turns the fast paths off (config terraform.fast_paths:
	// false): every run inits in a fresh directory and runs show -json,
	// even when the plan found nothing.
	NoFastPaths bool
	// LogPlanText opts the workspace in to Terraform's full, human-readable
	// plan text in its log, attribute values included (config
	// log_plan_text). Off, the log has addresses, actions and attribute
	// paths only. Local runs only. The log's owner writes
	// runlog.ValuesNotice first, so that only authenticated readers get it.
	LogPlanText bool `json:"-"`
	// Log, if set, receives the run's Terraform output (init, workspace,
	// plan: stdout and stderr, -no-color; show: stderr only, never the plan
	// JSON) as complete lines under "== phase ==" headers, redacted by the
	// runner (secret env values, Vars values) before they are written. It
	// must be safe for concurrent use (runlog.Log is). Never serialised.
	Log io.Writer `json:"-"`
}

// Query makes a request a scan: init and `terraform query -json` in the
// module's directory instead of a plan. The module holds the provider
// configuration and either its own list blocks (*.tfquery.hcl) or none,
// and then Lists are written for it.
type Query struct {
	// Lists are list blocks written to the run's copy of the module
	// (ListsFile) before init.
	Lists []List `json:"lists,omitempty"`
}

// List is one generated list block: `list "TYPE" "all" { provider = PROVIDER
// limit = LIMIT config { ... } }`. Config values are strings, numbers, booleans or lists
// of them.
type List struct {
	Type     string         `json:"type"`
	Provider string         `json:"provider"`
	Config   map[string]any `json:"config,omitempty"`
	// Limit is the block's limit: the most resources it lists (Terraform
	// stops at 100 without one).
	Limit int `json:"limit,omitempty"`
}

// ListsFile is the file Query.Lists are written to.
const ListsFile = "driftwatch_scan.tfquery.hcl"

// Source is a local directory or a git repository.
type Source struct {
	Path string
	Git  *Git
}

// Git is a git repository source; the token is read from CredentialsFile.
type Git struct {
	URL, Ref, Path, CredentialsFile string
}

// ErrTimeout is the cause of a run that exceeded its timeout.
var ErrTimeout = errors.New("run timed out")

// Error is a failed run: the phase it failed in and a one-line,
// secret-free reason taken from Terraform's diagnostics.
type Error struct {
	Phase  string // source, init, workspace, plan, show, parse
	Reason string
	Err    error
}

func (e *Error) Error() string {
	if e.Reason != "" {
		return fmt.Sprintf("%s: %s", e.Phase, e.Reason)
	}
	return fmt.Sprintf("%s: %v", e.Phase, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }
