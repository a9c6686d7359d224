package backend

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/zclconf/go-cty/cty"

	"github.com/driftwatch/driftwatch/internal/backend/sigv4"
	"github.com/driftwatch/driftwatch/internal/drift"
)

// Credential canaries of the bucket-policy tests: never in a finding, an
// error or a log line. policyCanary is planted in every policy served, as
// a Sid: the policy's text never leaves either.
const (
	policyKeyID   = "AKIDCANARYPOLICY01"
	policySecret  = "CANARY-policy-secret-4e1f"
	policyToken   = "CANARY-policy-token-77b0"
	policyCanary  = "CANARY-SID-3c2d"
	policyRegion  = "eu-central-1"
	publicRead    = `{"Version":"2012-10-17","Statement":[{"Sid":"` + policyCanary + `","Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::b/*"}]}`
	restrictedDoc = `{"Version":"2012-10-17","Statement":[{"Sid":"` + policyCanary + `","Effect":"Allow","Principal":"*","Action":"s3:*","Resource":"arn:aws:s3:::b/*","Condition":{"StringEquals":{"aws:PrincipalOrgID":"o-abc123"}}}]}`
)

func TestPublicGrants(t *testing.T) {
	stmt := func(s string) string { return `{"Version":"2012-10-17","Statement":` + s + `}` }
	for name, tc := range map[string]struct {
		doc  string
		want []grant
	}{
		"public read, one statement object": {
			doc:  stmt(`{"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"*"}`),
			want: []grant{{1, `Principal "*"`, []string{"s3:GetObject"}}},
		},
		"AWS star in a list, wildcard actions": {
			doc: stmt(`[{"Effect":"Deny","Principal":"*","Action":"s3:*","Condition":{"Bool":{"aws:SecureTransport":"false"}}},
				{"Effect":"Allow","Principal":{"AWS":["arn:aws:iam::111122223333:root","*"]},"Action":["s3:Get*","s3:List*"],"Resource":"*"}]`),
			want: []grant{{2, `Principal {"AWS": "*"}`, []string{"s3:GetObject", "s3:GetObjectVersion", "s3:ListBucket", "s3:ListBucketVersions"}}},
		},
		"s3 star, case-insensitive": {
			doc: stmt(`[{"Effect":"allow","Principal":{"aws":"*"},"Action":"S3:*"}]`),
			want: []grant{{1, `Principal {"AWS": "*"}`, []string{"s3:DeleteObject", "s3:DeleteObjectVersion", "s3:GetObject", "s3:GetObjectVersion",
				"s3:ListBucket", "s3:ListBucketVersions", "s3:PutBucketAcl", "s3:PutBucketPolicy", "s3:PutObject", "s3:PutObjectAcl"}}},
		},
		"NotAction leaving writes open": {
			doc:  stmt(`[{"Effect":"Allow","Principal":"*","NotAction":["s3:Get*","s3:List*","s3:Delete*","s3:PutBucket*","s3:PutObjectAcl"]}]`),
			want: []grant{{1, `Principal "*"`, []string{"s3:PutObject"}}},
		},
		"NotPrincipal allows everyone else": {
			doc:  stmt(`[{"Effect":"Allow","NotPrincipal":{"AWS":"arn:aws:iam::111122223333:root"},"Action":"s3:PutObject"}]`),
			want: []grant{{1, "NotPrincipal", []string{"s3:PutObject"}}},
		},
		"a non-restricting condition keeps it public": {
			doc:  stmt(`[{"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Condition":{"Bool":{"aws:SecureTransport":"true"},"StringLike":{"aws:Referer":"https://corp/*"}}}]`),
			want: []grant{{1, `Principal "*"`, []string{"s3:GetObject"}}},
		},
		"a negated or IfExists condition keeps it public": {
			doc: stmt(`[{"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Condition":{"StringNotEquals":{"aws:PrincipalAccount":"111122223333"}}},
				{"Effect":"Allow","Principal":"*","Action":"s3:ListBucket","Condition":{"StringEqualsIfExists":{"aws:PrincipalOrgID":"o-abc"}}}]`),
			want: []grant{{1, `Principal "*"`, []string{"s3:GetObject"}}, {2, `Principal "*"`, []string{"s3:ListBucket"}}},
		},
		"a wildcard-only value restricts nothing": {
			doc:  stmt(`[{"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Condition":{"StringLike":{"aws:PrincipalOrgID":"*"}}}]`),
			want: []grant{{1, `Principal "*"`, []string{"s3:GetObject"}}},
		},
		"restricted by org":        {doc: restrictedDoc},
		"restricted by source VPC": {doc: stmt(`[{"Effect":"Allow","Principal":"*","Action":"s3:*","Condition":{"StringEquals":{"aws:SourceVpce":["vpce-1a2b"]}}}]`)},
		"restricted by source IP":  {doc: stmt(`[{"Effect":"Allow","Principal":"*","Action":"s3:*","Condition":{"IpAddress":{"aws:SourceIp":"203.0.113.0/24"}}}]`)},
		"named principal":          {doc: stmt(`[{"Effect":"Allow","Principal":{"AWS":"arn:aws:iam::111122223333:role/ci"},"Action":"s3:*"}]`)},
		"service principal":        {doc: stmt(`[{"Effect":"Allow","Principal":{"Service":"logging.s3.amazonaws.com"},"Action":"s3:PutObject"}]`)},
		"public but harmless action": {
			doc: stmt(`[{"Effect":"Allow","Principal":"*","Action":["s3:GetBucketLocation","s3:GetObjectTagging"]}]`),
		},
		"deny only": {doc: stmt(`[{"Effect":"Deny","Principal":"*","Action":"s3:*"}]`)},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := publicGrants([]byte(tc.doc))
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
	for _, bad := range []string{"", "[]", `{"Statement":"x"}`, "<Policy/>"} {
		_, err := publicGrants([]byte(bad))
		require.Error(t, err, "%q", bad)
	}
}

func TestGrantsReason(t *testing.T) {
	gs, err := publicGrants([]byte(`{"Statement":[{"Effect":"Allow","Principal":"*","Action":"s3:GetObject"},` +
		`{"Effect":"Allow","Principal":{"AWS":"*"},"Action":["s3:PutObject","s3:GetObject"]}]}`))
	require.NoError(t, err)
	require.Equal(t, `s3 state bucket policy grants public access: Principal "*", Principal {"AWS": "*"} may s3:GetObject, s3:PutObject `+
		`with no restricting Condition (statements 1, 2)`, grantsReason(gs))
}

func TestBucketPolicyTarget(t *testing.T) {
	lit := func(kv ...string) config {
		c := config{typ: "s3", attrs: map[string]value{}}
		for i := 0; i+1 < len(kv); i += 2 {
			c.attrs[kv[i]] = value{v: ctyString(kv[i+1]), known: true}
		}
		return c
	}
	withEndpoints := func(c config, s3 string) config {
		c.attrs["endpoints"] = value{v: ctyObject("s3", s3), known: true}
		return c
	}
	for name, tc := range map[string]struct {
		c      config
		vars   map[string]string
		url    string // "" : not resolved
		region string
	}{
		"AWS, virtual-hosted":   {c: lit("bucket", "corp-tfstate", "region", "eu-west-1"), url: "https://corp-tfstate.s3.eu-west-1.amazonaws.com/?policy", region: "eu-west-1"},
		"AWS, path style":       {c: lit("bucket", "corp-tfstate", "region", "eu-west-1", "use_path_style", "true"), url: "https://s3.eu-west-1.amazonaws.com/corp-tfstate?policy", region: "eu-west-1"},
		"AWS, dotted bucket":    {c: lit("bucket", "corp.tfstate", "region", "us-east-2"), url: "https://s3.us-east-2.amazonaws.com/corp.tfstate?policy", region: "us-east-2"},
		"AWS China":             {c: lit("bucket", "b", "region", "cn-north-1"), url: "https://b.s3.cn-north-1.amazonaws.com.cn/?policy", region: "cn-north-1"},
		"region from env":       {c: lit("bucket", "b"), vars: map[string]string{"AWS_DEFAULT_REGION": "ap-south-1"}, url: "https://b.s3.ap-south-1.amazonaws.com/?policy", region: "ap-south-1"},
		"endpoints.s3":          {c: withEndpoints(lit("bucket", "b", "region", "r1", "use_path_style", "true"), "http://127.0.0.1:8333/"), url: "http://127.0.0.1:8333/b?policy", region: "r1"},
		"legacy endpoint":       {c: lit("bucket", "b", "region", "r1", "endpoint", "minio.example.com:9000", "force_path_style", "true"), url: "https://minio.example.com:9000/b?policy", region: "r1"},
		"endpoint from env":     {c: lit("bucket", "b", "region", "r1"), vars: map[string]string{"AWS_ENDPOINT_URL_S3": "https://s3.example.com"}, url: "https://b.s3.example.com/?policy", region: "r1"},
		"endpoints.s3 wins":     {c: withEndpoints(lit("bucket", "b", "region", "r1", "endpoint", "https://old.example.com"), "https://new.example.com"), url: "https://b.new.example.com/?policy", region: "r1"},
		"no region":             {c: lit("bucket", "b")},
		"no bucket":             {c: lit("region", "r1")},
		"unknown bucket":        {c: config{typ: "s3", attrs: map[string]value{"bucket": {}, "region": {v: ctyString("r1"), known: true}}}},
		"unknown endpoints":     {c: func() config { c := lit("bucket", "b", "region", "r1"); c.attrs["endpoints"] = value{}; return c }()},
		"endpoint not a URL":    {c: lit("bucket", "b", "region", "r1", "endpoint", "ftp://x")},
		"endpoint without host": {c: lit("bucket", "b", "region", "r1", "endpoint", "https://")},
	} {
		t.Run(name, func(t *testing.T) {
			got, ok := bucketPolicyTarget(tc.c, tc.vars)
			if tc.url == "" {
				require.False(t, ok)
				return
			}
			require.True(t, ok)
			require.Equal(t, tc.url, got.url.String())
			require.Equal(t, tc.region, got.region)
		})
	}
}

// policyServer is an S3 stand-in on 127.0.0.1 that checks every request's
// SigV4 signature (re-signing what it received with the one key pair it
// knows) and serves a policy per bucket: public, restricted, none (404
// NoSuchBucketPolicy), denied (403 AccessDenied), notimpl (501), hang (no
// answer until the client gives up). A bad signature is a 403
// SignatureDoesNotMatch and counted.
type policyServer struct {
	*httptest.Server
	mu       sync.Mutex
	requests int
	badSigs  int
}

func startPolicyServer(t *testing.T) *policyServer {
	t.Helper()
	ps := &policyServer{}
	ps.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ps.mu.Lock()
		ps.requests++
		ps.mu.Unlock()
		if !validSignature(r) {
			ps.mu.Lock()
			ps.badSigs++
			ps.mu.Unlock()
			s3Error(w, http.StatusForbidden, "SignatureDoesNotMatch")
			return
		}
		if r.Method != http.MethodGet || r.URL.RawQuery != "policy" {
			s3Error(w, http.StatusBadRequest, "InvalidRequest")
			return
		}
		switch strings.Trim(r.URL.Path, "/") {
		case "public":
			_, _ = w.Write([]byte(publicRead))
		case "restricted":
			_, _ = w.Write([]byte(restrictedDoc))
		case "none":
			s3Error(w, http.StatusNotFound, "NoSuchBucketPolicy")
		case "denied":
			s3Error(w, http.StatusForbidden, "AccessDenied")
		case "notimpl":
			s3Error(w, http.StatusNotImplemented, "NotImplemented")
		case "hang":
			<-r.Context().Done()
		default:
			s3Error(w, http.StatusNotFound, "NoSuchBucket")
		}
	}))
	t.Cleanup(ps.Close)
	return ps
}

