package planfile

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/hashicorp/go-version"
	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/terraform/planparse"
	"github.com/driftwatch/driftwatch/internal/terraform/sandbox"
	"github.com/driftwatch/driftwatch/internal/testutil/tftest"
)

// The tests of CleanResources against real plans run real Terraform and
// OpenTofu with the offline test providers (driftwatch/dwtest, /kubernetes,
// /helm). `make test` provisions them and sets DRIFTWATCH_TF_BINARIES /
// DRIFTWATCH_TF_CLI_CONFIG; a plain `go test` skips those tests, and
// DRIFTWATCH_E2E=1 without them fails.

// tfCase is a configuration planned the way hack/gen-fixtures.sh plans a
// fixture: files (with base's files in place of theirs) is applied with
// TF_VAR_phase=base, mutate runs, files is put in place and planned.
type tfCase struct {
	name   string
	files  map[string]string // path relative to the workspace -> content
	base   map[string]string // replaces (or adds) files for the apply; "" removes one
	mutate string            // bash, run with $DIR set to the var.root directory
	// clean is set for cases that must plan with exit code 0. On any plan
	// with exit code 0 the whole result must equal show -json's; other
	// plans only have their configuration and prior state compared.
	clean bool
	// only limits the case to one binary ("terraform" or "tofu").
	only string
}

const providers = `terraform {
  required_providers {
    dwtest     = { source = "driftwatch/dwtest" }
    kubernetes = { source = "driftwatch/kubernetes" }
    helm       = { source = "driftwatch/helm" }
  }
}

variable "root" { type = string }
`

const dwtestOnly = `terraform {
  required_providers {
    dwtest = { source = "driftwatch/dwtest" }
  }
}

variable "root" { type = string }
`

// fixtureCase loads internal/terraform/planparse/testdata/NAME.
func fixtureCase(t *testing.T, name string) tfCase {
	t.Helper()
	dir := filepath.Join("..", "planparse", "testdata", name)
	c := tfCase{name: name, files: map[string]string{}}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		switch rel {
		case "plan.json":
		case "mutate.sh":
			c.mutate = string(b)
		case "base.tf":
			c.base = map[string]string{"main.tf": string(b)}
		default:
			c.files[filepath.ToSlash(rel)] = string(b)
		}
		return nil
	})
	require.NoError(t, err)
	require.Contains(t, c.files, "main.tf")
	return c
}

