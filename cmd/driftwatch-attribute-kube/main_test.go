package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/driftwatch/driftwatch/internal/drift/attribution"
	"github.com/stretchr/testify/require"
)

// envBeMain makes the test binary run main instead of the tests: the
// attribution command of TestAdapterThroughAsk and the kube test.
const envBeMain = "DRIFTWATCH_ATTRIBUTE_KUBE_TEST_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(envBeMain) == "1" {
		main()
	}
	os.Exit(m.Run())
}

// adapter is this test binary as an attribution command reading log.
func adapter(t *testing.T, log string) attribution.Command {
	t.Helper()
	exe, err := os.Executable()
	require.NoError(t, err)
	return attribution.Command{
		Argv:    []string{exe},
		Env:     map[string]string{envBeMain: "1", envAuditLog: log},
		Timeout: 30 * time.Second,
	}
}

var base = time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)

// ev is one audit event as kube-apiserver writes it.
type ev struct {
	id, verb, user, as, resource, sub, ns, name, stage string
	code                                               int
	at                                                 time.Duration // after base
}

func (e ev) line() string {
	m := map[string]any{
		"kind": "Event", "apiVersion": "audit.k8s.io/v1", "level": "Metadata",
		"auditID": e.id, "stage": "ResponseComplete", "verb": e.verb,
		"requestURI":               "/api/v1/namespaces/" + e.ns + "/" + e.resource + "/" + e.name,
		"user":                     map[string]any{"username": e.user, "groups": []string{"system:authenticated"}},
		"objectRef":                map[string]any{"resource": e.resource, "namespace": e.ns, "name": e.name, "apiVersion": "v1"},
		"responseStatus":           map[string]any{"metadata": map[string]any{}, "code": e.code},
		"requestReceivedTimestamp": base.Add(e.at - time.Millisecond).Format("2006-01-02T15:04:05.000000Z07:00"),
		"stageTimestamp":           base.Add(e.at).Format("2006-01-02T15:04:05.000000Z07:00"),
	}
	if e.stage != "" {
		m["stage"] = e.stage
	}
	if e.sub != "" {
		m["objectRef"].(map[string]any)["subresource"] = e.sub
	}
	if e.as != "" {
		m["impersonatedUser"] = map[string]any{"username": e.as}
	}
	b, _ := json.Marshal(m)
	return string(b)
}

func writeLog(t *testing.T, lines ...string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "audit.log")
	require.NoError(t, os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o600))
	return p
}

func cm(id, verb, user string, at time.Duration) ev {
	return ev{id: id, verb: verb, user: user, resource: "configmaps", ns: "apps", name: "settings", code: 200, at: at}
}

