package backend

import (
	"encoding/json"
	"errors"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/source"
)

// canary marks every secret planted in testdata and backend_config; it must
// never appear in a finding, a reason or an error.
const canary = "CANARY"

func finding(typ string, attrs ...string) drift.Finding {
	return drift.Finding{Kind: "backend", Address: "backend." + typ, Type: typ, Action: "none", Attributes: attrs}
}

var (
	localState   = finding("local", "backend")
	statePath    = finding("local", "path")
	stateWsDir   = finding("local", "workspace_dir")
	s3Encrypt    = finding("s3", "encrypt")
	s3Lock       = finding("s3", "dynamodb_table", "use_lockfile")
	httpLock     = finding("http", "lock_address")
	devPolicy    = Policy{Enabled: true, AllowLocal: true, RequireEncryption: true, RequireLocking: true}
	secretConfig = []string{"access_key=CANARY-CONFIG-ACCESS", "secret_key=CANARY-CONFIG-SECRET", "token=CANARY-CONFIG-TOKEN"}
)

type checkCase struct {
	dir    string
	config []string
	policy *Policy // nil: DefaultPolicy()
	// states are local state files created in the copy of dir, by path
	// relative to it, with these modes.
	states  map[string]fs.FileMode
	want    []drift.Finding
	wantErr []string // substrings of the error
}