// constructedCases are clean plans (and one that cannot be) covering what
// the fixtures do not.
func constructedCases() []tfCase {
	return []tfCase{{
		name:  "forbidden_in_modules_count0_empty_for_each",
		clean: true,
		files: map[string]string{
			"main.tf": providers + `
module "off" {
  source = "./modules/k8s"
  count  = 0
  root   = var.root
}

module "none" {
  source   = "./modules/helm"
  for_each = {}
  root     = var.root
}

module "on" {
  source = "./modules/k8s"
  root   = var.root
}
`,
			"modules/k8s/main.tf": providers + `
resource "kubernetes_config_map" "cm" {
  count    = 0
  filename = "${var.root}/cm.txt"
  content  = "cm"
}

resource "dwtest_file" "f" {
  filename = "${var.root}/f-${md5(path.module)}.txt"
  content  = "f"
}
`,
			"modules/helm/main.tf": providers + `
resource "helm_release" "r" {
  for_each = toset([])
  filename = "${var.root}/${each.key}.txt"
  content  = "chart"
}
`,
		},
	}, {
		name:  "for_each_keys_nested_modules_data_in_state",
		clean: true,
		base:  map[string]string{"data.tf": ""},
		files: map[string]string{
			"main.tf": dwtestOnly + `
resource "dwtest_file" "a" {
  filename = "${var.root}/a.txt"
  content  = "v1"
}

resource "dwtest_file" "fe" {
  for_each = toset(["x", "y z", "q\"$${w}", "tab\there", "nbsp\u00a0", "%%{p}", "k/2", "é"])
  filename = "${var.root}/fe-${md5(each.key)}.txt"
  content  = "v1"
}

module "m" {
  source   = "./modules/m"
  for_each = { "k1" = 1, "k/2" = 2 }
  root     = "${var.root}/${md5(each.key)}"
}
`,
			// Read only once a.txt exists, so added after the apply.
			"data.tf": `
data "dwtest_file" "const" {
  filename = "${var.root}/a.txt"
}
`,
			"modules/m/main.tf": dwtestOnly + `
resource "dwtest_file" "c" {
  count    = 2
  filename = "${var.root}-c${count.index}.txt"
  content  = "v1"
}

module "n" {
  source = "./n"
  root   = var.root
}
`,
			"modules/m/n/main.tf": dwtestOnly + `
data "dwtest_file" "d" {
  filename = "${path.module}/main.tf"
}

resource "terraform_data" "t" {
  input = 1
}
`,
		},
	}, {
		name:  "json_and_override_files",
		clean: true,
		base:  map[string]string{"data.tf.json": ""},
		files: map[string]string{
			"main.tf": providers + `
resource "dwtest_file" "a" {
  filename = "${var.root}/a.txt"
  content  = "v0"
}
`,
			// An override changes a.content and cannot add a resource.
			"override.tf": `
resource "dwtest_file" "a" {
  content = "v1"
}
`,
			"extra.tf.json": `{
  "//": "a JSON configuration file",
  "resource": {
    "dwtest_file": {
      "j": {"filename": "${var.root}/j.txt", "content": "j"}
    },
    "kubernetes_config_map": {
      "off": {"count": 0, "filename": "${var.root}/cm.txt", "content": "cm"}
    }
  },
  "module": {
    "jm": {"source": "./modules/jm", "root": "${var.root}"}
  }
}`,
			"data.tf.json": `{
  "data": {"dwtest_file": {"jd": {"filename": "${var.root}/j.txt"}}}
}`,
			"modules/jm/main.tf.json": `{
  "terraform": {"required_providers": {"helm": {"source": "driftwatch/helm"}}},
  "variable": {"root": {"type": "string"}},
  "resource": [
    {"helm_release": {"r": {"for_each": {}, "filename": "${var.root}/${each.key}.txt", "content": "chart"}}}
  ]
}`,
		},
	}, {
		// Terraform reads extra.tf only; OpenTofu reads extra.tofu, which
		// shadows extra.tf.
		name:  "tofu_files_shadow_tf",
		clean: true,
		files: map[string]string{
			"main.tf": dwtestOnly,
			"extra.tf": `
resource "dwtest_file" "from_tf" {
  filename = "${var.root}/tf.txt"
  content  = "tf"
}
`,
			"extra.tofu": `
resource "dwtest_file" "from_tofu" {
  filename = "${var.root}/tofu.txt"
  content  = "tofu"
}
`,
			"only.tofu.json": `{"resource": {"terraform_data": {"from_tofu_json": {"input": 1}}}}`,
		},
	}, {
		name:  "data_source_removed_from_config",
		clean: true,
		base: map[string]string{"main.tf": dwtestOnly + `
data "dwtest_file" "gone" {
  filename = "${path.module}/main.tf"
}

resource "dwtest_file" "a" {
  filename = "${var.root}/a.txt"
  content  = "v1"
}
`},
		files: map[string]string{"main.tf": dwtestOnly + `
resource "dwtest_file" "a" {
  filename = "${var.root}/a.txt"
  content  = "v1"
}
`},
	}, {
		name:  "empty_configuration",
		clean: true,
		files: map[string]string{"main.tf": dwtestOnly},
	}, {
		// A data block nested in a check block is always read during
		// apply: such a plan is never clean (exit code 2, a read in
		// planned_values), so only its configuration and prior state
		// are compared.
		name: "check_block_data",
		files: map[string]string{"main.tf": dwtestOnly + `
resource "dwtest_file" "a" {
  filename = "${var.root}/a.txt"
  content  = "v1"
}

check "present" {
  data "dwtest_file" "probe" {
    filename = "${var.root}/a.txt"
  }
  assert {
    condition     = data.dwtest_file.probe.content == "v1"
    error_message = "a.txt changed"
  }
}
`},
	}, {
		// State encryption alone leaves the plan file a plain zip.
		name:  "tofu_state_encryption",
		clean: true,
		only:  "tofu",
		files: map[string]string{"main.tf": strings.Replace(dwtestOnly, "  }\n}", "  }\n"+encryptionBlock("")+"}", 1) + `
resource "dwtest_file" "a" {
  filename = "${var.root}/a.txt"
  content  = "v1"
}
`},
	}}
}

// encryptionBlock is an OpenTofu encryption block for state, plus extra.
func encryptionBlock(extra string) string {
	return `  encryption {
    key_provider "pbkdf2" "k" {
      passphrase = "correct-horse-battery-staple-42"
    }
    method "aes_gcm" "m" {
      keys = key_provider.pbkdf2.k
    }
    state {
      method = method.aes_gcm.m
    }
` + extra + `  }
`
}

