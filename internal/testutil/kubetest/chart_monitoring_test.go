//go:build linux

package kubetest

import (
	"encoding/json"
	"io"
	"log/slog"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/metrics"
)

const (
	ruleKey      = "PrometheusRule/driftwatch/driftwatch"
	dashboardKey = "ConfigMap/driftwatch/driftwatch-dashboard"
)

// TestChartMonitoringOffByDefault: neither the PrometheusRule (whose CRD a
// cluster may not have) nor the dashboard renders unless asked for.
func TestChartMonitoringOffByDefault(t *testing.T) {
	out, m := mustTemplate(t)
	assert.NotContains(t, out, "monitoring.coreos.com")
	assert.NotContains(t, m, ruleKey)
	assert.NotContains(t, m, dashboardKey)
	for k := range m {
		assert.False(t, strings.HasPrefix(k, "PrometheusRule/"), k)
	}
}

// TestChartMonitoringRules renders the PrometheusRule and checks it the way
// promtool check rules does (rulefmt: groups, expressions, templates), plus
// what a user relies on: every alert has a for, a severity and a summary;
// every expression selects this release's series and only metrics the
// daemon exports, so renaming a metric fails here rather than silencing an
// alert.
func TestChartMonitoringRules(t *testing.T) {
	exported := exportedMetrics(t)
	_, m := mustTemplate(t, "--set", "prometheusRule.enabled=true",
		"--set", "prometheusRule.labels.release=prometheus",
		"--set", "prometheusRule.alertLabels.team=platform",
		"--set", "prometheusRule.alertLabels.severity=info")
	obj := get[*runtime.Unknown](t, m, ruleKey)
	var pr struct {
		APIVersion string `json:"apiVersion"`
		Metadata   struct {
			Labels map[string]string `json:"labels"`
		} `json:"metadata"`
		Spec json.RawMessage `json:"spec"`
	}
	require.NoError(t, json.Unmarshal(obj.Raw, &pr))
	assert.Equal(t, "monitoring.coreos.com/v1", pr.APIVersion)
	assert.Equal(t, "prometheus", pr.Metadata.Labels["release"])
	assert.Equal(t, "driftwatch", pr.Metadata.Labels["app.kubernetes.io/instance"])

	groups := parseRuleGroups(t, pr.Spec)
	require.Len(t, groups.Groups, 1)
	// rulefmt reads a missing for as 0: look at the rendered keys.
	var raw struct {
		Groups []struct {
			Rules []map[string]any `json:"rules"`
		} `json:"groups"`
	}
	require.NoError(t, json.Unmarshal(pr.Spec, &raw))
	hasFor := map[string]bool{}
	for _, r := range raw.Groups[0].Rules {
		_, ok := r["for"]
		hasFor[r["alert"].(string)] = ok
	}
	var alerts []string
	for _, r := range groups.Groups[0].Rules {
		name := r.Alert
		require.NotEmpty(t, name, "only alerting rules: %s", r.Expr)
		alerts = append(alerts, name)
		t.Run(name, func(t *testing.T) {
			assert.True(t, hasFor[name], "no for")
			if name == "DriftwatchForbiddenChange" || name == "DriftwatchNotificationsFailed" {
				assert.Zero(t, r.For, "fires on the first evaluation")
			} else {
				assert.NotZero(t, r.For)
			}
			assert.NotEmpty(t, r.Annotations["summary"])
			assert.NotEmpty(t, r.Annotations["description"])
			assert.Contains(t, []string{"warning", "critical"}, r.Labels["severity"], "alertLabels.severity does not override an alert's own")
			assert.Equal(t, "platform", r.Labels["team"])
			expr := parseExpr(t, r.Expr)
			for _, sel := range selectors(expr) {
				assert.Contains(t, exported, metricName(sel, exported), "%s reads a metric the daemon does not export", sel)
				assert.True(t, hasMatcher(sel, labels.MatchEqual, "job", "driftwatch"), "%s does not select the release's job", sel)
				assert.True(t, hasMatcher(sel, labels.MatchEqual, "namespace", chartNamespace), "%s does not select the release's namespace", sel)
			}
		})
	}
	assert.ElementsMatch(t, []string{
		"DriftwatchDrift", "DriftwatchForbiddenChange", "DriftwatchWorkspaceErrored",
		"DriftwatchNotificationsPending", "DriftwatchNotificationsFailed",
		"DriftwatchStoreWriteFailing", "DriftwatchSchedulerStalled",
	}, alerts)

	rules := map[string]rulefmt.Rule{}
	for _, r := range groups.Groups[0].Rules {
		rules[r.Alert] = r
	}
	// The thresholds the values describe reach the expressions.
	assert.Contains(t, rules["DriftwatchWorkspaceErrored"].Expr, "> 7200", "errored.after: 2h")
	assert.Contains(t, rules["DriftwatchWorkspaceErrored"].Expr, `status="errored"`)
	assert.Contains(t, rules["DriftwatchDrift"].Expr, `kind="drift"`)
	assert.Contains(t, rules["DriftwatchForbiddenChange"].Expr, `kind="forbidden"`)
	// The dead man's switch also fires when the metric is gone altogether.
	stalled := parseExpr(t, rules["DriftwatchSchedulerStalled"].Expr)
	assert.Contains(t, rules["DriftwatchSchedulerStalled"].Expr, "> 600", "schedulerStalled.after: 10m")
	var calls []string
	parser.Inspect(stalled, func(n parser.Node, _ []parser.Node) error {
		if c, ok := n.(*parser.Call); ok {
			calls = append(calls, c.Func.Name)
		}
		return nil
	})
	assert.Contains(t, calls, "absent")
	assert.Contains(t, calls, "time")

	// Values change the rule: an alert off, another threshold, another
	// selector.
	_, m = mustTemplate(t, "--set", "prometheusRule.enabled=true",
		"--set", "prometheusRule.alerts.drift.enabled=false",
		"--set", "prometheusRule.alerts.schedulerStalled.after=1h",
		"--set", "prometheusRule.alerts.errored.for=1h",
		"--set", "prometheusRule.interval=2m",
		"--set-string", `prometheusRule.selector=job="dw"`)
	require.NoError(t, json.Unmarshal(get[*runtime.Unknown](t, m, ruleKey).Raw, &pr))
	groups = parseRuleGroups(t, pr.Spec)
	assert.Equal(t, model.Duration(2*time.Minute), groups.Groups[0].Interval)
	rules = map[string]rulefmt.Rule{}
	for _, r := range groups.Groups[0].Rules {
		rules[r.Alert] = r
		for _, sel := range selectors(parseExpr(t, r.Expr)) {
			assert.True(t, hasMatcher(sel, labels.MatchEqual, "job", "dw"), "%s", sel)
			assert.False(t, hasMatcher(sel, labels.MatchEqual, "namespace", chartNamespace), "%s", sel)
		}
	}
	assert.NotContains(t, rules, "DriftwatchDrift")
	assert.Contains(t, rules["DriftwatchSchedulerStalled"].Expr, "> 3600")
	assert.Equal(t, model.Duration(time.Hour), rules["DriftwatchWorkspaceErrored"].For)
}

