package e2etest

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/backend/sigv4"
	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/testutil/s3test"
)

// s3PolicyCanary is planted as the Sid of every bucket policy: the policy's
// text never reaches a report or a log.
const s3PolicyCanary = "CANARY-SID-policy-e2e-81f"

// s3Bucket sends one SigV4-signed, path-style request for bucket (with
// query, "policy" say) to srv as the workspace's own credentials would, and
// returns the status and body. s3test's client signs no query, hence this.
func s3Bucket(t *testing.T, srv *s3test.Server, method, bucket, query string, body []byte) (int, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, srv.Endpoint+"/"+bucket, bytes.NewReader(body))
	require.NoError(t, err)
	req.URL.RawQuery = query
	sigv4.Sign(req, body, sigv4.Credentials{AccessKeyID: srv.AccessKey, SecretAccessKey: srv.SecretKey}, s3test.Region, "s3", time.Now())
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, b
}

// putBucketPolicy sets bucket's policy and checks the store gives it back.
func putBucketPolicy(t *testing.T, srv *s3test.Server, bucket, policy string) {
	t.Helper()
	code, body := s3Bucket(t, srv, http.MethodPut, bucket, "policy", []byte(policy))
	require.Contains(t, []int{http.StatusOK, http.StatusNoContent}, code, "PUT ?policy: %s", body)
	code, body = s3Bucket(t, srv, http.MethodGet, bucket, "policy", nil)
	require.Equal(t, http.StatusOK, code, "GET ?policy: %s", body)
	require.Contains(t, string(body), s3PolicyCanary, "the store keeps the policy it was given")
}

// bucketPolicyDoc is a policy on bucket allowing principal the actions,
// under condition (JSON, "" for none).
func bucketPolicyDoc(bucket, principal, actions, condition string) string {
	if condition != "" {
		condition = `, "Condition": ` + condition
	}
	return fmt.Sprintf(`{"Version": "2012-10-17", "Statement": [{"Sid": %q, "Effect": "Allow", "Principal": %s,
  "Action": %s, "Resource": ["arn:aws:s3:::%s", "arn:aws:s3:::%s/*"]%s}]}`, s3PolicyCanary, principal, actions, bucket, bucket, condition)
}

// policyWorkspace is a workspace whose locked state lives in bucket on
// srv, with no resource: nothing is applied, so nothing is written to the
// extra buckets (this SeaweedFS setup has no volume to spare for a
// second bucket's objects; reads and policies need none).
func policyWorkspace(srv *s3test.Server, bucket, key string) string {
	return fmt.Sprintf(`terraform {
  backend "s3" {
    bucket                      = %q
    key                         = %q
    region                      = %q
    endpoints                   = { s3 = %q }
    use_path_style              = true
    use_lockfile                = true
    skip_credentials_validation = true
    skip_region_validation      = true
    skip_requesting_account_id  = true
    skip_metadata_api_check     = true
    skip_s3_checksum            = true
  }
}
`, bucket, key, s3test.Region, srv.Endpoint)
}