// fixturesExit0 are the planparse fixtures that plan with exit code 0.
// ignore_changes_noise is one although its plan has resource_drift: exit
// code 0 alone does not make a plan clean, but the resources read from its
// plan file still equal show -json's.
var fixturesExit0 = map[string]bool{"clean": true, "forbidden_config_count0": true, "ignore_changes_noise": true}

type tfEnv struct {
	bin, cli string
}

// forEachTool runs fn as a parallel subtest per binary (terraform, tofu).
func forEachTool(t *testing.T, fn func(t *testing.T, e tfEnv)) {
	forTools(t, "", fn)
}

// forTools is forEachTool for the binaries named only (all when empty).
func forTools(t *testing.T, only string, fn func(t *testing.T, e tfEnv)) {
	bins, cli := tftest.Tools(t)
	ran := false
	for _, b := range bins {
		if only != "" && sandbox.ToolName(b) != only {
			continue
		}
		ran = true
		t.Run(filepath.Base(b), func(t *testing.T) {
			t.Parallel()
			fn(t, tfEnv{bin: b, cli: cli})
		})
	}
	if !ran {
		tftest.Unavailable(t, only+" is not among DRIFTWATCH_TF_BINARIES")
	}
}

// name is the tool e runs, "terraform" or "tofu" (terraform-1.14 too is
// "terraform").
func (e tfEnv) name() string { return sandbox.ToolName(e.bin) }

// run runs the binary in dir and returns its exit code and output; any
// failure to run at all fails the test.
func (e tfEnv) run(t *testing.T, dir, root string, extraEnv []string, args ...string) (int, []byte) {
	t.Helper()
	cmd := exec.Command(e.bin, args...)
	cmd.Dir = dir
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + root, "TF_CLI_CONFIG_FILE=" + e.cli,
		"CHECKPOINT_DISABLE=1", "TF_IN_AUTOMATION=1", "TF_VAR_root=" + filepath.Join(root, "files")}, extraEnv...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return exit.ExitCode(), append(stdout.Bytes(), stderr.Bytes()...)
	}
	require.NoError(t, err)
	return 0, stdout.Bytes()
}

func (e tfEnv) must(t *testing.T, dir, root string, extraEnv []string, args ...string) []byte {
	t.Helper()
	code, out := e.run(t, dir, root, extraEnv, args...)
	require.Equal(t, 0, code, "%s %v:\n%s", e.bin, args, out)
	return out
}

func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for rel, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if content == "" {
			require.NoError(t, os.Remove(p))
			continue
		}
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	}
}

// plan applies and plans c as hack/gen-fixtures.sh does and returns the
// plan file, its exit code and the parsed show -json of it.
func (e tfEnv) plan(t *testing.T, c tfCase) (planFile string, exit int, shown *planparse.Plan) {
	t.Helper()
	root, err := os.MkdirTemp("", "dwplanfile")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(root) })
	work := filepath.Join(root, "work")
	require.NoError(t, os.MkdirAll(filepath.Join(root, "files"), 0o755))
	require.NoError(t, os.MkdirAll(work, 0o755))

	writeFiles(t, work, c.files)
	writeFiles(t, work, c.base)
	e.must(t, work, root, nil, "init", "-input=false", "-no-color")
	e.must(t, work, root, []string{"TF_VAR_phase=base"}, "apply", "-auto-approve", "-input=false", "-no-color")
	if c.mutate != "" {
		cmd := exec.Command(tftest.Program(t, "bash"), "-c", c.mutate)
		cmd.Env = append(os.Environ(), "DIR="+filepath.Join(root, "files"))
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "mutate: %s", out)
	}
	writeFiles(t, work, c.files)

	planFile = filepath.Join(work, "plan.tfplan")
	exit, out := e.run(t, work, root, nil, "plan", "-input=false", "-no-color", "-lock=false",
		"-detailed-exitcode", "-out="+planFile)
	require.Contains(t, []int{0, 2}, exit, "plan:\n%s", out)
	js := e.must(t, work, root, nil, "show", "-json", planFile)
	shown, err = planparse.Parse(bytes.NewReader(js))
	require.NoError(t, err)
	return planFile, exit, shown
}

// withoutPlanned drops drift.SeenInPlanned: what configuration and prior
// state contribute, which is the same on any plan.
func withoutPlanned(rs []planparse.TypedResource) []planparse.TypedResource {
	out := []planparse.TypedResource{}
	for _, r := range rs {
		r.SeenIn = slices.DeleteFunc(slices.Clone(r.SeenIn), func(s string) bool { return s == drift.SeenInPlanned })
		if len(r.SeenIn) > 0 {
			out = append(out, r)
		}
	}
	return out
}

