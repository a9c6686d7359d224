package fleet

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/config"
	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/incident"
	"github.com/driftwatch/driftwatch/internal/notify"
	"github.com/driftwatch/driftwatch/internal/store"
)

var t0 = time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)

// memStore keeps group and workspace incidents and the outbox in memory,
// applying what decide returns as the real store does.
type memStore struct {
	mu        sync.Mutex
	groups    []store.GroupIncident
	incidents map[string][]store.Incident
	outbox    []store.OutboxMessage
}

func (m *memStore) GroupIncidents(_ context.Context, all bool) ([]store.GroupIncident, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []store.GroupIncident
	for _, g := range m.groups {
		if all || g.State == store.IncidentOpen {
			out = append(out, g)
		}
	}
	return out, nil
}

func (m *memStore) GroupIncident(_ context.Context, id string) (store.GroupIncident, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, g := range m.groups {
		if g.ID == id {
			return g, nil
		}
	}
	return store.GroupIncident{}, store.ErrNotFound
}

func (m *memStore) DecideGroups(_ context.Context, _ time.Time, decide func([]store.GroupIncident) ([]store.GroupIncident, []store.OutboxMessage)) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	changed, out := decide(slices.Clone(m.groups))
	for _, c := range changed {
		if i := slices.IndexFunc(m.groups, func(g store.GroupIncident) bool { return g.ID == c.ID }); i >= 0 {
			m.groups[i] = c
		} else {
			m.groups = append(m.groups, c)
		}
	}
	m.outbox = append(m.outbox, out...)
	return nil
}

func (m *memStore) RetireWorkspace(_ context.Context, ws string, _ time.Time, decide func([]store.Incident) ([]store.Incident, []store.OutboxMessage)) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.apply(ws, func(in []store.Incident) ([]store.Incident, []store.OutboxMessage) { return decide(in) })
	return nil
}

func (m *memStore) apply(ws string, decide func([]store.Incident) ([]store.Incident, []store.OutboxMessage)) {
	changed, out := decide(slices.Clone(m.incidents[ws]))
	for _, c := range changed {
		if i := slices.IndexFunc(m.incidents[ws], func(in store.Incident) bool { return in.Key == c.Key }); i >= 0 {
			m.incidents[ws][i] = c
		} else {
			m.incidents[ws] = append(m.incidents[ws], c)
		}
	}
	m.outbox = append(m.outbox, out...)
}

// sent lists the outbox rows since the last call as "KEY-PREFIX EVENT".
func (m *memStore) sent(t *testing.T) []notify.Message {
	t.Helper()
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []notify.Message
	for _, row := range m.outbox {
		var msg notify.Message
		require.NoError(t, json.Unmarshal(row.Payload, &msg))
		out = append(out, msg)
	}
	m.outbox = nil
	return out
}

// rig is the service over three workspaces (a, b, c) with grouping on.
type rig struct {
	t      *testing.T
	st     *memStore
	svc    *Service
	states map[string]store.WorkspaceState
	now    time.Time
	cfg    *config.Config
	// providers are each workspace's provider versions in its next runs.
	providers map[string]map[string]string
}

func newRig(t *testing.T, grouping string) *rig {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "hook-url"), []byte("https://hooks.example/x\n"), 0o600))
	cfg, err := config.Load(filepath.Join(dir, "driftwatch.yaml"), []byte(`
notifiers:
  - name: pager
    type: webhook
    webhook: { url_file: hook-url, secret_file: hook-url }
alerts: { default_notifiers: [pager] }
server: { external_url: "https://dw.example" }
`+grouping+`
workspaces:
  - { name: a, source: { path: . } }
  - { name: b, source: { path: . } }
  - { name: c, source: { path: . } }
`))
	require.NoError(t, err)
	r := &rig{t: t, st: &memStore{incidents: map[string][]store.Incident{}}, states: map[string]store.WorkspaceState{}, now: t0, cfg: cfg}
	plans := incident.Plans(cfg)
	r.svc = New(Options{
		Store:     r.st,
		Inventory: func() (*config.Config, map[string]incident.Plan) { return cfg, plans },
		States:    func(ws string) (store.WorkspaceState, bool) { s, ok := r.states[ws]; return s, ok },
		Wake:      func() {},
		Logger:    slog.New(slog.DiscardHandler),
		Now:       func() time.Time { return r.now },
	})
	return r
}