var checkCases = map[string]checkCase{
	"no backend, non-dev": {dir: "no-backend", want: []drift.Finding{localState}},
	"no backend, dev":     {dir: "no-backend", policy: &devPolicy},
	"no backend, dev, private state": {
		dir: "no-backend", policy: &devPolicy,
		states: map[string]fs.FileMode{"terraform.tfstate": 0o600, "terraform.tfstate.backup": 0o600},
	},
	"no backend, world-readable state": {
		dir:    "no-backend",
		states: map[string]fs.FileMode{"terraform.tfstate": 0o644},
		want:   []drift.Finding{localState, statePath},
	},
	"no backend, dev, group-readable backup": {
		dir: "no-backend", policy: &devPolicy,
		states: map[string]fs.FileMode{"terraform.tfstate": 0o600, "terraform.tfstate.backup": 0o640},
		want:   []drift.Finding{statePath},
	},
	"no backend, dev, readable workspace state": {
		dir: "no-backend", policy: &devPolicy,
		states: map[string]fs.FileMode{"terraform.tfstate": 0o600, "terraform.tfstate.d/prod/terraform.tfstate": 0o604},
		want:   []drift.Finding{stateWsDir},
	},
	"no backend, backend_config ignored": {
		dir: "no-backend", config: []string{"path=elsewhere.tfstate"}, policy: &devPolicy,
		states: map[string]fs.FileMode{"terraform.tfstate": 0o644},
		want:   []drift.Finding{statePath},
	},
	"local backend, non-dev":     {dir: "local-explicit", want: []drift.Finding{localState}},
	"local backend, dev, absent": {dir: "local-explicit", policy: &devPolicy},
	"local backend, both readable": {
		dir: "local-explicit", policy: &devPolicy,
		states: map[string]fs.FileMode{"terraform.tfstate": 0o644, "terraform.tfstate.d/a/terraform.tfstate": 0o644},
		want:   []drift.Finding{finding("local", "path", "workspace_dir")},
	},
	"local backend, path via backend_config": {
		dir: "local-explicit", policy: &devPolicy, config: []string{"path=state/app.tfstate", "workspace_dir=ws"},
		states: map[string]fs.FileMode{"state/app.tfstate": 0o604, "ws/prod/terraform.tfstate": 0o600},
		want:   []drift.Finding{statePath},
	},

	"s3 without encryption or locking": {dir: "s3-insecure", want: []drift.Finding{s3Encrypt, s3Lock}},
	"s3 with canaries in backend_config": {
		dir: "s3-insecure", config: secretConfig, want: []drift.Finding{s3Encrypt, s3Lock},
	},
	"s3 fixed by backend_config": {dir: "s3-insecure", config: []string{"encrypt=true", "use_lockfile=true"}},
	"s3 encryption not required": {
		dir: "s3-insecure", policy: &Policy{Enabled: true, RequireLocking: true}, want: []drift.Finding{s3Lock},
	},
	"s3 locking not required": {
		dir: "s3-insecure", policy: &Policy{Enabled: true, RequireEncryption: true}, want: []drift.Finding{s3Encrypt},
	},
	"s3 disabled":                         {dir: "s3-insecure", policy: &Policy{RequireEncryption: true, RequireLocking: true}},
	"s3 clean with use_lockfile":          {dir: "s3-lockfile"},
	"s3 clean with dynamodb_table":        {dir: "s3-dynamodb"},
	"s3 encrypt=false via backend_config": {dir: "s3-lockfile", config: []string{"encrypt=false"}, want: []drift.Finding{s3Encrypt}},
	"s3 empty dynamodb_table":             {dir: "s3-dynamodb", config: []string{"dynamodb_table="}, want: []drift.Finding{s3Lock}},
	"s3 partial, nothing given":           {dir: "s3-partial", want: []drift.Finding{s3Encrypt, s3Lock}},
	"s3 partial, encrypt via backend_config": {
		dir: "s3-partial", config: []string{"encrypt=true", "dynamodb_table=locks"},
	},
	"s3 partial, backend file": {dir: "s3-partial", config: []string{"prod.s3.tfbackend"}},
	"s3 partial, later entry wins": {
		dir: "s3-partial", config: []string{"prod.s3.tfbackend", "encrypt=false"}, want: []drift.Finding{s3Encrypt},
	},
	"s3 partial, unparsable bool is unknown": {
		dir: "s3-partial", config: []string{"encrypt=yes", "use_lockfile=true"},
	},
	"s3 endpoints over plain http to remote hosts": {
		dir: "s3-endpoints-remote", want: []drift.Finding{finding("s3", "endpoints.dynamodb", "endpoints.s3")},
	},
	"s3 remote plain endpoints, encryption not required": {
		dir: "s3-endpoints-remote", policy: &Policy{Enabled: true, RequireLocking: true},
	},
	"s3 endpoints over plain http to loopback": {dir: "s3-endpoints-loopback"},
	"s3 endpoints not known statically":        {dir: "s3-endpoints-unknown"},
	"s3 legacy endpoint over plain http": {
		dir: "s3-lockfile", config: []string{"endpoint=http://objects.example.com", "sts_endpoint=https://sts.example.com"},
		want: []drift.Finding{finding("s3", "endpoint")},
	},
	"s3 legacy endpoint, localhost": {dir: "s3-lockfile", config: []string{"endpoint=http://LOCALHOST:9000/"}},
	"s3 legacy endpoint, https":     {dir: "s3-lockfile", config: []string{"endpoint=https://objects.example.com"}},
	"s3 legacy endpoint, a loopback look-alike host": {
		dir: "s3-lockfile", config: []string{"iam_endpoint=http://127.0.0.1.example.com"},
		want: []drift.Finding{finding("s3", "iam_endpoint")},
	},
	"s3 variable references are unknown":  {dir: "variables"},
	"s3 json backend":                     {dir: "json", want: []drift.Finding{s3Encrypt}},
	"s3 json templates are unknown":       {dir: "json-templates"},
	"s3 override file replaces the block": {dir: "override"},

	"http without lock": {dir: "http-nolock", want: []drift.Finding{httpLock}},
	"http lock via backend_config": {
		dir: "http-nolock", config: []string{"lock_address=https://state.example.com/app/lock"},
	},
	"http over plain http": {
		dir: "http-plain", want: []drift.Finding{finding("http", "address", "lock_address")},
	},
	"http skip_cert_verification": {
		dir: "http-nolock", config: []string{"lock_address=https://state.example.com/lock", "skip_cert_verification=true"},
		want: []drift.Finding{finding("http", "skip_cert_verification")},
	},

	"gcs clean":                        {dir: "gcs"},
	"azurerm clean":                    {dir: "azurerm"},
	"pg clean":                         {dir: "pg"},
	"kubernetes clean":                 {dir: "kubernetes"},
	"cloud block clean":                {dir: "cloud", config: secretConfig},
	"consul clean by default":          {dir: "consul"},
	"consul lock = false":              {dir: "consul-nolock", want: []drift.Finding{finding("consul", "lock")}},
	"unknown backend type":             {dir: "unknown-type"},
	"gcs ignores world-readable state": {dir: "gcs", states: map[string]fs.FileMode{"terraform.tfstate": 0o644}},

	"invalid HCL":        {dir: "invalid", wantErr: []string{"main.tf:4,45: invalid multi-line string (and 3 more)"}},
	"invalid JSON":       {dir: "invalid-json", wantErr: []string{"main.tf.json:5,23: invalid JSON keyword (and 1 more)"}},
	"duplicate backends": {dir: "duplicate", wantErr: []string{"main.tf:2,3: duplicate backend configuration (first at backend.tf:2,3)"}},
	"missing backend_config file": {
		dir: "s3-partial", config: []string{"CANARY-NOT-A-FILE"}, wantErr: []string{"backend_config[0]: read file: no such file"},
	},
	"backend_config empty key": {
		dir: "s3-partial", config: []string{"encrypt=true", "=CANARY-VALUE"}, wantErr: []string{"backend_config[1]: empty key"},
	},
	"invalid backend_config file": {
		dir: "s3-partial", config: []string{"encrypt=true", "broken.tfbackend"},
		wantErr: []string{"backend_config[1]: broken.tfbackend:2,"},
	},
	"missing module dir": {dir: "does-not-exist", wantErr: []string{"read module"}},
}