// checkCase asserts that CleanResources reads from the plan file exactly
// what show -json yields on a clean plan, and the configuration and prior
// state parts on any other.
func checkCase(t *testing.T, e tfEnv, c tfCase) {
	planFile, exit, shown := e.plan(t, c)
	got, _, err := CleanResources(planFile)
	require.NoError(t, err)
	t.Logf("plan exit code %d", exit)
	if c.clean {
		require.Equal(t, 0, exit, "the case must plan clean")
	}
	if exit == 0 {
		if diff := cmp.Diff(shown.Resources, got); diff != "" {
			t.Fatalf("CleanResources differs from show -json (-want +got):\n%s", diff)
		}
		return
	}
	if diff := cmp.Diff(withoutPlanned(shown.Resources), withoutPlanned(got)); diff != "" {
		t.Fatalf("configuration and prior state differ from show -json (-want +got):\n%s", diff)
	}
}

func TestCleanResourcesFixtures(t *testing.T) {
	entries, err := os.ReadDir(filepath.Join("..", "planparse", "testdata"))
	require.NoError(t, err)
	var cases []tfCase
	for _, d := range entries {
		if d.IsDir() {
			c := fixtureCase(t, d.Name())
			c.clean = fixturesExit0[d.Name()]
			cases = append(cases, c)
		}
	}
	require.NotEmpty(t, cases)
	forEachTool(t, func(t *testing.T, e tfEnv) {
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				t.Parallel()
				checkCase(t, e, c)
			})
		}
	})
}

func TestCleanResourcesConstructed(t *testing.T) {
	forEachTool(t, func(t *testing.T, e tfEnv) {
		for _, c := range constructedCases() {
			if c.only != "" && c.only != e.name() {
				continue
			}
			t.Run(c.name, func(t *testing.T) {
				t.Parallel()
				checkCase(t, e, c)
			})
		}
	})
}

// TestCleanResourcesTofuShadowing pins what the shadowing case is about,
// so that it cannot pass by both binaries reading the same files.
func TestCleanResourcesTofuShadowing(t *testing.T) {
	var c tfCase
	for _, k := range constructedCases() {
		if k.name == "tofu_files_shadow_tf" {
			c = k
		}
	}
	forEachTool(t, func(t *testing.T, e tfEnv) {
		planFile, exit, _ := e.plan(t, c)
		require.Equal(t, 0, exit)
		got, _, err := CleanResources(planFile)
		require.NoError(t, err)
		var addrs []string
		for _, r := range got {
			addrs = append(addrs, r.Address)
		}
		if e.name() == "tofu" {
			require.Equal(t, []string{"dwtest_file.from_tofu", "terraform_data.from_tofu_json"}, addrs)
		} else {
			require.Equal(t, []string{"dwtest_file.from_tf"}, addrs)
		}
	})
}

func TestCleanResourcesEncryptedPlan(t *testing.T) {
	// Plan encryption is OpenTofu's.
	forTools(t, "tofu", func(t *testing.T, e tfEnv) {
		c := tfCase{files: map[string]string{"main.tf": strings.Replace(dwtestOnly, "  }\n}",
			"  }\n"+encryptionBlock("    plan {\n      method = method.aes_gcm.m\n    }\n")+"}", 1) + `
resource "dwtest_file" "a" {
  filename = "${var.root}/a.txt"
  content  = "v1"
}
`}}
		planFile, exit, _ := e.plan(t, c)
		require.Equal(t, 0, exit)
		_, _, err := CleanResources(planFile)
		require.ErrorContains(t, err, "encrypted")
	})
}

// TestCleanResourcesSecretsStayOut corrupts the state of a real plan right
// after a secret value and checks the error does not quote it.
func TestCleanResourcesSecretsStayOut(t *testing.T) {
	const canary = "canary-3f9d2e7a41"
	forEachTool(t, func(t *testing.T, e tfEnv) {
		c := tfCase{clean: true, files: map[string]string{"main.tf": dwtestOnly + `
resource "dwtest_file" "secret" {
  filename          = "${var.root}/secret.txt"
  sensitive_content = "` + canary + `"
}

resource "dwtest_file" "plain" {
  filename = "${var.root}/plain.txt"
  content  = "` + canary + `-plain"
}
`}}
		planFile, exit, _ := e.plan(t, c)
		require.Equal(t, 0, exit)
		_, _, err := CleanResources(planFile)
		require.NoError(t, err)

		members := readZip(t, planFile)
		state := members[memberState]
		i := bytes.Index(state, []byte(canary+`"`)) // sensitive_content's value
		require.GreaterOrEqual(t, i, 0, "the state holds the canary")
		end := i + len(canary) + 1 // past the closing quote
		corruptions := map[string][]byte{
			"stray character":  concat(state[:end], []byte(canary+"x"), state[end:]),
			"truncated":        state[:end],
			"number for a key": bytes.Replace(state, []byte(`"mode":`), []byte(`"mode":98765431,"x":`), 1),
		}
		for name, bad := range corruptions {
			t.Run(strings.ReplaceAll(name, " ", "_"), func(t *testing.T) {
				m := cloneMembers(members)
				m[memberState] = bad
				_, _, err := CleanResources(writeZip(t, m))
				require.Error(t, err)
				require.NotContains(t, err.Error(), "canary")
				require.NotContains(t, err.Error(), "98765431")
			})
		}
	})
}