func s3Error(w http.ResponseWriter, status int, code string) {
	w.Header().Set("Content-Type", "application/xml")
	w.WriteHeader(status)
	// The message quotes request details, as S3's do: none of it may be
	// repeated by the client.
	_, _ = w.Write([]byte("<Error><Code>" + code + "</Code><Message>request by " + policyKeyID + " refused</Message></Error>"))
}

// validSignature re-signs the request as received (method, path, query,
// host, date, token) with the server's key pair and compares.
func validSignature(r *http.Request) bool {
	when, err := time.Parse("20060102T150405Z", r.Header.Get("X-Amz-Date"))
	if err != nil {
		return false
	}
	auth := r.Header.Get("Authorization")
	if !strings.Contains(auth, "Credential="+policyKeyID+"/"+when.Format("20060102")+"/"+policyRegion+"/s3/aws4_request") {
		return false
	}
	u := *r.URL
	u.Scheme, u.Host = "http", r.Host
	re, err := http.NewRequest(r.Method, u.String(), nil)
	if err != nil {
		return false
	}
	sigv4.Sign(re, nil, sigv4.Credentials{AccessKeyID: policyKeyID, SecretAccessKey: policySecret, SessionToken: r.Header.Get("X-Amz-Security-Token")},
		policyRegion, "s3", when)
	return r.Header.Get("X-Amz-Security-Token") == policyToken && re.Header.Get("Authorization") == auth &&
		re.Header.Get("X-Amz-Content-Sha256") == r.Header.Get("X-Amz-Content-Sha256")
}

