package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestQueryWithTerraform runs the provider under a real Terraform 1.14 or
// later (the first among DRIFTWATCH_TF_BINARIES; skipped when there is
// none unless DRIFTWATCH_E2E says the tools are provisioned, as make test
// does): a workspace manages one file (its state gets the identity),
// `terraform query` lists it and a file made by hand, and the
// configuration it generates adopts the hand-made file with exactly one
// import.
func TestQueryWithTerraform(t *testing.T) {
	bin := queryTerraform(t)
	work := t.TempDir()
	cliConfig := mirror(t, work)
	files := filepath.Join(work, "files")
	managed, hand := filepath.Join(files, "managed.txt"), filepath.Join(files, "hand.txt")

	ws := filepath.Join(work, "ws")
	writeFiles(t, ws, map[string]string{
		"main.tf": fmt.Sprintf(`terraform {
  required_providers {
    dwtest = { source = "driftwatch/dwtest" }
  }
}

resource "dwtest_file" "managed" {
  filename = %q
  content  = "managed\n"
}
`, managed),
	})
	run := func(dir string, args ...string) []byte {
		t.Helper()
		cmd := exec.Command(bin, args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "TF_CLI_CONFIG_FILE="+cliConfig, "TF_IN_AUTOMATION=1", "CHECKPOINT_DISABLE=1", "TF_PLUGIN_CACHE_DIR=")
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("%s %s in %s: %v\n%s\n%s", filepath.Base(bin), strings.Join(args, " "), dir, err, stdout.String(), stderr.String())
		}
		return stdout.Bytes()
	}
	run(ws, "init", "-input=false", "-no-color")
	run(ws, "apply", "-auto-approve", "-input=false", "-no-color")
	if got := stateIdentities(t, filepath.Join(ws, "terraform.tfstate")); !slices.Equal(got, []string{"dwtest_file.managed " + managed}) {
		t.Fatalf("state identities %v, want dwtest_file.managed with filename %s", got, managed)
	}

	// A file made by hand, beside the managed one.
	writeFiles(t, files, map[string]string{"hand.txt": "made by hand\n"})
	writeFiles(t, ws, map[string]string{"all.tfquery.hcl": fmt.Sprintf(`list "dwtest_file" "all" {
  provider         = dwtest
  include_resource = true
  config {
    directory = %q
  }
}
`, files)})
	found := queryFound(t, run(ws, "query", "-json", "-no-color"))
	want := map[string]string{hand: "made by hand\n", managed: "managed\n"}
	if len(found) != len(want) {
		t.Fatalf("query found %v, want %v", found, want)
	}
	for name, content := range want {
		if found[name] != content {
			t.Errorf("query found %s with content %q, want %q", name, found[name], content)
		}
	}

	// The generated configuration, for the hand-made file only, in a
	// scratch copy of the workspace: a plan of exactly one import, then an
	// apply that adopts the file.
	scratch := filepath.Join(work, "scratch")
	writeFiles(t, scratch, map[string]string{
		"main.tf":           string(readFile(t, filepath.Join(ws, "main.tf"))),
		"terraform.tfstate": string(readFile(t, filepath.Join(ws, "terraform.tfstate"))),
		"hand.tfquery.hcl": fmt.Sprintf(`list "dwtest_file" "hand" {
  provider         = dwtest
  include_resource = true
  config {
    directory = %q
    pattern   = "hand.*"
  }
}
`, files)})
	run(scratch, "init", "-input=false", "-no-color")
	run(scratch, "query", "-no-color", "-generate-config-out=gen.tf")
	gen := string(readFile(t, filepath.Join(scratch, "gen.tf")))
	t.Logf("generated configuration:\n%s", gen)
	if !strings.Contains(gen, "import {") || !strings.Contains(gen, strconv.Quote(hand)) {
		t.Fatalf("generated configuration has no import of %s:\n%s", hand, gen)
	}
	run(scratch, "plan", "-input=false", "-no-color", "-out=plan.tfplan")
	var plan struct {
		ResourceChanges []struct {
			Address string `json:"address"`
			Change  struct {
				Actions   []string        `json:"actions"`
				Importing json.RawMessage `json:"importing"`
			} `json:"change"`
		} `json:"resource_changes"`
	}
	if err := json.Unmarshal(run(scratch, "show", "-json", "plan.tfplan"), &plan); err != nil {
		t.Fatal(err)
	}
	var imports, others []string
	for _, rc := range plan.ResourceChanges {
		switch {
		case len(rc.Change.Importing) > 0 && slices.Equal(rc.Change.Actions, []string{"no-op"}):
			imports = append(imports, rc.Address)
		case !slices.Equal(rc.Change.Actions, []string{"no-op"}):
			others = append(others, fmt.Sprintf("%s %v", rc.Address, rc.Change.Actions))
		}
	}
	if len(imports) != 1 || len(others) != 0 {
		t.Fatalf("plan of the generated configuration: imports %v, other changes %v; want one import and nothing else", imports, others)
	}
	run(scratch, "apply", "-input=false", "-no-color", "plan.tfplan")
	got := stateIdentities(t, filepath.Join(scratch, "terraform.tfstate"))
	if !slices.Equal(got, []string{imports[0] + " " + hand, "dwtest_file.managed " + managed}) {
		t.Errorf("state identities after the import %v, want %s and the managed file", got, imports[0])
	}
}