func concat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

func readZip(t *testing.T, name string) map[string][]byte {
	t.Helper()
	zr, err := zip.OpenReader(name)
	require.NoError(t, err)
	defer zr.Close()
	out := map[string][]byte{}
	for _, f := range zr.File {
		rc, err := f.Open()
		require.NoError(t, err)
		b, err := io.ReadAll(rc)
		require.NoError(t, err)
		require.NoError(t, rc.Close())
		out[f.Name] = b
	}
	return out
}

func cloneMembers(m map[string][]byte) map[string][]byte {
	out := make(map[string][]byte, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// writeZip writes members (sorted by name) to a new plan file.
func writeZip(t *testing.T, members map[string][]byte) string {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	names := make([]string, 0, len(members))
	for n := range members {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		w, err := zw.Create(n)
		require.NoError(t, err)
		_, err = w.Write(members[n])
		require.NoError(t, err)
	}
	require.NoError(t, zw.Close())
	p := filepath.Join(t.TempDir(), "plan.tfplan")
	require.NoError(t, os.WriteFile(p, buf.Bytes(), 0o644))
	return p
}

// synthetic is a minimal plan file as Terraform lays it out.
func synthetic() map[string][]byte {
	return map[string][]byte{
		memberPlan:                   []byte("protobuf"),
		memberState:                  []byte(`{"version":4,"terraform_version":"1.11.4","serial":1,"lineage":"l","outputs":{"o":{"value":"canary-output","type":"string","sensitive":true}},"resources":[{"module":"module.m[\"a\"]","mode":"managed","type":"t_x","name":"n","provider":"p","instances":[{"index_key":0,"attributes":{"v":"canary-attr"}},{"index_key":1,"deposed":"abcd1234","attributes":{}}]},{"mode":"data","type":"t_d","name":"d","instances":[{"attributes":{}}]}],"check_results":null}`),
		"tfstate-prev":               []byte(`{"version":4,"resources":[]}`),
		memberManifest:               []byte(`[{"Key":"","Dir":"."},{"Key":"m","Source":"./m","Dir":"m"}]`),
		"tfconfig/m-/main.tf":        []byte("module \"m\" {\n  source   = \"./m\"\n  for_each = toset([\"a\"])\n}\n"),
		"tfconfig/m-m/main.tf":       []byte("resource \"t_x\" \"n\" {\n  count = 2\n}\n"),
		"tfconfig/m-m/x_override.tf": []byte("resource \"t_x\" \"added_by_override\" {}\n"),
		".terraform.lock.hcl":        []byte(""),
	}
}

func TestCleanResourcesSynthetic(t *testing.T) {
	got, _, err := CleanResources(writeZip(t, synthetic()))
	require.NoError(t, err)
	want := []planparse.TypedResource{
		{Address: "data.t_d.d", Mode: "data", Type: "t_d", SeenIn: []string{drift.SeenInState}},
		{Address: "module.m.t_x.n", Mode: "managed", Type: "t_x", SeenIn: []string{drift.SeenInConfig}},
		{Address: `module.m["a"].t_x.n[0]`, Mode: "managed", Type: "t_x", SeenIn: []string{drift.SeenInState, drift.SeenInPlanned}},
		// A deposed object is in prior state only.
		{Address: `module.m["a"].t_x.n[1]`, Mode: "managed", Type: "t_x", SeenIn: []string{drift.SeenInState}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
}

func TestInstanceKey(t *testing.T) {
	for raw, want := range map[string]string{
		`null`:              "",
		`0`:                 "[0]",
		`12`:                "[12]",
		`"x"`:               `["x"]`,
		`""`:                `[""]`,
		`"q\"${w}"`:         `["q\"$${w}"]`,
		`"%{p} $x %"`:       `["%%{p} $x %"]`,
		`"a\tb\nc\\"`:       `["a\tb\nc\\"]`,
		`"nbsp\u00a0é"`:     `["nbsp\u00a0é"]`,
		`"bell\u0007"`:      `["bell\u0007"]`,
		`"\ud83d\ude00 ok"`: `["😀 ok"]`,
	} {
		got, err := instanceKey([]byte(raw))
		require.NoError(t, err, raw)
		require.Equal(t, want, got, raw)
	}
	_, err := instanceKey([]byte(`{"a":1}`))
	require.Error(t, err)
}

func TestCleanResourcesErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, b, 0o644))
		return p
	}
	without := func(drop string) map[string][]byte {
		m := synthetic()
		delete(m, drop)
		return m
	}
	with := func(name, content string) map[string][]byte {
		m := synthetic()
		m[name] = []byte(content)
		return m
	}
	valid := writeZip(t, synthetic())
	validBytes, err := os.ReadFile(valid)
	require.NoError(t, err)

	for _, tc := range []struct {
		name, file, want string
	}{
		{"missing file", filepath.Join(dir, "nope"), "no such file"},
		{"not a zip", write("text", []byte("canary-plain text, not a plan")), "not a valid zip"},
		{"encrypted plan", write("enc", []byte(`{"meta":{"k":"canary-meta"},"encrypted_data":"canary-data"}`)), "encrypted"},
		{"truncated zip", write("trunc", validBytes[:len(validBytes)/2]), "not a valid zip"},
		{"missing tfstate", writeZip(t, without(memberState)), "no tfstate member"},
		{"missing tfplan", writeZip(t, without(memberPlan)), "no tfplan member"},
		{"missing manifest", writeZip(t, without(memberManifest)), "no tfconfig/modules.json member"},
		{"missing root module files", writeZip(t, with(memberManifest, `[{"Key":"m","Dir":"m"}]`)), "module not recorded"},
		{"called module not in snapshot", writeZip(t, with("tfconfig/m-m/main.tf", `module "child" { source = "./x" }`)), "not in the snapshot"},
		{"malformed manifest", writeZip(t, with(memberManifest, `[{"Key": canary`)), "malformed JSON"},
		{"malformed HCL", writeZip(t, with("tfconfig/m-/main.tf", "resource \"t\" {\n  x = \"canary-hcl\n}\n")), "tfconfig/m-/main.tf:"},
		{"unknown state version", writeZip(t, with(memberState, `{"version":3,"resources":[]}`)), "unsupported state version 3"},
		{"state without version", writeZip(t, with(memberState, `{"resources":[]}`)), "no version"},
		{"encrypted state", writeZip(t, with(memberState, `{"serial":1,"lineage":"l","meta":{"k":"canary-meta"},"encrypted_data":"canary-data","encryption_version":"v0"}`)), "encrypted"},
		{"state not an object", writeZip(t, with(memberState, `["canary-array"]`)), "malformed state"},
		{"truncated state", writeZip(t, with(memberState, `{"version":4,"resources":[{"mode":"managed","type":"t","name":"n","instances":[{"attributes":{"v":"canary-trunc`)), "truncated"},
		{"state with trailing data", writeZip(t, with(memberState, `{"version":4,"resources":[]} {"canary":1}`)), "after the state"},
		{"unknown mode", writeZip(t, with(memberState, `{"version":4,"resources":[{"mode":"canary-mode","type":"t","name":"n","instances":[]}]}`)), "unknown resource mode"},
		{"mode of the wrong type", writeZip(t, with(memberState, `{"version":4,"resources":[{"mode":4242424242,"type":"t","name":"n","instances":[]}]}`)), "unexpected JSON type"},
		{"bad index key", writeZip(t, with(memberState, `{"version":4,"resources":[{"mode":"managed","type":"t","name":"n","instances":[{"index_key":{"canary":1}}]}]}`)), "index_key"},
		{"bad type", writeZip(t, with(memberState, `{"version":4,"resources":[{"mode":"managed","type":"canary type","name":"n","instances":[]}]}`)), "invalid resource type"},
	} {
		t.Run(strings.ReplaceAll(tc.name, " ", "_"), func(t *testing.T) {
			got, _, err := CleanResources(tc.file)
			require.ErrorContains(t, err, tc.want)
			require.Nil(t, got)
			require.NotContains(t, err.Error(), "canary")
			require.NotContains(t, err.Error(), "4242424242")
		})
	}
}