// TestChartMonitoringRejects: a duration PromQL cannot compare is refused
// by the schema, and by the template when the schema is skipped.
func TestChartMonitoringRejects(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"after with two units", []string{"--set", "prometheusRule.alerts.errored.after=1h30m"}, "prometheusRule.alerts.errored.after"},
		{"same, schema skipped", []string{"--set", "prometheusRule.alerts.errored.after=1h30m", "--skip-schema-validation"},
			`prometheusRule.alerts.errored.after must be a number and one unit of s, m, h or d (e.g. 2h), got "1h30m"`},
		{"stalled after without unit, schema skipped", []string{"--set", "prometheusRule.alerts.schedulerStalled.after=600", "--skip-schema-validation"},
			"prometheusRule.alerts.schedulerStalled.after must be"},
		{"bad for", []string{"--set", "prometheusRule.alerts.drift.for=soon"}, "prometheusRule.alerts.drift.for"},
		{"unknown alert", []string{"--set", "prometheusRule.alerts.drfit.enabled=true"}, "additional properties 'drfit' not allowed"},
		{"unknown dashboard key", []string{"--set", "grafanaDashboard.folderName=x"}, "additional properties 'folderName' not allowed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := template(t, append([]string{"--set", "prometheusRule.enabled=true"}, tc.args...)...)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

// TestChartMonitoringDashboard renders the dashboard ConfigMap and checks
// that the Grafana sidecar would pick it up and that the dashboard is one
// Grafana loads: valid JSON with uid, title and schemaVersion, every panel
// on the datasource variable, every query valid PromQL over metrics the
// daemon exports, selected by the namespace and job variables.
func TestChartMonitoringDashboard(t *testing.T) {
	exported := exportedMetrics(t)
	_, m := mustTemplate(t, "--set", "grafanaDashboard.enabled=true")
	cm := get[*corev1.ConfigMap](t, m, dashboardKey)
	assert.Equal(t, "1", cm.Labels["grafana_dashboard"])
	assert.Empty(t, cm.Annotations, "no folder by default")
	require.Len(t, cm.Data, 1)
	raw, ok := cm.Data["driftwatch.json"]
	require.True(t, ok, "data key driftwatch.json; have %v", cm.Data)

	var dash struct {
		UID           string `json:"uid"`
		Title         string `json:"title"`
		SchemaVersion int    `json:"schemaVersion"`
		Templating    struct {
			List []struct {
				Name  string `json:"name"`
				Type  string `json:"type"`
				Query any    `json:"query"`
			} `json:"list"`
		} `json:"templating"`
		Panels []dashPanel `json:"panels"`
	}
	dec := json.NewDecoder(strings.NewReader(raw))
	require.NoError(t, dec.Decode(&dash))
	_, err := dec.Token()
	require.ErrorIs(t, err, io.EOF, "one JSON document")
	assert.Equal(t, "driftwatch-overview", dash.UID)
	assert.Equal(t, "driftwatch", dash.Title)
	assert.GreaterOrEqual(t, dash.SchemaVersion, 36)

	vars := map[string]string{}
	for _, v := range dash.Templating.List {
		vars[v.Name] = v.Type
		if v.Name == "datasource" {
			assert.Equal(t, "prometheus", v.Query)
		}
	}
	assert.Equal(t, map[string]string{"datasource": "datasource", "namespace": "query", "job": "query"}, vars)

	ids := map[int]bool{}
	var titles []string
	queries := 0
	for _, p := range dash.Panels {
		assert.False(t, ids[p.ID], "panel id %d twice", p.ID)
		ids[p.ID] = true
		assert.NotEmpty(t, p.Title, "panel %d", p.ID)
		assert.Positive(t, p.GridPos.W, p.Title)
		assert.Positive(t, p.GridPos.H, p.Title)
		if p.Type == "row" {
			continue
		}
		titles = append(titles, p.Title)
		assert.Equal(t, "${datasource}", p.Datasource.UID, p.Title)
		require.NotEmpty(t, p.Targets, p.Title)
		for _, tg := range p.Targets {
			queries++
			assert.Equal(t, "${datasource}", tg.Datasource.UID, p.Title)
			expr := parseExpr(t, grafanaSubstitute(tg.Expr))
			for _, sel := range selectors(expr) {
				assert.Contains(t, exported, metricName(sel, exported), "panel %q reads a metric the daemon does not export: %s", p.Title, sel)
				assert.True(t, hasMatcher(sel, labels.MatchRegexp, "job", "$job"), "panel %q: %s ignores the job variable", p.Title, tg.Expr)
				assert.True(t, hasMatcher(sel, labels.MatchRegexp, "namespace", "$namespace"), "panel %q: %s ignores the namespace variable", p.Title, tg.Expr)
			}
		}
	}
	assert.GreaterOrEqual(t, queries, 15)
	for _, want := range []string{
		"Workspaces by status", "Findings by kind", "Run rate by result", "Run error rate", "Run duration",
		"Queue depth and active runs", "Notifications pending", "Remediations", "Store write failures",
		"Time since last scheduling cycle",
	} {
		assert.Contains(t, titles, want)
	}

	// The sidecar's label, the ConfigMap's namespace and the folder are
	// the user's.
	_, m = mustTemplate(t, "--set", "grafanaDashboard.enabled=true",
		"--set", "grafanaDashboard.label=dashboards", "--set-string", "grafanaDashboard.labelValue=driftwatch",
		"--set", "grafanaDashboard.namespace=monitoring", "--set", "grafanaDashboard.folder=Infrastructure",
		"--set", "grafanaDashboard.folderAnnotation=k8s-sidecar-target-directory")
	cm = get[*corev1.ConfigMap](t, m, "ConfigMap/monitoring/driftwatch-dashboard")
	assert.Equal(t, "driftwatch", cm.Labels["dashboards"])
	assert.NotContains(t, cm.Labels, "grafana_dashboard")
	assert.Equal(t, map[string]string{"k8s-sidecar-target-directory": "Infrastructure"}, cm.Annotations)
	assert.JSONEq(t, raw, cm.Data["driftwatch.json"])
}

// TestChartMonitoringLint lints the chart with both on.
func TestChartMonitoringLint(t *testing.T) {
	out, err := helm(t, "lint", "--strict", chartDir(t), "--namespace", chartNamespace,
		"--set", "prometheusRule.enabled=true", "--set", "grafanaDashboard.enabled=true",
		"--set", "grafanaDashboard.folder=Infrastructure")
	require.NoError(t, err)
	assert.Contains(t, out, "0 chart(s) failed")
}

type dashPanel struct {
	ID         int    `json:"id"`
	Type       string `json:"type"`
	Title      string `json:"title"`
	Datasource struct {
		UID string `json:"uid"`
	} `json:"datasource"`
	GridPos struct {
		W int `json:"w"`
		H int `json:"h"`
	} `json:"gridPos"`
	Targets []struct {
		Expr       string `json:"expr"`
		Datasource struct {
			UID string `json:"uid"`
		} `json:"datasource"`
	} `json:"targets"`
}

// exportedMetrics is the name of every metric the daemon registers through
// internal/metrics (as internal/app does), read from the collectors'
// descriptors so that vectors without series count too.
func exportedMetrics(t *testing.T) map[string]bool {
	t.Helper()
	rec := &recordingRegisterer{Registerer: prometheus.NewRegistry()}
	metrics.New(rec, func() []metrics.WorkspaceSnapshot {
		return []metrics.WorkspaceSnapshot{{Name: "a", Status: drift.StatusClean}}
	})
	metrics.NewRemediations(rec)
	metrics.RegisterStoreHealth(rec, func() (uint64, bool) { return 0, false })

	fqName := regexp.MustCompile(`fqName: "([^"]+)"`)
	names := map[string]bool{}
	for _, c := range rec.collectors {
		ch := make(chan *prometheus.Desc)
		go func() { c.Describe(ch); close(ch) }()
		for d := range ch {
			sm := fqName.FindStringSubmatch(d.String())
			require.NotNil(t, sm, "descriptor %s", d)
			names[sm[1]] = true
		}
	}
	// Not vacuous: the names the rules and dashboard build on are there.
	for _, n := range []string{
		"driftwatch_workspace_status", "driftwatch_workspace_findings", "driftwatch_run_duration_seconds",
		"driftwatch_scheduler_last_cycle_timestamp_seconds", "driftwatch_remediations_total", "driftwatch_store_write_failing",
	} {
		require.True(t, names[n], "%s not registered; have %v", n, sortedKeys(names))
	}
	return names
}

// recordingRegisterer remembers every collector registered through it.
type recordingRegisterer struct {
	prometheus.Registerer
	collectors []prometheus.Collector
}

func (r *recordingRegisterer) Register(c prometheus.Collector) error {
	r.collectors = append(r.collectors, c)
	return r.Registerer.Register(c)
}

func (r *recordingRegisterer) MustRegister(cs ...prometheus.Collector) {
	for _, c := range cs {
		if err := r.Register(c); err != nil {
			panic(err)
		}
	}
}

// parseRuleGroups checks a PrometheusRule's spec as `promtool check rules`
// checks a rule file.
func parseRuleGroups(t *testing.T, spec json.RawMessage) *rulefmt.RuleGroups {
	t.Helper()
	var v any
	require.NoError(t, json.Unmarshal(spec, &v))
	y, err := yaml.Marshal(v)
	require.NoError(t, err)
	groups, errs := rulefmt.Parse(y, false, model.LegacyValidation, promqlParser(), slog.New(slog.DiscardHandler))
	require.Empty(t, errs, "rulefmt:\n%s", y)
	return groups
}

func promqlParser() parser.Parser { return parser.NewParser(parser.Options{}) }

func parseExpr(t *testing.T, s string) parser.Expr {
	t.Helper()
	e, err := promqlParser().ParseExpr(s)
	require.NoError(t, err, "%s", s)
	return e
}

// selectors is every vector selector of e, those inside range selectors and
// function arguments included.
func selectors(e parser.Expr) []*parser.VectorSelector {
	var out []*parser.VectorSelector
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
		if vs, ok := n.(*parser.VectorSelector); ok {
			out = append(out, vs)
		}
		return nil
	})
	return out
}