// policyModule writes a root module whose s3 backend points at srv's
// bucket, encrypted and locked (so the policy is the only finding).
func policyModule(t *testing.T, endpoint, bucket string) string {
	t.Helper()
	dir := t.TempDir()
	src := `terraform {
  backend "s3" {
    bucket         = "` + bucket + `"
    key            = "app/terraform.tfstate"
    region         = "` + policyRegion + `"
    endpoints      = { s3 = "` + endpoint + `" }
    use_path_style = true
    encrypt        = true
    use_lockfile   = true
  }
}
`
	require.NoError(t, os.WriteFile(filepath.Join(dir, "main.tf"), []byte(src), 0o600))
	return dir
}

var policyVars = map[string]string{"AWS_ACCESS_KEY_ID": policyKeyID, "AWS_SECRET_ACCESS_KEY": policySecret, "AWS_SESSION_TOKEN": policyToken}

// TestBucketPolicyOverHTTP: Check reads the bucket policy from the block's
// endpoint with the run's credentials, signed as S3 checks it; a public
// policy is one finding (attribute bucket), anything else none; nothing of
// the credentials, the signature, the S3 error message or the policy's
// text reaches a finding or the debug log.
func TestBucketPolicyOverHTTP(t *testing.T) {
	srv := startPolicyServer(t)
	policyFinding := drift.Finding{Kind: "backend", Address: "backend.s3", Type: "s3", Action: "none", Attributes: []string{"bucket"},
		Detail: `s3 state bucket policy grants public access: Principal "*" may s3:GetObject with no restricting Condition (statement 1)`}
	for name, tc := range map[string]struct {
		bucket string
		want   []drift.Finding
		log    string // in the debug log
	}{
		"public":     {bucket: "public", want: []drift.Finding{policyFinding}},
		"restricted": {bucket: "restricted"},
		"none":       {bucket: "none", log: "s3 bucket has no policy"},
		"denied":     {bucket: "denied", log: "HTTP 403 AccessDenied"},
		"notimpl":    {bucket: "notimpl", log: "HTTP 501 NotImplemented"},
		"hang":       {bucket: "hang", log: "no answer within 300ms"},
	} {
		t.Run(name, func(t *testing.T) {
			var logs bytes.Buffer
			dir := policyModule(t, srv.URL, tc.bucket)
			env := Env{Vars: policyVars, Log: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})), timeout: 300 * time.Millisecond}
			got, err := Check(t.Context(), dir, dir, nil, DefaultPolicy(), env)
			require.NoError(t, err, "a policy it cannot see never fails the check")
			require.Equal(t, tc.want, got)
			require.Contains(t, logs.String(), tc.log)
			b, err := json.Marshal(got)
			require.NoError(t, err)
			for _, s := range []string{string(b), logs.String()} {
				for _, c := range []string{policyKeyID, policySecret, policyToken, policyCanary, "Signature", "o-abc123"} {
					require.NotContains(t, s, c)
				}
			}
		})
	}
	srv.mu.Lock()
	defer srv.mu.Unlock()
	require.Equal(t, 6, srv.requests)
	require.Zero(t, srv.badSigs, "every request carried a valid signature")
}