// An ephemeral resource, in any module of the configuration, sends both
// readers to show -json: OpenTofu lists it among the configuration's
// resources and Terraform does not, and the plan file does not say which
// tool wrote it.
func TestEphemeralResourceNeedsShow(t *testing.T) {
	for name, src := range map[string]string{
		"tfconfig/m-m/main.tf":    "resource \"t_x\" \"n\" {}\nephemeral \"t_e\" \"canary\" {}\n",
		"tfconfig/m-/eph.tf.json": `{"ephemeral": {"t_e": {"e": {}}}}`,
		"tfconfig/m-m/inner.tofu": "ephemeral \"t_e\" \"e\" {\n  x = \"canary-value\"\n}\n",
	} {
		t.Run(name, func(t *testing.T) {
			m := synthetic()
			m[name] = []byte(src)
			plan := writeZip(t, m)
			res, _, err := CleanResources(plan)
			require.ErrorIs(t, err, ErrNeedsShow)
			require.ErrorContains(t, err, "an ephemeral resource")
			require.Nil(t, res)
			m[memberPlan] = tfplan()
			got, err := Decode(writeZip(t, m))
			require.ErrorIs(t, err, ErrNeedsShow)
			require.Nil(t, got)
			require.NotContains(t, err.Error(), "canary-value")
		})
	}
}