func TestRun(t *testing.T) {
	log := writeLog(t,
		cm("c1", "create", "alice", 1*time.Minute).line(),
		cm("g1", "get", "eve", 20*time.Minute).line(), // reads change nothing
		cm("u1", "update", "bob", 10*time.Minute).line(),
		`{"not":"an event"}`, "garbage", "",
		func() string { e := cm("f1", "patch", "mallory", 11*time.Minute); e.code = 403; return e.line() }(), // refused
		func() string {
			e := cm("r1", "patch", "carol", 12*time.Minute)
			e.stage = "RequestReceived"
			return e.line()
		}(), // not done
		func() string { e := cm("s1", "patch", "kcm", 13*time.Minute); e.sub = "status"; return e.line() }(),
		func() string { e := cm("o1", "patch", "dave", 14*time.Minute); e.ns = "other"; return e.line() }(),
		func() string { e := cm("i1", "patch", "admin", 30*time.Minute); e.as = "frank"; return e.line() }(),
		ev{id: "n1", verb: "patch", user: "gina", resource: "namespaces", ns: "apps", name: "apps", code: 200, at: 5 * time.Minute}.line(),
		ev{id: "cr1", verb: "update", user: "hank", resource: "clusterroles", name: "view", code: 200, at: 6 * time.Minute}.line(),
	)
	tests := []struct {
		name     string
		query    string
		wantCode int
		wantOut  map[string]string
		wantErr  string
	}{
		{
			name:  "last change in the window",
			query: queryJSON(t, "kubernetes_config_map_v1", map[string]string{"id": "apps/settings"}, 0, 25*time.Minute),
			wantOut: map[string]string{
				"actor": "bob", "time": "2026-11-28T10:10:00Z", "source": "kubernetes-audit", "event_id": "u1",
			},
		},
		{
			name:    "window before the update",
			query:   queryJSON(t, "kubernetes_config_map", map[string]string{"id": "apps/settings"}, 0, 9*time.Minute),
			wantOut: map[string]string{"actor": "alice", "time": "2026-11-28T10:01:00Z", "source": "kubernetes-audit", "event_id": "c1"},
		},
		{
			name:    "metadata ids, impersonation",
			query:   queryJSON(t, "kubernetes_config_map_v1", map[string]string{"metadata.namespace": "apps", "metadata.name": "settings"}, 25*time.Minute, 40*time.Minute),
			wantOut: map[string]string{"actor": "frank (impersonated by admin)", "time": "2026-11-28T10:30:00Z", "source": "kubernetes-audit", "event_id": "i1"},
		},
		{
			name:    "a namespace",
			query:   queryJSON(t, "kubernetes_namespace_v1", map[string]string{"id": "apps"}, 0, time.Hour),
			wantOut: map[string]string{"actor": "gina", "time": "2026-11-28T10:05:00Z", "source": "kubernetes-audit", "event_id": "n1"},
		},
		{
			name:    "a cluster-scoped object",
			query:   queryJSON(t, "kubernetes_cluster_role", map[string]string{"id": "view"}, 0, time.Hour),
			wantOut: map[string]string{"actor": "hank", "time": "2026-11-28T10:06:00Z", "source": "kubernetes-audit", "event_id": "cr1"},
		},
		{
			name:     "nothing in the window",
			query:    queryJSON(t, "kubernetes_config_map_v1", map[string]string{"id": "apps/settings"}, 15*time.Minute, 25*time.Minute),
			wantCode: exitNotFound,
			wantErr:  "driftwatch-attribute-kube: no create/update/patch/delete of configmaps apps/settings in the audit log between 2026-11-28T10:15:00Z and 2026-11-28T10:25:00Z\n",
		},
		{
			name:     "another object",
			query:    queryJSON(t, "kubernetes_secret_v1", map[string]string{"id": "apps/settings"}, 0, time.Hour),
			wantCode: exitNotFound,
			wantErr:  "driftwatch-attribute-kube: no create/update/patch/delete of secrets apps/settings in the audit log between 2026-11-28T10:00:00Z and 2026-11-28T11:00:00Z\n",
		},
		{
			name:     "not a kubernetes resource",
			query:    queryJSON(t, "aws_s3_bucket", map[string]string{"id": "logs"}, 0, time.Hour),
			wantCode: exitNotFound,
			wantErr:  "driftwatch-attribute-kube: type \"aws_s3_bucket\": only the kubernetes provider's typed resources (kubernetes_config_map_v1, ...) are known\n",
		},
		{
			name:     "no id",
			query:    queryJSON(t, "kubernetes_config_map_v1", map[string]string{"arn": "x"}, 0, time.Hour),
			wantCode: exitNotFound,
			wantErr:  "driftwatch-attribute-kube: kubernetes_config_map_v1.x: no id or metadata.name among the ids\n",
		},
		{
			name: "not JSON", query: "nope", wantCode: exitUsage,
			wantErr: "driftwatch-attribute-kube: query: not JSON: invalid character 'o' in literal null (expecting 'u')\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run([]string{"-audit-log", log}, strings.NewReader(tt.query), &stdout, &stderr, func(string) string { return "" })
			require.Equal(t, tt.wantCode, code, stderr.String())
			if tt.wantOut == nil {
				require.Empty(t, stdout.String())
				require.Equal(t, tt.wantErr, stderr.String())
				require.Equal(t, 1, strings.Count(stderr.String(), "\n"), "one line")
				return
			}
			require.Empty(t, stderr.String())
			var got map[string]string
			require.NoError(t, json.Unmarshal(stdout.Bytes(), &got))
			require.Equal(t, tt.wantOut, got)
		})
	}
}

// queryJSON is a Query as driftwatch writes it, its window relative to base.
func queryJSON(t *testing.T, typ string, ids map[string]string, from, to time.Duration) string {
	t.Helper()
	b, err := json.Marshal(attribution.Query{
		Workspace: "apps", Address: typ + ".x", Type: typ, IDs: ids,
		Window: attribution.Window{From: base.Add(from), To: base.Add(to)},
	})
	require.NoError(t, err)
	return string(b)
}

