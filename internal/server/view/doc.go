// Package view is what the API and the pages both show, read from where
// it is kept: Source holds the store, the daemon's Control (with its
// optional remediation and silence sides), the clock, the log and the
// server's addresses, and reads the configured workspaces merged with
// their state (WorkspaceView), a workspace's live incidents, the group
// incidents (and those holding a workspace's findings: GroupsOf), the
// notifiers' health, the silences and windows, the statistics and the
// audit log; Adopt runs a scan's adoption for both (AdoptControl, the
// refusals as statuses, the outcome as apitypes.Adoption). Beside them are the queries both read the same way: a
// workspace list's filters, order and page (ListQuery), a trends window
// (StatsFilter) and an audit filter (AuditQuery), each parsed with errors
// that name the bad parameter.
//
// The statistics read every run of their window, so at most
// MaxStatsConcurrent are computed at once (ErrStatsBusy beyond) and each
// answer is kept for StatsCacheTTL per filter.
//
// It renders nothing (JSON is server/api's, HTML server/pages') and
// writes nothing: every change goes through the Control. Of the server's
// rooms it imports control and apitypes (NotifierStatus, Adoption) alone; besides
// them store, stats, runlog and drift.
package view
