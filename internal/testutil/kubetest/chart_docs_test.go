//go:build linux

package kubetest

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/driftwatch/driftwatch/internal/config"
)

// TestChartDocs checks values.yaml, values.schema.json and README.md agree:
// every documented value is in README.md, every value key is in the schema,
// and the schema's config keys are driftwatch's config keys.
func TestChartDocs(t *testing.T) {
	dir := chartDir(t)
	valuesYAML, err := os.ReadFile(filepath.Join(dir, "values.yaml"))
	require.NoError(t, err)
	readme, err := os.ReadFile(filepath.Join(dir, "README.md"))
	require.NoError(t, err)
	var values map[string]any
	require.NoError(t, yaml.Unmarshal(valuesYAML, &values))

	// Top-level keys, and every key documented with `# --`, are in README.md.
	for k := range values {
		assert.Contains(t, string(readme), "`"+k, "README.md does not mention value %s", k)
	}
	for _, p := range documentedPaths(t, valuesYAML) {
		assert.Contains(t, string(readme), "| `"+p+"` |", "README.md has no row for %s", p)
	}

	// Every key of values.yaml (and of ci-values.yaml) is declared by the
	// schema, as far as the schema is strict.
	schemaJSON, err := os.ReadFile(filepath.Join(dir, "values.schema.json"))
	require.NoError(t, err)
	var schema map[string]any
	require.NoError(t, json.Unmarshal(schemaJSON, &schema))
	assert.Equal(t, false, schema["additionalProperties"], "the schema's top level must reject unknown keys")
	checkSchemaKeys(t, "", schema, values)
	ciYAML, err := os.ReadFile(ciValues(t))
	require.NoError(t, err)
	var ci map[string]any
	require.NoError(t, yaml.Unmarshal(ciYAML, &ci))
	checkSchemaKeys(t, "", schema, ci)
	// ci/ci-values.yaml turns every feature on; it leaves only the sandbox and
	// probes at their defaults, so the server-side dry run checks those too.
	for k := range values {
		switch k {
		case "podSecurityContext", "securityContext", "livenessProbe", "readinessProbe":
			continue
		}
		_, ok := ci[k]
		assert.True(t, ok, "ci/ci-values.yaml should set %s", k)
	}

	// config's keys follow internal/config.Config: a new config key needs
	// its line in values.schema.json (properties.config.properties).
	cfgSchema := schema["properties"].(map[string]any)["config"].(map[string]any)
	var schemaKeys []string
	for k := range cfgSchema["properties"].(map[string]any) {
		schemaKeys = append(schemaKeys, k)
	}
	var cfgKeys []string
	ty := reflect.TypeFor[config.Config]()
	for i := range ty.NumField() {
		tag, _, _ := strings.Cut(ty.Field(i).Tag.Get("yaml"), ",")
		if tag != "" && tag != "-" {
			cfgKeys = append(cfgKeys, tag)
		}
	}
	assert.ElementsMatch(t, cfgKeys, schemaKeys, "values.schema.json properties.config.properties vs internal/config.Config")
}

// documentedPaths returns the dotted paths of values.yaml keys that carry a
// `# --` comment.
func documentedPaths(t *testing.T, data []byte) []string {
	t.Helper()
	keyLine := regexp.MustCompile(`^(\s*)([A-Za-z0-9_]+):`)
	type level struct {
		indent int
		key    string
	}
	var stack []level
	var paths []string
	documented := false
	for _, line := range strings.Split(string(data), "\n") {
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, "# --") {
			documented = true
			continue
		}
		m := keyLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		indent := len(m[1])
		for len(stack) > 0 && stack[len(stack)-1].indent >= indent {
			stack = stack[:len(stack)-1]
		}
		stack = append(stack, level{indent, m[2]})
		if documented {
			var parts []string
			for _, l := range stack {
				parts = append(parts, l.key)
			}
			paths = append(paths, strings.Join(parts, "."))
		}
		documented = false
	}
	require.NotEmpty(t, paths)
	return paths
}

// checkSchemaKeys walks values along the schema: under an object schema with
// additionalProperties false, every key must be a declared property.
func checkSchemaKeys(t *testing.T, path string, schema map[string]any, v any) {
	t.Helper()
	obj, ok := v.(map[string]any)
	if !ok {
		return
	}
	props, _ := schema["properties"].(map[string]any)
	strict := schema["additionalProperties"] == false
	for k, sub := range obj {
		p := strings.TrimPrefix(path+"."+k, ".")
		ps, ok := props[k].(map[string]any)
		if !ok {
			assert.False(t, strict, "values key %s is not in values.schema.json", p)
			continue
		}
		checkSchemaKeys(t, p, ps, sub)
	}
}