func TestCleanResourcesSizeLimits(t *testing.T) {
	plan := writeZip(t, synthetic())
	_, err := cleanResources(plan, limits{state: 64, config: 1 << 20})
	require.ErrorIs(t, err, errTooLarge)
	require.ErrorContains(t, err, memberState)
	_, err = cleanResources(plan, limits{state: 1 << 20, config: 16})
	require.ErrorIs(t, err, errTooLarge)
	_, err = cleanResources(plan, limits{state: 1 << 20, config: 1 << 20})
	require.NoError(t, err)
}

// TestCapReader covers a member whose header understates its size: the
// read fails past the limit instead of decompressing on.
func TestCapReader(t *testing.T) {
	r := &capReader{r: strings.NewReader("0123456789"), n: 4}
	b, err := io.ReadAll(r)
	require.ErrorIs(t, err, errTooLarge)
	require.Equal(t, "0123", string(b))
	b, err = io.ReadAll(&capReader{r: strings.NewReader("0123"), n: 4})
	require.NoError(t, err)
	require.Equal(t, "0123", string(b))
}

// newerCase is a plan of something only newer tools put into their plan
// files, planned by the binaries whose tool and minor version since names
// (a tool not named is skipped). Decode must refuse it on purpose
// (ErrNeedsShow) when needsShow[tool] is set; else its whole summary must
// equal show -json's. Features no test provider offers (Terraform 1.14's
// actions, deferred changes, ephemeral resources) are covered by the
// synthetic plans of TestDecodeErrors and TestEphemeralResourceNeedsShow
// instead; resource identity by both (TestDecodeIdentitySkipped).
type newerCase struct {
	tfCase
	since     map[string]string
	needsShow map[string]bool
	// want are the plan's changes other than no-ops as show -json
	// names them ("address actions reason"): the feature is there.
	want []string
}

// phaseVar lets a case's configuration differ between the apply
// (TF_VAR_phase=base) and the plan.
const phaseVar = `
variable "phase" {
  type    = string
  default = "plan"
}
`