// TestS3BucketPolicyAudit: backend hygiene reads the real state bucket's
// policy with the workspace's own credentials (given only through
// secret_env_files) from a real S3-compatible store (SeaweedFS): a policy
// granting public read is a finding (attribute bucket) naming the
// principal and actions; a policy restricted by a Condition, or no policy
// at all, is none; check_bucket_policy: false keeps the check off the
// network (no finding for the public bucket either); the loopback http
// endpoint is no finding; and neither the credentials nor the policy's
// text appear in the report or the debug logs.
func TestS3BucketPolicyAudit(t *testing.T) {
	parallel(t)
	forEachTool(t, func(t *testing.T, e *tfEnv) {
		srv := s3test.Start(t, s3test.Options{AccessKey: s3CanaryKeyID, SecretKey: s3CanarySecret})
		e.allowHost(t, srv.Endpoint)
		public := srv.Bucket
		restricted, none := public+"-restricted", public+"-none"
		for _, b := range []string{restricted, none} {
			code, body := s3Bucket(t, srv, http.MethodPut, b, "", nil)
			require.Equal(t, http.StatusOK, code, "create bucket %s: %s", b, body)
		}
		putBucketPolicy(t, srv, public, bucketPolicyDoc(public, `"*"`, `["s3:GetObject", "s3:ListBucket"]`, ""))
		putBucketPolicy(t, srv, restricted, bucketPolicyDoc(restricted, `{"AWS": "*"}`, `"s3:*"`,
			`{"IpAddress": {"aws:SourceIp": "203.0.113.0/24"}}`))
		code, body := s3Bucket(t, srv, http.MethodGet, none, "policy", nil)
		require.NotEqual(t, http.StatusOK, code, "no policy on %s: %s", none, body)

		buckets := map[string]string{"public": public, "restricted": restricted, "none": none, "optout": public}
		for name, bucket := range buckets {
			e.workspace(t, name, map[string]string{"main.tf": policyWorkspace(srv, bucket, "teams/"+name+".tfstate")})
		}
		var ws strings.Builder
		for _, name := range []string{"public", "restricted", "none", "optout"} {
			fmt.Fprintf(&ws, "  - name: %s\n    source: { path: ./%s }\n    secret_env_files: %s\n", name, name,
				s3Secrets(t, e, name, s3CanaryKeyID, s3CanarySecret))
			if name == "optout" {
				ws.WriteString("    backend_policy: { check_bucket_policy: false }\n")
			}
		}
		cfg := e.config(t, "defaults:\n  timeout: 3m\nworkspaces:\n"+ws.String())
		v := driftwatch(t, nil, "validate", "--config", cfg)
		require.Equal(t, 0, v.code, v.stdout+v.stderr)

		r := driftwatch(t, nil, "audit", "--config", cfg, "--format", "json", "--log-level", "debug")
		require.Equal(t, 0, r.code, "every workspace is clean (nothing to manage); hygiene fails an audit only with --strict\n%s", r.stderr)
		rep := parseReport(t, r.stdout)
		// The debug log says what was read, per workspace, and nothing more.
		logged := func(name string, parts ...string) bool {
			for _, l := range strings.Split(r.stderr, "\n") {
				if strings.Contains(l, "workspace="+name+" ") || strings.HasSuffix(l, "workspace="+name) {
					all := true
					for _, p := range parts {
						all = all && strings.Contains(l, p)
					}
					if all {
						return true
					}
				}
			}
			return false
		}
		require.True(t, logged("public", `msg="s3 bucket policy read"`, "public_statements=1"), r.stderr)
		require.True(t, logged("restricted", `msg="s3 bucket policy read"`, "public_statements=0"), "the restricted policy was read, not missed:\n%s", r.stderr)
		require.True(t, logged("none", `msg="s3 bucket has no policy"`), r.stderr)
		require.False(t, logged("optout", "bucket polic"), "check_bucket_policy: false reads nothing:\n%s", r.stderr)
		policyFindings := func(name string) []drift.Finding {
			st, msg, fs := rep.ws(t, name)
			require.Equal(t, drift.StatusClean, st, "%s: %s\n%s", name, msg, r.stderr)
			var out []drift.Finding
			for _, f := range backendFindings(fs) {
				require.NotContains(t, f.Attributes, "endpoints.s3", "%s: a loopback http endpoint is not on the wire", name)
				if len(f.Attributes) == 1 && f.Attributes[0] == "bucket" {
					out = append(out, f)
				}
			}
			return out
		}
		pub := policyFindings("public")
		require.Len(t, pub, 1, "the public-read policy is reported")
		require.Equal(t, "backend.s3", pub[0].Address)
		require.Contains(t, pub[0].Detail, `Principal "*"`)
		require.Contains(t, pub[0].Detail, "s3:GetObject, s3:ListBucket")
		t.Logf("public bucket: %s", pub[0].Detail)
		require.Empty(t, policyFindings("restricted"), "a Condition on the source address restricts it")
		require.Empty(t, policyFindings("none"), "no policy, nothing to report")
		require.Empty(t, policyFindings("optout"), "check_bucket_policy: false")

		for _, format := range []string{"json", "table", "markdown"} {
			out := r.stdout + r.stderr
			if format != "json" {
				fr := driftwatch(t, nil, "audit", "--config", cfg, "--format", format, "--log-level", "debug")
				require.Equal(t, 0, fr.code, fr.stderr)
				out = fr.stdout + fr.stderr
			}
			assertNoS3Canary(t, format+" report and debug logs", out)
			require.NotContains(t, out, s3PolicyCanary, "%s: the policy's text stays out", format)
			require.NotContains(t, out, "203.0.113.0/24", "%s: the policy's text stays out", format)
		}

		entries, err := os.ReadDir(e.workDir())
		require.NoError(t, err)
		require.Empty(t, entries, "run directories are cleaned up")
	})
}