// run records a run of ws at r.now with fs (first seen at first, if not
// zero) through the service's Outcome, as the store would, then passes.
func (r *rig) run(ws string, first time.Time, fs ...drift.Finding) {
	r.t.Helper()
	for i := range fs {
		if !first.IsZero() && fs[i].Kind == drift.KindDrift {
			fs[i].Window = &drift.Window{To: first}
		}
	}
	before := r.states[ws]
	after := store.WorkspaceState{Workspace: ws, LastRunID: "run-" + r.now.Format("150405"), LastRunAt: r.now, LastSuccessAt: r.now,
		Status: drift.StatusOf(fs), Findings: fs, Fingerprint: drift.Fingerprint(ws, fs),
		Providers: r.providers[ws], CleanProviders: before.CleanProviders}
	if after.Status == drift.StatusClean {
		after.CleanProviders = after.Providers // as the store keeps them
	}
	outcome := r.svc.Outcome(ws, r.now, after.LastRunID) // before the transaction, as run.Manager asks
	r.st.mu.Lock()
	r.st.apply(ws, func(in []store.Incident) ([]store.Incident, []store.OutboxMessage) {
		return outcome(before, after, in)
	})
	r.st.mu.Unlock()
	r.states[ws] = after
	require.NoError(r.t, r.svc.Pass(context.Background()))
}

func bucket() drift.Finding {
	return drift.Finding{Kind: drift.KindDrift, Address: "aws_s3_bucket.logs", Type: "aws_s3_bucket", Action: "update", Attributes: []string{"tags_all"}}
}

func titles(msgs []notify.Message) []string {
	out := []string{}
	for _, m := range msgs {
		out = append(out, string(m.Event)+": "+notify.Title(m.Incident))
	}
	return out
}

func TestGroupingOnePageForOneCause(t *testing.T) {
	r := newRig(t, "grouping: { enabled: true, wait: 10m }")

	// a drifts: it waits for the rest of the fleet.
	r.run("a", time.Time{}, bucket())
	require.Empty(t, r.st.sent(t))

	// b drifts the same way: one group, one page.
	r.now = t0.Add(time.Minute)
	r.run("b", time.Time{}, bucket())
	msgs := r.st.sent(t)
	require.Equal(t, []string{"open: Terraform drift, one cause: aws_s3_bucket: tags_all changed on 2 resources in 2 workspaces"}, titles(msgs))
	require.Equal(t, []string{"a", "b"}, msgs[0].Incident.Group.Workspaces)
	require.Regexp(t, `^https://dw\.example/groups/g-[0-9a-f]{16}$`, msgs[0].Incident.URL)

	// c drifts in another way: it waits, then alerts on its own once its
	// wait is over, without a run.
	r.now = t0.Add(2 * time.Minute)
	sg := drift.Finding{Kind: drift.KindDrift, Address: "aws_security_group.web", Type: "aws_security_group", Action: "update", Attributes: []string{"ingress"}}
	r.run("c", time.Time{}, sg)
	require.Empty(t, r.st.sent(t))
	r.now = t0.Add(11 * time.Minute)
	require.NoError(t, r.svc.Pass(context.Background()))
	require.Empty(t, r.st.sent(t), "a's and b's waits are over too, but they are grouped")
	r.now = t0.Add(13 * time.Minute)
	require.NoError(t, r.svc.Pass(context.Background()))
	require.Equal(t, []string{"open: Terraform drift in c: 1 drifted"}, titles(r.st.sent(t)))
	require.NoError(t, r.svc.Pass(context.Background()))
	require.Empty(t, r.st.sent(t), "released once")

	// a and b run again, unchanged: nothing.
	r.now = t0.Add(20 * time.Minute)
	r.run("a", t0, bucket())
	r.run("b", t0.Add(time.Minute), bucket())
	require.Empty(t, r.st.sent(t))
	require.Empty(t, r.st.incidents["a"], "a's drift is the group's: no incident of its own")

	// a fixed: the group stays open with b.
	r.run("a", time.Time{})
	require.Equal(t, []string{"update: Terraform drift, one cause: aws_s3_bucket: tags_all changed on 1 resource in 1 workspace"}, titles(r.st.sent(t)))

	// A restarted service keeps the open group to its last member.
	restarted := New(r.svc.o)
	r.svc = restarted
	r.now = t0.Add(21 * time.Minute)
	r.run("b", t0.Add(time.Minute), bucket())
	require.Empty(t, r.st.sent(t))
	require.Empty(t, r.st.incidents["b"])

	// b fixed: resolved.
	r.run("b", time.Time{})
	require.Equal(t, []string{"resolve: Terraform drift, one cause: aws_s3_bucket: tags_all changed on 1 resource in 1 workspace"}, titles(r.st.sent(t)))
	open, err := r.st.GroupIncidents(context.Background(), false)
	require.NoError(t, err)
	require.Empty(t, open)
}