// setup copies testdata/dir to a temporary directory and creates the state
// files with their modes (git does not keep modes, and Terraform ignores
// *.tfstate in this repository).
func setup(t *testing.T, tc checkCase) string {
	t.Helper()
	src := filepath.Join("testdata", tc.dir)
	if _, err := os.Stat(src); errors.Is(err, fs.ErrNotExist) {
		return src
	}
	dir := filepath.Join(t.TempDir(), tc.dir)
	require.NoError(t, os.CopyFS(dir, os.DirFS(src)))
	for rel, mode := range tc.states {
		p := filepath.Join(dir, rel)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o700))
		require.NoError(t, os.WriteFile(p, []byte(`{"version":4,"outputs":{"x":{"value":"CANARY-STATE"}}}`), 0o600))
		require.NoError(t, os.Chmod(p, mode)) // WriteFile's mode is masked by the umask
	}
	return dir
}

func policyOf(tc checkCase) Policy {
	if tc.policy != nil {
		return *tc.policy
	}
	return DefaultPolicy()
}

func TestCheck(t *testing.T) {
	for _, name := range slices.Sorted(maps.Keys(checkCases)) {
		tc := checkCases[name]
		t.Run(name, func(t *testing.T) {
			dir := setup(t, tc)
			got, err := Check(t.Context(), dir, dir, tc.config, policyOf(tc), Env{})
			if len(tc.wantErr) > 0 {
				require.Error(t, err)
				for _, want := range tc.wantErr {
					require.Contains(t, err.Error(), want)
				}
				require.NotContains(t, err.Error(), canary)
				require.NotContains(t, err.Error(), "\n")
				require.Nil(t, got)
				return
			}
			require.NoError(t, err)
			// Details are checked in TestReasons; here: present, one line.
			for _, f := range got {
				require.NotEmpty(t, f.Detail)
				require.NotContains(t, f.Detail, "\n")
			}
			if diff := cmp.Diff(tc.want, got, cmpopts.IgnoreFields(drift.Finding{}, "Detail")); diff != "" {
				t.Fatalf("findings mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestNoValueLeaves runs every case and checks that no planted secret (or
// any other value) reaches a finding, a reason or an error, and that every
// finding has a reason.
func TestNoValueLeaves(t *testing.T) {
	for _, name := range slices.Sorted(maps.Keys(checkCases)) {
		tc := checkCases[name]
		t.Run(name, func(t *testing.T) {
			dir := setup(t, tc)
			is, err := check(t.Context(), dir, dir, tc.config, policyOf(tc), Env{})
			if err != nil {
				require.NotContains(t, err.Error(), canary)
				require.NotContains(t, err.Error(), "corp-tfstate")
				return
			}
			for _, i := range is {
				require.NotEmpty(t, i.reason)
				require.NotContains(t, i.reason, canary)
				require.NotContains(t, i.reason, "\n")
				b, err := json.Marshal(i.finding())
				require.NoError(t, err)
				require.NotContains(t, string(b), canary)
				require.NotContains(t, string(b), "example.com")
				require.NotContains(t, string(b), "corp-tfstate")
			}
		})
	}
}

func TestReasons(t *testing.T) {
	dir := setup(t, checkCase{dir: "no-backend", states: map[string]fs.FileMode{
		"terraform.tfstate":                       0o644,
		"terraform.tfstate.d/a/terraform.tfstate": 0o604,
	}})
	is, err := check(t.Context(), dir, dir, nil, DefaultPolicy(), Env{})
	require.NoError(t, err)
	require.Len(t, is, 2)
	require.Equal(t, "no backend block: state lives on one disk, with no locking across machines and no encryption at rest", is[0].reason)
	require.Equal(t, "2 local state files are readable by group or other users (mode 0644): chmod 600", is[1].reason)

	is, err = check(t.Context(), "", setup(t, checkCase{dir: "s3-insecure"}), nil, DefaultPolicy(), Env{})
	require.NoError(t, err)
	require.Len(t, is, 2)
	require.Contains(t, is[0].reason, "encrypt = true")
	require.Contains(t, is[1].reason, "use_lockfile = true")
}

func TestEffectiveBackendParsesStatically(t *testing.T) {
	for name, tc := range map[string]struct {
		src   string
		file  string
		typ   string
		known []string
		unk   []string
	}{
		"literals": {
			file: "main.tf", src: `terraform {
  backend "s3" {
    encrypt = true
    key     = "a/${"b"}"
    n       = 1 + 2
    obj     = { a = 1 }
    endpoints { s3 = "x" }
  }
}`, typ: "s3", known: []string{"encrypt", "key", "n", "obj"},
		},
		"non-literals": {
			file: "main.tf", src: `terraform {
  backend "s3" {
    a = var.x
    b = local.y
    c = upper("x")
    d = file("/etc/passwd")
    e = [for s in var.l : s]
    f = path.module
  }
}`, typ: "s3", unk: []string{"a", "b", "c", "d", "e", "f"},
		},
		"json": {
			file: "x.tf.json", src: `{"terraform":{"backend":{"http":{"address":"https://a","lock_address":"${var.l}","unlock_address":"${file(\"x\")}"}}}}`,
			typ: "http", known: []string{"address"}, unk: []string{"lock_address", "unlock_address"},
		},
		"terraform block without backend": {
			file: "main.tf", src: `terraform { required_version = ">= 1.0" }`, typ: "local",
		},
	} {
		t.Run(name, func(t *testing.T) {
			c, err := effectiveBackend([]configFile{{name: tc.file, src: []byte(tc.src)}})
			require.NoError(t, err)
			require.Equal(t, tc.typ, c.typ)
			var known, unk []string
			for n, v := range c.attrs {
				if v.known {
					known = append(known, n)
				} else {
					unk = append(unk, n)
				}
			}
			slices.Sort(known)
			slices.Sort(unk)
			require.Equal(t, tc.known, known)
			require.Equal(t, tc.unk, unk)
		})
	}
}

func TestIsOverride(t *testing.T) {
	for name, want := range map[string]bool{
		"override.tf": true, "override.tf.json": true, "backend_override.tf": true, "x_override.tf.json": true,
		"main.tf": false, "overrides.tf": false, "override_backend.tf": false, "main.tf.json": false,
	} {
		require.Equal(t, want, isOverride(name), name)
	}
}

func TestReadModuleSkipsIgnoredFiles(t *testing.T) {
	dir := t.TempDir()
	bad := []byte("this is { not hcl")
	for _, n := range []string{".hidden.tf", "main.tf~", "#main.tf#", "notes.txt", "main.tf.bak"} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, n), bad, 0o600))
	}
	require.NoError(t, os.Mkdir(filepath.Join(dir, "dir.tf"), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "main.tf"), []byte(`terraform {
  backend "gcs" {}
}`), 0o600))
	got, err := Check(t.Context(), dir, dir, nil, DefaultPolicy(), Env{})
	require.NoError(t, err)
	require.Empty(t, got)
	names := []string{}
	files, err := readModule(t.Context(), dir, dir)
	require.NoError(t, err)
	for _, f := range files {
		names = append(names, f.name)
	}
	require.Equal(t, []string{"main.tf"}, names)
}

func TestDefaultPolicy(t *testing.T) {
	require.Equal(t, Policy{Enabled: true, RequireEncryption: true, RequireLocking: true, CheckBucketPolicy: true}, DefaultPolicy())
	require.Equal(t, drift.KindBackend, finding("s3").Kind)
	require.True(t, strings.HasPrefix(finding("s3").Address, "backend."))
}

// TestCheckUnsafeFiles: the module comes from a source, which is not
// trusted. A named pipe, a link to /dev/zero or out of the source tree, or
// an oversized file is an error naming it, returned at once (reading a
// pipe would block); a link inside the tree, even above the module, is read.
func TestCheckUnsafeFiles(t *testing.T) {
	fifo := func(t *testing.T, path string) {
		t.Helper()
		require.NoError(t, syscall.Mkfifo(path, 0o600))
		t.Cleanup(func() { // releases a reader that blocked after all
			if f, err := os.OpenFile(path, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
				f.Close()
			}
		})
	}
	outside := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(outside, "backend.tf"), []byte(`terraform {
  backend "gcs" {}
}`), 0o600))
	cases := []struct {
		name    string
		setup   func(t *testing.T, module string)
		config  []string
		wantIs  error
		wantErr string
	}{
		{
			name:    "module file is a named pipe",
			setup:   func(t *testing.T, module string) { fifo(t, filepath.Join(module, "evil.tf")) },
			wantIs:  source.ErrNotRegular,
			wantErr: "evil.tf: not a regular file (named pipe)",
		},
		{
			name: "module file links to /dev/zero",
			setup: func(t *testing.T, module string) {
				require.NoError(t, os.Symlink("/dev/zero", filepath.Join(module, "evil.tf")))
			},
			wantIs:  source.ErrEscapes,
			wantErr: "evil.tf: symlink to /dev/zero points outside the source directory",
		},
		{
			name: "module file links out of the tree",
			setup: func(t *testing.T, module string) {
				require.NoError(t, os.Symlink(filepath.Join(outside, "backend.tf"), filepath.Join(module, "evil.tf")))
			},
			wantIs:  source.ErrEscapes,
			wantErr: "evil.tf: symlink to " + filepath.Join(outside, "backend.tf") + " points outside",
		},
		{
			name: "module file too large",
			setup: func(t *testing.T, module string) {
				require.NoError(t, os.WriteFile(filepath.Join(module, "evil.tf"), nil, 0o600))
				require.NoError(t, os.Truncate(filepath.Join(module, "evil.tf"), source.MaxConfigFileSize+1))
			},
			wantIs:  source.ErrTooLarge,
			wantErr: "evil.tf: file too large",
		},
		{
			name:    "backend_config file is a named pipe",
			setup:   func(t *testing.T, module string) { fifo(t, filepath.Join(module, "CANARY.tfbackend")) },
			config:  []string{"CANARY.tfbackend"},
			wantIs:  source.ErrNotRegular,
			wantErr: "backend_config[0]: read file: not a regular file (named pipe)",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			module := filepath.Join(root, "envs", "prod")
			require.NoError(t, os.MkdirAll(module, 0o755))
			require.NoError(t, os.WriteFile(filepath.Join(module, "main.tf"), []byte(`terraform {
  backend "s3" {}
}`), 0o600))
			tc.setup(t, module)
			done := make(chan error, 1)
			go func() {
				_, err := Check(t.Context(), root, module, tc.config, DefaultPolicy(), Env{})
				done <- err
			}()
			select {
			case err := <-done:
				require.ErrorIs(t, err, tc.wantIs)
				require.ErrorContains(t, err, tc.wantErr)
				require.NotContains(t, err.Error(), canary, "a backend_config entry is never echoed")
			case <-time.After(20 * time.Second):
				t.Fatal("Check blocked on a file of the source")
			}
		})
	}

	t.Run("links inside the tree are read", func(t *testing.T) {
		root := t.TempDir()
		module := filepath.Join(root, "envs", "prod")
		require.NoError(t, os.MkdirAll(filepath.Join(root, "shared"), 0o755))
		require.NoError(t, os.MkdirAll(module, 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(root, "shared", "backend.tf"), []byte(`terraform {
  backend "s3" {}
}`), 0o600))
		require.NoError(t, os.WriteFile(filepath.Join(root, "shared", "prod.s3.tfbackend"), []byte("encrypt = true\nuse_lockfile = true\n"), 0o600))
		require.NoError(t, os.Symlink("../../shared/backend.tf", filepath.Join(module, "backend.tf")))
		got, err := Check(t.Context(), root, module, nil, DefaultPolicy(), Env{})
		require.NoError(t, err)
		require.Equal(t, []drift.Finding{s3Encrypt, s3Lock}, stripDetail(got))
		got, err = Check(t.Context(), root, module, []string{"../../shared/prod.s3.tfbackend"}, DefaultPolicy(), Env{})
		require.NoError(t, err)
		require.Empty(t, got)
	})
}

func stripDetail(in []drift.Finding) []drift.Finding {
	out := make([]drift.Finding, len(in))
	for i, f := range in {
		f.Detail = ""
		out[i] = f
	}
	return out
}