// TestBucketPolicyNotRead: no request at all with check_bucket_policy off,
// without credentials, or with the checks disabled; a wrong key is a 403
// like any other and no finding.
func TestBucketPolicyNotRead(t *testing.T) {
	srv := startPolicyServer(t)
	dir := policyModule(t, srv.URL, "public")
	off := DefaultPolicy()
	off.CheckBucketPolicy = false
	for name, tc := range map[string]struct {
		p    Policy
		vars map[string]string
	}{
		"check_bucket_policy false": {p: off, vars: policyVars},
		"no credentials":            {p: DefaultPolicy(), vars: map[string]string{"AWS_ACCESS_KEY_ID": policyKeyID}},
		"checks disabled":           {p: Policy{CheckBucketPolicy: true}, vars: policyVars},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := Check(t.Context(), dir, dir, nil, tc.p, Env{Vars: tc.vars})
			require.NoError(t, err)
			require.Empty(t, got)
		})
	}
	srv.mu.Lock()
	require.Zero(t, srv.requests, "nothing was sent")
	srv.mu.Unlock()

	wrong := map[string]string{"AWS_ACCESS_KEY_ID": policyKeyID, "AWS_SECRET_ACCESS_KEY": "CANARY-wrong-secret", "AWS_SESSION_TOKEN": policyToken}
	var logs bytes.Buffer
	got, err := Check(t.Context(), dir, dir, nil, DefaultPolicy(), Env{Vars: wrong, Log: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	require.NoError(t, err)
	require.Empty(t, got)
	require.Contains(t, logs.String(), "HTTP 403 SignatureDoesNotMatch")
	require.NotContains(t, logs.String(), "CANARY")
	require.NotContains(t, logs.String(), policyKeyID)
}

func ctyString(s string) cty.Value { return cty.StringVal(s) }

func ctyObject(k, v string) cty.Value {
	return cty.ObjectVal(map[string]cty.Value{k: cty.StringVal(v)})
}