// queryTerraform is the first Terraform 1.14 or later among
// DRIFTWATCH_TF_BINARIES (OpenTofu has no `query`).
func queryTerraform(t *testing.T) string {
	t.Helper()
	re := regexp.MustCompile(`^Terraform v(\d+)\.(\d+)\.`)
	for _, bin := range strings.Fields(os.Getenv("DRIFTWATCH_TF_BINARIES")) {
		out, err := exec.Command(bin, "version").Output()
		if err != nil {
			continue
		}
		m := re.FindStringSubmatch(string(out))
		if m == nil {
			continue
		}
		major, _ := strconv.Atoi(m[1])
		minor, _ := strconv.Atoi(m[2])
		if major > 1 || major == 1 && minor >= 14 {
			return bin
		}
	}
	// Where the real tools are provisioned (make test sets DRIFTWATCH_E2E),
	// a missing one is a failure, not a skip.
	if os.Getenv("DRIFTWATCH_E2E") != "" {
		t.Fatal("no Terraform 1.14 or later among DRIFTWATCH_TF_BINARIES: run `make tools`")
	}
	t.Skip("no Terraform 1.14 or later among DRIFTWATCH_TF_BINARIES (DRIFTWATCH_E2E unset)")
	return ""
}

// mirror builds this provider into a filesystem mirror under dir, as
// `make tools` lays it out, and returns a CLI config using only it.
func mirror(t *testing.T, dir string) string {
	t.Helper()
	platform := runtime.GOOS + "_" + runtime.GOARCH
	bin := filepath.Join(dir, "mirror", "registry.terraform.io", "driftwatch", defaultName, defaultVersion, platform,
		"terraform-provider-"+defaultName+"_v"+defaultVersion)
	build := exec.Command("go", "build", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	rc := filepath.Join(dir, "terraformrc")
	writeFiles(t, dir, map[string]string{"terraformrc": fmt.Sprintf(`provider_installation {
  filesystem_mirror {
    path    = %q
    include = ["driftwatch/*"]
  }
}
disable_checkpoint = true
`, filepath.Join(dir, "mirror"))})
	return rc
}

func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func readFile(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// stateIdentities is "address filename" for every instance in a state
// file, sorted.
func stateIdentities(t *testing.T, name string) []string {
	t.Helper()
	var state struct {
		Resources []struct {
			Mode, Type, Name string
			Instances        []struct {
				Identity struct {
					Filename string `json:"filename"`
				} `json:"identity"`
			} `json:"instances"`
		} `json:"resources"`
	}
	if err := json.Unmarshal(readFile(t, name), &state); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range state.Resources {
		for _, in := range r.Instances {
			out = append(out, r.Type+"."+r.Name+" "+in.Identity.Filename)
		}
	}
	slices.Sort(out)
	return out
}

// queryFound reads `terraform query -json` output: the content of each
// listed file, by the filename of its identity.
func queryFound(t *testing.T, out []byte) map[string]string {
	t.Helper()
	found := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		t.Logf("query: %s", sc.Text())
		var msg struct {
			Type              string `json:"type"`
			ListResourceFound struct {
				Identity struct {
					Filename string `json:"filename"`
				} `json:"identity"`
				ResourceObject struct {
					Content string `json:"content"`
				} `json:"resource_object"`
			} `json:"list_resource_found"`
		}
		if err := json.Unmarshal(sc.Bytes(), &msg); err != nil {
			t.Fatalf("query output line %q: %v", sc.Text(), err)
		}
		if msg.Type == "list_resource_found" {
			found[msg.ListResourceFound.Identity.Filename] = msg.ListResourceFound.ResourceObject.Content
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return found
}
