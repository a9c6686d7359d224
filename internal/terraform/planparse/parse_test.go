package planparse

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/drift"
)

// fixtures returns every testdata/<case>/plan.json, keyed by case name.
func fixtures(tb testing.TB) map[string][]byte {
	tb.Helper()
	files, err := filepath.Glob("testdata/*/plan.json")
	require.NoError(tb, err)
	require.NotEmpty(tb, files, "no fixtures: run hack/gen-fixtures.sh")
	out := map[string][]byte{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(tb, err)
		out[filepath.Base(filepath.Dir(f))] = b
	}
	return out
}

func parseFixture(t *testing.T, name string) *Plan {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name, "plan.json"))
	require.NoError(t, err)
	p, err := Parse(bytes.NewReader(b))
	require.NoError(t, err)
	return p
}

var all = []string{drift.SeenInConfig, drift.SeenInState, drift.SeenInPlanned}

// The parsed form of real Terraform plans, written out in full for the
// cases that exercise each part of the format.
func TestParseFixtures(t *testing.T) {
	const dwtest = "registry.terraform.io/driftwatch/dwtest"
	tr := true
	cases := map[string]*Plan{
		"content_drift": {
			FormatVersion: "1.2", TerraformVersion: "1.11.4", Applyable: &tr, Complete: &tr,
			Drift: []Change{{Address: "dwtest_file.a", Mode: "managed", Type: "dwtest_file",
				Actions: []string{"update"}, Attributes: []string{"content"}, IDs: map[string]string{"id": "/driftwatch-fixture/a.txt"}, Provider: dwtest, Shape: "content: string → string"}},
			Changes: []Change{{Address: "dwtest_file.a", Mode: "managed", Type: "dwtest_file",
				Actions: []string{"update"}, Attributes: []string{"content"}}},
			NoOp: []string{"dwtest_file.untouched"},
			Resources: []TypedResource{
				{Address: "dwtest_file.a", Mode: "managed", Type: "dwtest_file", SeenIn: all},
				{Address: "dwtest_file.untouched", Mode: "managed", Type: "dwtest_file", SeenIn: all},
			},
			Managed: []drift.Managed{{Address: "dwtest_file.a", Type: "dwtest_file", ID: "/driftwatch-fixture/a.txt"}, {Address: "dwtest_file.untouched", Type: "dwtest_file", ID: "/driftwatch-fixture/untouched.txt"}},
		},
		"deleted_file": {
			FormatVersion: "1.2", TerraformVersion: "1.11.4", Applyable: &tr, Complete: &tr,
			// After is null for a delete, so no attribute paths.
			Drift: []Change{{Address: "local_file.gone", Mode: "managed", Type: "local_file",
				Actions: []string{"delete"}, IDs: map[string]string{"id": "5a6df720540c20d95d530d3fd6885511223d5d20"}, Provider: "registry.terraform.io/hashicorp/local"}},
			Changes: []Change{{Address: "local_file.gone", Mode: "managed", Type: "local_file",
				Actions: []string{"create"}}},
			NoOp: []string{"local_file.kept"},
			Resources: []TypedResource{
				{Address: "local_file.gone", Mode: "managed", Type: "local_file", SeenIn: []string{drift.SeenInConfig, drift.SeenInPlanned}},
				{Address: "local_file.kept", Mode: "managed", Type: "local_file", SeenIn: all},
			},
			Managed: []drift.Managed{{Address: "local_file.kept", Type: "local_file", ID: "5a6df720540c20d95d530d3fd6885511223d5d20"}},
		},
		"data_read_noise": {
			FormatVersion: "1.2", TerraformVersion: "1.11.4", Applyable: &tr, Complete: &tr,
			Changes: []Change{{Address: "data.dwtest_file.probe", Mode: "data", Type: "dwtest_file",
				Actions: []string{"read"}, ActionReason: "read_because_check_nested"}},
			NoOp:               []string{"dwtest_file.a"},
			RelevantAttributes: map[string][]string{"dwtest_file.a": {"filename"}},
			Resources: []TypedResource{
				{Address: "data.dwtest_file.probe", Mode: "data", Type: "dwtest_file", SeenIn: all},
				{Address: "dwtest_file.a", Mode: "managed", Type: "dwtest_file", SeenIn: all},
			},
			Managed: []drift.Managed{{Address: "dwtest_file.a", Type: "dwtest_file", ID: "/driftwatch-fixture/a.txt"}},
		},
		"forbidden_config_count0": {
			FormatVersion: "1.2", TerraformVersion: "1.11.4", Complete: &tr, Applyable: new(bool),
			NoOp: []string{"dwtest_file.a"},
			Resources: []TypedResource{
				{Address: "dwtest_file.a", Mode: "managed", Type: "dwtest_file", SeenIn: all},
				{Address: "kubernetes_config_map.disabled", Mode: "managed", Type: "kubernetes_config_map", SeenIn: []string{drift.SeenInConfig}},
				{Address: "module.charts.helm_release.r", Mode: "managed", Type: "helm_release", SeenIn: []string{drift.SeenInConfig}},
			},
			Managed: []drift.Managed{{Address: "dwtest_file.a", Type: "dwtest_file", ID: "/driftwatch-fixture/a.txt"}},
		},
		"nested_module_drift": {
			FormatVersion: "1.2", TerraformVersion: "1.11.4", Applyable: &tr, Complete: &tr,
			Drift: []Change{{Address: "module.outer.module.inner.dwtest_file.f", Mode: "managed", Type: "dwtest_file",
				Actions: []string{"update"}, Attributes: []string{"content"}, IDs: map[string]string{"id": "/driftwatch-fixture/inner.txt"}, Provider: dwtest, Shape: "content: string → string"}},
			Changes: []Change{{Address: "module.outer.module.inner.dwtest_file.f", Mode: "managed", Type: "dwtest_file",
				Actions: []string{"update"}, Attributes: []string{"content"}}},
			NoOp: []string{"module.outer.dwtest_file.o"},
			Resources: []TypedResource{
				{Address: "module.outer.dwtest_file.o", Mode: "managed", Type: "dwtest_file", SeenIn: all},
				{Address: "module.outer.module.inner.dwtest_file.f", Mode: "managed", Type: "dwtest_file", SeenIn: all},
			},
			Managed: []drift.Managed{{Address: "module.outer.dwtest_file.o", Type: "dwtest_file", ID: "/driftwatch-fixture/outer.txt"}, {Address: "module.outer.module.inner.dwtest_file.f", Type: "dwtest_file", ID: "/driftwatch-fixture/inner.txt"}},
		},
		"output_noise": {
			FormatVersion: "1.2", TerraformVersion: "1.11.4", Applyable: &tr, Complete: &tr,
			NoOp:          []string{"dwtest_file.a"},
			OutputChanges: []string{"release"},
			Resources: []TypedResource{
				{Address: "dwtest_file.a", Mode: "managed", Type: "dwtest_file", SeenIn: all},
			},
			Managed: []drift.Managed{{Address: "dwtest_file.a", Type: "dwtest_file", ID: "/driftwatch-fixture/a.txt"}},
		},
		"sensitive_drift": {
			FormatVersion: "1.2", TerraformVersion: "1.11.4", Applyable: &tr, Complete: &tr,
			Drift: []Change{{Address: "dwtest_file.secret", Mode: "managed", Type: "dwtest_file",
				Actions: []string{"update"}, Attributes: []string{"sensitive_content"}, IDs: map[string]string{"id": "/driftwatch-fixture/secret.txt"}, Provider: dwtest, Shape: "sensitive_content: string → string"}},
			Changes: []Change{
				{Address: "dwtest_file.secret", Mode: "managed", Type: "dwtest_file",
					Actions: []string{"update"}, Attributes: []string{"sensitive_content"}},
				// id is unknown after a replace; the sensitive map is one
				// path, its (secret) keys are never listed.
				{Address: "terraform_data.secret_map", Mode: "managed", Type: "terraform_data",
					Actions: []string{"delete", "create"}, Attributes: []string{"id", "triggers_replace"}, Unknown: []string{"id"},
					ActionReason: "replace_because_cannot_update"},
			},
			Resources: []TypedResource{
				{Address: "dwtest_file.secret", Mode: "managed", Type: "dwtest_file", SeenIn: all},
				{Address: "terraform_data.secret_map", Mode: "managed", Type: "terraform_data", SeenIn: all},
			},
			Managed: []drift.Managed{{Address: "dwtest_file.secret", Type: "dwtest_file", ID: "/driftwatch-fixture/secret.txt"}, {Address: "terraform_data.secret_map", Type: "terraform_data", ID: "10f1a6b5-716d-37ab-b49b-cabe848a1682"}},
		},
	}
	for name, want := range cases {
		t.Run(name, func(t *testing.T) {
			got := parseFixture(t, name)
			if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("Parse mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// Every fixture parses identically however the reader splits the input, and
// agrees with tfjson on the entry counts.
func TestParseReaders(t *testing.T) {
	for name, data := range fixtures(t) {
		t.Run(name, func(t *testing.T) {
			want, err := Parse(bytes.NewReader(data))
			require.NoError(t, err)
			readers := map[string]io.Reader{
				"one-byte": iotest.OneByteReader(bytes.NewReader(data)),
				"half":     iotest.HalfReader(bytes.NewReader(data)),
				"data-err": iotest.DataErrReader(bytes.NewReader(data)),
			}
			for rname, r := range readers {
				got, err := Parse(r)
				require.NoError(t, err, rname)
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("%s reader mismatch (-want +got):\n%s", rname, diff)
				}
			}
			var naive struct {
				ResourceDrift   []json.RawMessage `json:"resource_drift"`
				ResourceChanges []json.RawMessage `json:"resource_changes"`
			}
			require.NoError(t, json.Unmarshal(data, &naive))
			require.Len(t, want.Drift, len(naive.ResourceDrift))
			require.Len(t, naive.ResourceChanges, len(want.Changes)+len(want.NoOp))
		})
	}
}

// Every strict prefix of a plan is a truncation error, never a panic or a
// partial plan. Three fixtures are cut at every byte, the rest at every
// fifth (the race detector makes 50,000 parses slow).
func TestParseTruncated(t *testing.T) {
	every := map[string]bool{"content_drift": true, "sensitive_drift": true, "forbidden_prior_state": true}
	for name, data := range fixtures(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			end := bytes.LastIndexByte(data, '}')
			step := 5
			switch {
			case testing.Short():
				step = 13
			case every[name]:
				step = 1
			}
			for n := 0; n < end; n += step {
				p, err := Parse(bytes.NewReader(data[:n]))
				require.Error(t, err, "prefix of %d bytes", n)
				require.Nil(t, p)
				if n > 0 && strings.TrimSpace(string(data[:n])) != "" {
					require.ErrorIs(t, err, io.ErrUnexpectedEOF, "prefix of %d bytes", n)
				}
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	const v = `"format_version":"1.2",`
	deep := `{` + v + `"variables":` + strings.Repeat("[", maxDepth) + strings.Repeat("]", maxDepth) + `}`
	cases := map[string]struct{ in, want string }{
		"empty":             {"", "parse plan: not a terraform plan: empty input"},
		"blank":             {" \n\t", "parse plan: not a terraform plan: empty input"},
		"array":             {`[]`, "not a terraform plan: top-level value is array, not an object"},
		"string":            {`"plan"`, "not a terraform plan: top-level value is string"},
		"open brace":        {`{`, "truncated input"},
		"version 2":         {`{"format_version":"2.0","planned_values":{}}`, `unsupported plan format version "2.0": supported versions are ">= 0.1, < 2.0"`},
		"version 0.0.1":     {`{"format_version":"0.0.1","planned_values":{}}`, `unsupported plan format version "0.0.1"`},
		"version garbage":   {`{"format_version":"one","planned_values":{}}`, `unsupported plan format version "one": malformed version`},
		"version number":    {`{"format_version":1.2}`, `format_version: offset 18: expected string, found number`},
		"version missing":   {`{"planned_values":{}}`, "not a terraform plan: format_version is missing"},
		"version empty":     {`{"format_version":"","planned_values":{}}`, "not a terraform plan: format_version is empty"},
		"state":             {`{"format_version":"1.0","values":{"root_module":{}}}`, "not a terraform plan: document looks like a state"},
		"no plan keys":      {`{"format_version":"1.2"}`, "not a terraform plan: no planned_values, resource_changes or configuration"},
		"trailing data":     {`{` + v + `"planned_values":{}} {}`, "unexpected data after the plan object"},
		"changes not array": {`{` + v + `"resource_changes":"x"}`, "resource_changes: offset 43: expected array, found string"},
		"entry not object":  {`{` + v + `"resource_changes":[1]}`, "resource_changes[0]: offset 44: expected object, found number"},
		"no address":        {`{` + v + `"resource_changes":[{"change":{"actions":["update"]}}]}`, "resource_changes[0]: missing address"},
		"no actions":        {`{` + v + `"resource_drift":[{"address":"a.b","change":{}}]}`, "resource_drift[0]: a.b: missing change.actions"},
		"address number":    {`{` + v + `"resource_changes":[{"address":7}]}`, "resource_changes[0].address: offset 55: expected string, found number"},
		"bad literal":       {`{` + v + `"variables":{"a":tru}}`, `variables: offset 44: invalid character '}' in literal true`},
		"missing colon":     {`{` + v + `"variables":{"a" 1}}`, "variables: offset 41: number after object key"},
		"trailing comma":    {`{` + v + `"variables":[1,]}`, "variables: offset 39: invalid character ']' looking for beginning of value"},
		"control char":      {`{` + v + "\"variables\":\"a\x01\"}", "variables: offset 38: invalid byte 0x01 in string literal"},
		"bad escape":        {`{` + v + `"variables":"\q"}`, `variables: offset 38: invalid character 'q' in string escape code`},
		"bad unicode":       {`{` + v + `"variables":"\u12g4"}`, `variables: offset 41: invalid character 'g' in \u hexadecimal character escape`},
		"leading zero":      {`{` + v + `"variables":01}`, "parse plan: offset 37: number after object key:value pair"},
		"bare minus":        {`{` + v + `"variables":-}`, "variables: offset 37: invalid character '}' in number"},
		"bare point":        {`{` + v + `"variables":1.}`, "variables: offset 38: invalid character '}' after decimal point in number"},
		"bare exponent":     {`{` + v + `"variables":1e}`, "variables: offset 38: invalid character '}' in exponent of number"},
		"key not string":    {`{` + v + `"variables":{1:2}}`, "variables: offset 37: number looking for beginning of object key string"},
		"top key number":    {`{1:2}`, "offset 1: expected string, found number"},
		"nul byte":          {"{\x00}", "offset 1: expected string, found invalid byte 0x00"},
		"too deep":          {deep, "variables: offset 10036: exceeded max nesting depth 10000"},
		"truncated entry":   {`{` + v + `"resource_changes":[{"address":"a.b","change":{"actions":["up`, "resource_changes[0].change.actions[0]: offset 85: truncated input: unexpected EOF"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p, err := Parse(strings.NewReader(tc.in))
			require.ErrorContains(t, err, tc.want)
			require.True(t, strings.HasPrefix(err.Error(), "parse plan: "), err.Error())
			require.Nil(t, p)
		})
	}
}

func TestParseReadError(t *testing.T) {
	boom := errors.New("pipe closed")
	r := io.MultiReader(strings.NewReader(`{"format_version":"1.2","resource_changes":[`), iotest.ErrReader(boom))
	_, err := Parse(r)
	require.ErrorIs(t, err, boom)
}

// Values larger than the read buffer are captured whole.
func TestParseLargeEntry(t *testing.T) {
	big := strings.Repeat("x", 3*bufSize)
	doc := `{"format_version":"1.2","resource_changes":[` +
		`{"address":"a.b","mode":"managed","type":"a","change":{"actions":["update"],` +
		`"before":{"big":"` + big + `","keep":1},"after":{"big":"` + big + `y","keep":1},` +
		`"after_unknown":{},"before_sensitive":{},"after_sensitive":{}}},` +
		`{"address":"a.c","mode":"managed","type":"a","change":{"actions":["no-op"],"before":{"big":"` + big + `"},"after":{"big":"` + big + `"}}}]}`
	p, err := Parse(iotest.HalfReader(strings.NewReader(doc)))
	require.NoError(t, err)
	require.Equal(t, []Change{{Address: "a.b", Mode: "managed", Type: "a", Actions: []string{"update"}, Attributes: []string{"big"}}}, p.Changes)
	require.Equal(t, []string{"a.c"}, p.NoOp)
}

func TestParseSections(t *testing.T) {
	doc := `{
	  "format_version": "1.2", "errored": true, "applyable": false,
	  "resource_changes": [
	    {"address": "x.imp", "mode": "managed", "type": "x", "change": {"actions": ["no-op"], "importing": {"id": "i-1"}}},
	    {"address": "x.dep", "mode": "managed", "type": "x", "deposed": "0badc0de", "change": {"actions": ["delete"]}}
	  ],
	  "output_changes": {
	    "same": {"actions": ["no-op"]},
	    "new": {"actions": ["create"], "after": "s3cr3t", "after_sensitive": true},
	    "changed": {"actions": ["update"]}
	  },
	  "relevant_attributes": [
	    {"resource": "x.a", "attribute": ["tags", "Name"]},
	    {"resource": "x.a", "attribute": ["list", 0, "k.y"]},
	    {"resource": "x.a", "attribute": ["tags", "Name"]},
	    {"resource": "x.whole", "attribute": []}
	  ],
	  "configuration": {"root_module": {
	    "resources": [{"address": "x.cfg", "mode": "managed", "type": "x", "expressions": {"v": {"constant_value": [1, {"a": 2}]}}}],
	    "module_calls": {"m": {"source": "./m", "module": {
	      "resources": [{"address": "data.y.d", "mode": "data", "type": "y"}],
	      "module_calls": {"n": {"module": {"resources": [{"address": "x.deep", "mode": "managed", "type": "x"}]}}}
	    }}}
	  }},
	  "prior_state": {"values": {"root_module": {
	    "resources": [{"address": "x.cfg[0]", "mode": "managed", "type": "x", "values": {"secret": "nope", "id": "i-1", "n": {"id": "inner"}},
	                   "identity_schema_version": 0, "identity": {"region": "eu", "n": 3, "tags": ["a"], "none": null}},
	                  {"address": "x.hid", "mode": "managed", "type": "x", "values": {"id": "hidden"}, "sensitive_values": {"id": true}}],
	    "child_modules": [{"address": "module.m", "resources": [{"address": "module.m.data.y.d", "mode": "data", "type": "y"}],
	                       "child_modules": [{"resources": [{"address": "module.m.module.n.x.deep", "mode": "managed", "type": "x"}]}]}]
	  }}},
	  "planned_values": {"root_module": {"resources": [{"address": "x.cfg[0]", "mode": "managed", "type": "x"}]}}
	}`
	p, err := Parse(strings.NewReader(doc))
	require.NoError(t, err)
	f := false
	want := &Plan{
		FormatVersion: "1.2", Errored: true, Applyable: &f,
		Changes: []Change{
			{Address: "x.imp", Mode: "managed", Type: "x", Actions: []string{"no-op"}, Importing: true},
			{Address: "x.dep", Mode: "managed", Type: "x", Deposed: "0badc0de", Actions: []string{"delete"}},
		},
		OutputChanges: []string{"new", "changed"},
		RelevantAttributes: map[string][]string{
			"x.a":     {`list[0]["k.y"]`, "tags.Name"},
			"x.whole": {},
		},
		Resources: []TypedResource{
			{Address: "module.m.data.y.d", Mode: "data", Type: "y", SeenIn: []string{drift.SeenInConfig, drift.SeenInState}},
			{Address: "module.m.module.n.x.deep", Mode: "managed", Type: "x", SeenIn: []string{drift.SeenInConfig, drift.SeenInState}},
			{Address: "x.cfg", Mode: "managed", Type: "x", SeenIn: []string{drift.SeenInConfig}},
			{Address: "x.cfg[0]", Mode: "managed", Type: "x", SeenIn: []string{drift.SeenInState, drift.SeenInPlanned}},
			{Address: "x.hid", Mode: "managed", Type: "x", SeenIn: []string{drift.SeenInState}},
		},
		// The prior state's managed instances: identity values rendered
		// canonically (null left out), the id unless it is sensitive, never
		// another value.
		Managed: []drift.Managed{
			{Address: "module.m.module.n.x.deep", Type: "x"},
			{Address: "x.cfg[0]", Type: "x", ID: "i-1", Identity: map[string]string{"region": "eu", "n": "3", "tags": `["a"]`}},
			{Address: "x.hid", Type: "x"},
		},
	}
	if diff := cmp.Diff(want, p, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("Parse mismatch (-want +got):\n%s", diff)
	}
	require.Equal(t, "import", p.Changes[0].Action())
	require.Equal(t, "delete", p.Changes[1].Action())
}

func TestChangeAction(t *testing.T) {
	cases := map[string]struct {
		actions   []string
		importing bool
		want      string
	}{
		"create":         {[]string{"create"}, false, "create"},
		"update":         {[]string{"update"}, false, "update"},
		"delete":         {[]string{"delete"}, false, "delete"},
		"read":           {[]string{"read"}, false, "read"},
		"forget":         {[]string{"forget"}, false, "forget"},
		"replace":        {[]string{"delete", "create"}, false, "replace"},
		"replace cbd":    {[]string{"create", "delete"}, false, "replace"},
		"no-op":          {[]string{"no-op"}, false, "none"},
		"import":         {[]string{"no-op"}, true, "import"},
		"import update":  {[]string{"update"}, true, "update"},
		"unknown combo":  {[]string{"create", "forget"}, false, "create-forget"},
		"empty (broken)": {nil, false, ""},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			require.Equal(t, tc.want, Change{Actions: tc.actions, Importing: tc.importing}.Action())
		})
	}
}

// checksPlan is the "checks" part of a real plan (Terraform 1.11.4; OpenTofu
// 1.10.6 writes the same): a failing check block, a passing postcondition,
// a resource with count whose second instance fails, an unknown output
// precondition and a variable validation that errored.
const checksPlan = `{"format_version":"1.2","planned_values":{},"checks":[
 {"address":{"kind":"check","name":"health","to_display":"check.health"},"status":"fail",
  "instances":[{"address":{"to_display":"check.health"},"status":"fail","problems":[{"message":"n is 5, want more than 7"}]}]},
 {"address":{"kind":"resource","mode":"managed","type":"terraform_data","name":"ok","to_display":"terraform_data.ok"},"status":"pass",
  "instances":[{"address":{"to_display":"terraform_data.ok"},"status":"pass"}]},
 {"address":{"kind":"resource","mode":"managed","type":"terraform_data","name":"x","to_display":"terraform_data.x"},"status":"fail",
  "instances":[{"address":{"to_display":"terraform_data.x[0]","instance_key":0},"status":"pass"},
   {"address":{"to_display":"terraform_data.x[1]","instance_key":1},"status":"fail","problems":[{"message":"one"},{"message":"two"}]}]},
 {"address":{"kind":"output_value","name":"o","to_display":"output.o"},"status":"unknown"},
 {"address":{"kind":"var","name":"n","to_display":"var.n"},"status":"error","instances":null}
]}`

func TestParseChecks(t *testing.T) {
	p, err := Parse(strings.NewReader(checksPlan))
	require.NoError(t, err)
	require.Equal(t, []Check{
		{Address: "check.health", Kind: "check", Status: CheckFail, Messages: []string{"n is 5, want more than 7"}},
		{Address: "terraform_data.x[1]", Kind: "resource", Status: CheckFail, Messages: []string{"one", "two"}},
		{Address: "output.o", Kind: "output_value", Status: CheckUnknown},
		{Address: "var.n", Kind: "var", Status: CheckError},
	}, p.Checks, "passing checks and instances are dropped; a failing instance is named by its own address")

	p, err = Parse(strings.NewReader(`{"format_version":"1.2","planned_values":{},"checks":null}`))
	require.NoError(t, err)
	require.Empty(t, p.Checks)

	_, err = Parse(strings.NewReader(`{"format_version":"1.2","planned_values":{},"checks":[{"status":"fail","instances":[{"problems":[{"message":1}]}]}]}`))
	require.Error(t, err, "a message that is not a string is malformed")
}

// A drifted object's ids reach the Plan, never one a marker calls
// sensitive, and never from a planned change.
func TestParseDriftIDs(t *testing.T) {
	const canary = "CANARY-ids-71c2"
	doc := `{
	  "format_version": "1.2",
	  "resource_drift": [
	    {"address": "x.a", "mode": "managed", "type": "x", "change": {"actions": ["update"],
	      "before": {"id": "` + canary + `", "arn": "arn:a", "v": 1}, "after": {"id": "` + canary + `", "arn": "arn:a", "v": 2},
	      "before_sensitive": {}, "after_sensitive": {"id": true}}},
	    {"address": "x.gone", "mode": "managed", "type": "x", "change": {"actions": ["delete"],
	      "before": {"id": "g-1", "name": "` + canary + `"}, "after": null, "before_sensitive": {"name": true}}},
	    {"address": "x.secret", "mode": "managed", "type": "x", "change": {"actions": ["update"],
	      "before": {"id": "` + canary + `"}, "after": {"id": "` + canary + `"}, "after_sensitive": true}}
	  ],
	  "resource_changes": [
	    {"address": "x.a", "mode": "managed", "type": "x", "change": {"actions": ["update"],
	      "before": {"id": "c-1", "v": 2}, "after": {"id": "c-1", "v": 1}}}
	  ]
	}`
	p, err := Parse(strings.NewReader(doc))
	require.NoError(t, err)
	require.Len(t, p.Drift, 3)
	require.Equal(t, map[string]string{"arn": "arn:a"}, p.Drift[0].IDs)
	require.Equal(t, map[string]string{"id": "g-1"}, p.Drift[1].IDs)
	require.Nil(t, p.Drift[2].IDs)
	require.Nil(t, p.Changes[0].IDs)
	require.NotContains(t, fmt.Sprintf("%+v", p), canary)
}

// The shape of a drift names each changed top-level attribute's kinds,
// never a value.
func TestShapeOf(t *testing.T) {
	before := []byte(`{"tags": null, "tags_all": {}, "count": 1, "list": [], "on": true, "name": "a", "meta": {"k": "v"}}`)
	after := []byte(`{"tags": {"owner": "x"}, "tags_all": {"owner": "x"}, "count": 2, "list": ["a"], "on": false, "name": null, "meta": {}}`)
	require.Equal(t,
		"count: number → number; list: empty list → list; meta: object → empty object; name: string → null; on: bool → bool; tags: null → object; tags_all: empty object → object",
		shapeOf(before, after, []string{"count", "list[0]", "meta.k", "name", "on", "tags.owner", "tags_all.owner", "tags_all[\"a.b\"]"}))
	require.Empty(t, shapeOf(before, after, nil))
}