// metricName is the metric a selector reads, with a histogram's series
// suffix removed when the base name is exported.
func metricName(vs *parser.VectorSelector, exported map[string]bool) string {
	name := vs.Name
	if name == "" {
		for _, m := range vs.LabelMatchers {
			if m.Name == model.MetricNameLabel && m.Type == labels.MatchEqual {
				name = m.Value
			}
		}
	}
	if exported[name] {
		return name
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if base, ok := strings.CutSuffix(name, suffix); ok && exported[base] {
			return base
		}
	}
	return name
}

func hasMatcher(vs *parser.VectorSelector, ty labels.MatchType, name, value string) bool {
	return slices.ContainsFunc(vs.LabelMatchers, func(m *labels.Matcher) bool {
		return m.Type == ty && m.Name == name && m.Value == value
	})
}

var (
	grafanaInterval = regexp.MustCompile(`\$__(rate_interval|interval|range)\b`)
	grafanaVariable = regexp.MustCompile(`\$\{?(\w+)\}?`)
)

// grafanaSubstitute replaces what Grafana substitutes before sending a
// query: interval macros become a duration; variables, which the
// dashboard only uses in regex label matchers, keep their $name so the
// matchers can be checked (PromQL reads "$job" as a plain string).
func grafanaSubstitute(expr string) string {
	expr = grafanaInterval.ReplaceAllString(expr, "5m")
	return grafanaVariable.ReplaceAllString(expr, "$$$1")
}