// Without grouping, every workspace alerts on its own at once.
func TestGroupingOff(t *testing.T) {
	r := newRig(t, "")
	r.run("a", time.Time{}, bucket())
	r.run("b", time.Time{}, bucket())
	require.Equal(t, []string{"open: Terraform drift in a: 1 drifted", "open: Terraform drift in b: 1 drifted"}, titles(r.st.sent(t)))
	all, err := r.st.GroupIncidents(context.Background(), true)
	require.NoError(t, err)
	require.Empty(t, all)
}

// A workspace with drift outside its group keeps its own incident for
// that part.
func TestGroupingKeepsTheRestInTheWorkspace(t *testing.T) {
	r := newRig(t, "grouping: { enabled: true, wait: 0s }")
	r.run("a", time.Time{}, bucket())
	require.Equal(t, []string{"open: Terraform drift in a: 1 drifted"}, titles(r.st.sent(t)), "wait 0s: a alerts at once")

	sg := drift.Finding{Kind: drift.KindDrift, Address: "aws_security_group.web", Type: "aws_security_group", Action: "update", Attributes: []string{"ingress"}}
	r.run("b", time.Time{}, bucket(), sg)
	msgs := r.st.sent(t)
	require.Equal(t, []string{
		"open: Terraform drift in b: 1 drifted",
		"open: Terraform drift, one cause: aws_s3_bucket: tags_all changed on 2 resources in 2 workspaces",
	}, titles(msgs))
	require.Equal(t, "aws_security_group.web", msgs[0].Incident.Findings[0].Address)

	// a's next run: its bucket is the group's now; its incident resolves,
	// saying why.
	r.run("a", time.Time{}, bucket())
	msgs = r.st.sent(t)
	require.Equal(t, []string{"resolve: Terraform drift in a: 1 drifted"}, titles(msgs), "what resolved is what it last notified")
	require.Equal(t, incident.GroupedReason, msgs[0].Incident.Reason)
}

// Drift after the same provider upgrade in two workspaces groups under
// the provider's cause.
func TestGroupingByProviderUpgrade(t *testing.T) {
	r := newRig(t, "grouping: { enabled: true, wait: 10m }")
	const aws = "registry.terraform.io/hashicorp/aws"
	r.providers = map[string]map[string]string{"a": {aws: "5.80.0"}, "b": {aws: "5.80.0"}}
	r.run("a", time.Time{})
	r.run("b", time.Time{})
	r.providers = map[string]map[string]string{"a": {aws: "5.81.0"}, "b": {aws: "5.81.0"}}
	tags := func(addr string) drift.Finding {
		return drift.Finding{Kind: drift.KindDrift, Address: addr, Type: "aws_s3_bucket", Action: "update", Attributes: []string{"tags_all"}, Provider: aws}
	}
	r.now = t0.Add(time.Minute)
	r.run("a", time.Time{}, tags("aws_s3_bucket.logs"), tags("aws_s3_bucket.web"))
	r.run("b", time.Time{}, tags("aws_s3_bucket.logs"))
	msgs := r.st.sent(t)
	require.Equal(t, []string{"open: Terraform drift, one cause: hashicorp/aws 5.80.0 → 5.81.0: tags_all changed on 3 resources in 2 workspaces"}, titles(msgs))
	require.Equal(t, "provider", msgs[0].Incident.Group.Cause)
}