func TestRunFlags(t *testing.T) {
	older := writeLog(t, cm("old", "update", "alice", time.Minute).line())
	newer := writeLog(t, cm("new", "update", "bob", 2*time.Minute).line())
	q := queryJSON(t, "kubernetes_config_map_v1", map[string]string{"id": "apps/settings"}, 0, time.Hour)
	env := func(k string) string {
		if k == envAuditLog {
			return older
		}
		return ""
	}
	tests := []struct {
		name      string
		args      []string
		getenv    func(string) string
		wantCode  int
		wantActor string
		wantErr   string
	}{
		{name: "env", getenv: env, wantActor: "alice"},
		{name: "flag wins", args: []string{"-audit-log", newer}, getenv: env, wantActor: "bob"},
		{name: "rotated files", args: []string{"-audit-log", newer, "-audit-log", older}, getenv: env, wantActor: "bob"},
		{name: "no log", getenv: func(string) string { return "" }, wantCode: exitUsage, wantErr: "no audit log: pass -audit-log or set DRIFTWATCH_AUDIT_LOG"},
		{name: "missing log", args: []string{"-audit-log", older + ".missing"}, getenv: env, wantCode: exitUsage, wantErr: "audit log: open "},
		{name: "bad flag", args: []string{"-nope"}, getenv: env, wantCode: exitUsage, wantErr: "flag provided but not defined: -nope"},
		{name: "argument", args: []string{"x"}, getenv: env, wantCode: exitUsage, wantErr: `unexpected argument "x"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(tt.args, strings.NewReader(q), &stdout, &stderr, tt.getenv)
			require.Equal(t, tt.wantCode, code, stderr.String())
			if tt.wantErr != "" {
				require.Contains(t, stderr.String(), tt.wantErr)
				return
			}
			require.Contains(t, stdout.String(), `"actor":"`+tt.wantActor+`"`)
		})
	}
}

func TestEachLineSkipsOverlongLines(t *testing.T) {
	long := strings.Repeat("x", maxLine+10)
	log := writeLog(t, long, cm("u1", "update", "bob", time.Minute).line(), long)
	e, err := lastChange(log, target{resource: "configmaps", namespace: "apps", name: "settings"}, window{})
	require.NoError(t, err)
	require.NotNil(t, e)
	require.Equal(t, "u1", e.AuditID)
}

func TestResourceOf(t *testing.T) {
	for typ, want := range map[string]string{
		"kubernetes_config_map":                   "configmaps",
		"kubernetes_config_map_v1":                "configmaps",
		"kubernetes_config_map_v1_data":           "configmaps",
		"kubernetes_deployment_v1":                "deployments",
		"kubernetes_daemonset":                    "daemonsets",
		"kubernetes_ingress_v1":                   "ingresses",
		"kubernetes_network_policy_v1":            "networkpolicies",
		"kubernetes_storage_class_v1":             "storageclasses",
		"kubernetes_endpoints_v1":                 "endpoints",
		"kubernetes_horizontal_pod_autoscaler_v2": "horizontalpodautoscalers",
		"kubernetes_cluster_role_binding_v1":      "clusterrolebindings",
		"kubernetes_default_service_account_v1":   "serviceaccounts",
	} {
		got, err := resourceOf(typ)
		require.NoError(t, err, typ)
		require.Equal(t, want, got, typ)
	}
	for _, typ := range []string{"kubernetes_manifest", "kubernetes_", "google_container_cluster"} {
		_, err := resourceOf(typ)
		require.Error(t, err, typ)
	}
}

// TestAdapterThroughAsk runs the adapter as driftwatch will: an
// attribution command whose answer Ask accepts, and whose "nothing
// found" is an error naming it.
func TestAdapterThroughAsk(t *testing.T) {
	log := writeLog(t, cm("u1", "update", "bob", 10*time.Minute).line())
	cmd := adapter(t, log)
	q := attribution.Query{
		Workspace: "apps", Address: "kubernetes_config_map_v1.settings", Type: "kubernetes_config_map_v1",
		IDs:    map[string]string{"id": "apps/settings"},
		Window: attribution.Window{From: base, To: base.Add(time.Hour)},
	}
	a, err := cmd.Ask(t.Context(), q)
	require.NoError(t, err)
	require.Equal(t, attribution.Answer{Actor: "bob", Time: base.Add(10 * time.Minute), Source: "kubernetes-audit", EventID: "u1"}, a)

	q.Window.From = base.Add(30 * time.Minute)
	_, err = cmd.Ask(t.Context(), q)
	require.ErrorContains(t, err, "exit status 1: stderr: driftwatch-attribute-kube: no create/update/patch/delete of configmaps apps/settings")
}
