package report

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/incident/group"
)

// groupSample: two workspaces whose buckets' tags_all drifted (one
// group), a third with other drift, and an ignored finding of the same
// shape (no member).
func groupSample() *Report {
	t0 := time.Date(2026, 11, 21, 23, 0, 0, 0, time.UTC)
	tags := func(addr string) drift.Finding {
		return drift.Finding{Kind: drift.KindDrift, Address: addr, Type: "aws_s3_bucket", Action: "update", Attributes: []string{"tags_all"}}
	}
	ignored := tags("aws_s3_bucket.quiet")
	ignored.Ignored = true
	return New(t0, t0.Add(9*time.Second), []drift.Result{
		{Workspace: "logs|prod", Status: drift.StatusDrift, Findings: []drift.Finding{tags("aws_s3_bucket.logs"), ignored}},
		{Workspace: "data", Status: drift.StatusDrift, Findings: []drift.Finding{tags(`aws_s3_bucket.data["a|b"]`)}},
		{Workspace: "dns", Status: drift.StatusDrift, Findings: []drift.Finding{
			{Kind: drift.KindDrift, Address: "aws_route53_record.api", Type: "aws_route53_record", Action: "update", Attributes: []string{"ttl"}},
		}},
	})
}

// Two workspaces with the same drift on the same type and attribute are
// one group, in JSON, Markdown and the table.
func TestGroups(t *testing.T) {
	r := groupSample()
	r.GroupFindings(group.Options{Window: time.Hour, MinMembers: 2})
	require.Len(t, r.Groups, 1)
	id := r.Groups[0].ID
	require.Regexp(t, `^g-[0-9a-f]{16}$`, id)

	var b bytes.Buffer
	require.NoError(t, Write(&b, "json", r))
	var got struct {
		Groups []map[string]any `json:"groups"`
	}
	require.NoError(t, json.Unmarshal(b.Bytes(), &got))
	require.Equal(t, []map[string]any{{
		"id": id, "cause": "shape", "cause_key": "aws_s3_bucket tags_all", "title": "aws_s3_bucket: tags_all changed on 2 resources in 2 workspaces",
		"workspaces": float64(2), "members": []any{
			map[string]any{"workspace": "data", "address": `aws_s3_bucket.data["a|b"]`},
			map[string]any{"workspace": "logs|prod", "address": "aws_s3_bucket.logs"},
		},
	}}, got.Groups)

	b.Reset()
	require.NoError(t, Write(&b, "markdown", r))
	require.Contains(t, b.String(), "\n### Groups\n\n")
	require.Contains(t, b.String(), "- **aws_s3_bucket: tags_all changed on 2 resources in 2 workspaces** (`"+id+"`)\n"+
		"  - data: `aws_s3_bucket.data[\"a\\|b\"]`\n"+
		"  - logs\\|prod: `aws_s3_bucket.logs`\n")

	b.Reset()
	require.NoError(t, Write(&b, "table", r))
	require.Regexp(t, `GROUP +WORKSPACES +RESOURCES +TITLE\n`+id+` +2 +2 +aws_s3_bucket: tags_all changed on 2 resources in 2 workspaces\n`, b.String())
}

// One workspace alone is no group, however many of its findings share a
// cause; a report without groups has no groups key and no section.
func TestNoGroups(t *testing.T) {
	t0 := time.Date(2026, 11, 21, 23, 0, 0, 0, time.UTC)
	tags := func(addr string) drift.Finding {
		return drift.Finding{Kind: drift.KindDrift, Address: addr, Type: "aws_s3_bucket", Action: "update", Attributes: []string{"tags_all"}}
	}
	r := New(t0, t0, []drift.Result{
		{Workspace: "logs", Status: drift.StatusDrift, Findings: []drift.Finding{tags("aws_s3_bucket.a"), tags("aws_s3_bucket.b")}},
		{Workspace: "dns", Status: drift.StatusClean},
	})
	r.GroupFindings(group.Options{MinMembers: 2})
	require.Empty(t, r.Groups)
	for format, absent := range map[string]string{"json": `"groups"`, "markdown": "Groups", "table": "GROUP"} {
		var b bytes.Buffer
		require.NoError(t, Write(&b, format, r))
		require.NotContains(t, b.String(), absent, format)
	}
	// min_members bounds a group: three is more than the two drifted.
	r = groupSample()
	r.GroupFindings(group.Options{MinMembers: 3})
	require.Empty(t, r.Groups)
}