func newerCases() []newerCase {
	keep := `
resource "dwtest_file" "keep" {
  filename = "${var.root}/keep.txt"
  content  = "k"
}
`
	return []newerCase{{
		// OpenTofu 1.12's enabled meta-argument turned off for an object
		// that exists: a delete with its own reason.
		tfCase: tfCase{name: "tofu_enabled_false_existing", files: map[string]string{"main.tf": dwtestOnly + phaseVar + keep + `
resource "dwtest_file" "a" {
  filename = "${var.root}/a.txt"
  content  = "v1"
  lifecycle {
    enabled = var.phase == "base"
  }
}
`}},
		since: map[string]string{"tofu": "1.12"},
		want:  []string{"dwtest_file.a delete delete_because_enabled_false"},
	}, {
		// Never enabled: in the configuration, nowhere else; nothing to do.
		tfCase: tfCase{name: "tofu_enabled_false_never", clean: true, files: map[string]string{"main.tf": dwtestOnly + keep + `
resource "dwtest_file" "off" {
  filename = "${var.root}/off.txt"
  content  = "v1"
  lifecycle {
    enabled = false
  }
}
`}},
		since: map[string]string{"tofu": "1.12"},
	}, {
		// OpenTofu 1.12's lifecycle destroy = false: a resource removed
		// from the configuration is forgotten, not destroyed.
		tfCase: tfCase{name: "tofu_destroy_false_removed",
			base: map[string]string{"main.tf": dwtestOnly + keep + `
resource "dwtest_file" "gone" {
  filename = "${var.root}/gone.txt"
  content  = "g"
  lifecycle {
    destroy = false
  }
}
`},
			files: map[string]string{"main.tf": dwtestOnly + keep}},
		since: map[string]string{"tofu": "1.12"},
		want:  []string{"dwtest_file.gone forget forgot_because_lifecycle_destroy_in_state"},
	}, {
		// ... and one that must be replaced is forgotten, then created.
		tfCase: tfCase{name: "tofu_destroy_false_replaced", files: map[string]string{"main.tf": dwtestOnly + phaseVar + keep + `
resource "dwtest_file" "r" {
  filename = "${var.root}/r-${var.phase}.txt"
  content  = "r"
  lifecycle {
    destroy = false
  }
}
`}},
		since: map[string]string{"tofu": "1.12"},
		want:  []string{"dwtest_file.r forget,create replace_because_cannot_update"},
	}, {
		// An ephemeral input variable: recorded by name in OpenTofu's plan
		// file, never its value.
		tfCase: tfCase{name: "ephemeral_variable", files: map[string]string{"main.tf": dwtestOnly + keep + `
variable "token" {
  type      = string
  default   = "canary-ephemeral"
  ephemeral = true
}

resource "dwtest_file" "a" {
  filename = "${var.root}/a.txt"
  content  = "v1"
}
`}, base: map[string]string{"main.tf": dwtestOnly + keep}},
		since: map[string]string{"terraform": "1.11", "tofu": "1.11"},
		want:  []string{"dwtest_file.a create "},
	}, {
		// An import by resource identity (the test provider's files have
		// identity {filename}): the plan file records the change's before
		// and after identity and the import's.
		tfCase: tfCase{name: "import_by_identity", mutate: `printf x > "$DIR/imp.txt"`,
			base: map[string]string{"main.tf": dwtestOnly + keep},
			files: map[string]string{"main.tf": dwtestOnly + keep + `
import {
  to       = dwtest_file.imp
  identity = { filename = "${var.root}/imp.txt" }
}

resource "dwtest_file" "imp" {
  filename = "${var.root}/imp.txt"
  content  = "y"
}
`}},
		since: map[string]string{"terraform": "1.12", "tofu": "1.12"},
		want:  []string{"dwtest_file.imp update "},
	}}
}

// version is the binary's version ("1.12.6").
func (e tfEnv) version(t *testing.T) *version.Version {
	t.Helper()
	code, out := e.run(t, t.TempDir(), t.TempDir(), nil, "version", "-json")
	require.Equal(t, 0, code, "%s", out)
	var v struct {
		Version string `json:"terraform_version"`
	}
	require.NoError(t, json.Unmarshal(out, &v), "%s", out)
	return version.Must(version.NewVersion(v.Version))
}

// What the newer tools put in their plan files is either decoded to what
// show -json gives (the whole summary) or refused on purpose.
func TestDecodeNewerPlans(t *testing.T) {
	forEachTool(t, func(t *testing.T, e tfEnv) {
		v := e.version(t)
		ran := 0
		for _, c := range newerCases() {
			since, ok := c.since[e.name()]
			if !ok || v.LessThan(version.Must(version.NewVersion(since))) {
				continue
			}
			ran++
			t.Run(c.name, func(t *testing.T) {
				t.Parallel()
				planFile, exit, shown := e.plan(t, c.tfCase)
				t.Logf("plan exit code %d", exit)
				if c.clean {
					require.Equal(t, 0, exit, "the case must plan clean")
				}
				var changes []string
				for _, ch := range shown.Changes {
					if !ch.IsNoOp() {
						changes = append(changes, ch.Address+" "+strings.Join(ch.Actions, ",")+" "+ch.ActionReason)
					}
				}
				require.Equal(t, c.want, changes, "the plan's changes")
				got, err := Decode(planFile)
				if c.needsShow[e.name()] {
					require.ErrorIs(t, err, ErrNeedsShow)
					return
				}
				require.NoError(t, err)
				ignore := cmpopts.IgnoreFields(planparse.Plan{}, "FormatVersion", "Applyable", "Complete")
				if diff := cmp.Diff(shown, got, ignore, cmpopts.EquateEmpty()); diff != "" {
					t.Fatalf("Decode differs from show -json (-want +got):\n%s", diff)
				}
				if exit == 0 {
					res, _, err := CleanResources(planFile)
					require.NoError(t, err)
					require.Equal(t, shown.Resources, res)
				}
			})
		}
		t.Logf("%d newer cases for %s %s", ran, e.name(), v)
	})
}
