package backend

import (
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"

	"github.com/driftwatch/driftwatch/internal/backend/sigv4"
)

// Env is what Check may use besides the module's files, for its one
// network read (an s3 backend's bucket policy, under
// Policy.CheckBucketPolicy). The zero value reads nothing off the network.
type Env struct {
	// Vars is the run's environment: AWS_ACCESS_KEY_ID,
	// AWS_SECRET_ACCESS_KEY and AWS_SESSION_TOKEN sign the request (without
	// the first two nothing is sent); AWS_REGION or AWS_DEFAULT_REGION
	// stand in for an unset region, AWS_ENDPOINT_URL_S3 or
	// AWS_ENDPOINT_URL for unset endpoints, as Terraform's s3 backend
	// reads them. The daemon's own environment is never read.
	Vars map[string]string
	// Log gets a debug line when the policy cannot be read (nil: none).
	// It names the reason (an HTTP status and S3 error code, a network
	// error), never a credential, a signature or the policy's text.
	Log *slog.Logger

	// timeout bounds the request; 0 is policyTimeout.
	timeout time.Duration
}

const (
	// policyTimeout bounds the bucket-policy read: a hygiene check must
	// not hold up a run on a slow or unreachable store.
	policyTimeout = 5 * time.Second
	// maxPolicySize is over S3's 20 KB bucket-policy limit; a longer
	// answer is not a policy.
	maxPolicySize = 64 << 10
)

// policyTarget is where a bucket's policy is read: the URL of GET
// /?policy and the region it is signed for.
type policyTarget struct {
	url    *url.URL
	region string
}

// bucketPolicyTarget resolves the ?policy URL of an s3 backend: the block's
// bucket, region (else AWS_REGION, AWS_DEFAULT_REGION), endpoint
// (endpoints.s3, else the legacy endpoint, else AWS_ENDPOINT_URL_S3,
// AWS_ENDPOINT_URL, else the region's AWS endpoint) and addressing style
// (use_path_style or the legacy force_path_style; a dotted bucket name is
// always path-style on AWS, as virtual hosting would break TLS). Anything
// not statically known gives ok false: nothing is guessed.
func bucketPolicyTarget(c config, vars map[string]string) (policyTarget, bool) {
	bucket, pr := c.str("bucket")
	if pr != known || bucket == "" {
		return policyTarget{}, false
	}
	region, pr := c.str("region")
	switch {
	case pr == unknown:
		return policyTarget{}, false
	case pr == unset || region == "":
		region = firstNonEmpty(vars["AWS_REGION"], vars["AWS_DEFAULT_REGION"])
	}
	if region == "" {
		return policyTarget{}, false
	}
	endpoint, pr := c.field("endpoints", "s3")
	if pr == unset {
		endpoint, pr = c.str("endpoint")
	}
	if pr == unknown {
		return policyTarget{}, false
	}
	if endpoint == "" {
		endpoint = firstNonEmpty(vars["AWS_ENDPOINT_URL_S3"], vars["AWS_ENDPOINT_URL"])
	}
	pathStyle := false
	for _, name := range []string{"use_path_style", "force_path_style"} {
		if b, pr := c.boolean(name); pr == known && b {
			pathStyle = true
		}
	}
	var u *url.URL
	if endpoint == "" {
		host := "s3." + region + ".amazonaws.com"
		if strings.HasPrefix(region, "cn-") {
			host += ".cn"
		}
		u = &url.URL{Scheme: "https", Host: host}
		if strings.Contains(bucket, ".") {
			pathStyle = true
		}
	} else {
		if !strings.Contains(endpoint, "://") {
			endpoint = "https://" + endpoint
		}
		var err error
		if u, err = url.Parse(strings.TrimSpace(endpoint)); err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
			return policyTarget{}, false
		}
		u = &url.URL{Scheme: u.Scheme, Host: u.Host, Path: strings.TrimRight(u.Path, "/")}
	}
	if pathStyle {
		u.Path += "/" + bucket
	} else {
		u.Host = bucket + "." + u.Host
		u.Path += "/"
	}
	u.RawPath = sigv4.URIEncode(u.Path)
	u.RawQuery = "policy"
	return policyTarget{url: u, region: region}, true
}

func firstNonEmpty(vs ...string) string {
	for _, v := range vs {
		if v = strings.TrimSpace(v); v != "" {
			return v
		}
	}
	return ""
}

// field returns the string key of an object or map attribute (endpoints =
// { s3 = "..." }): unset when the attribute or the key is absent or null,
// unknown when it is not statically known or not an object.
func (c config) field(name, key string) (string, presence) {
	v, pr := c.get(name, cty.DynamicPseudoType)
	if pr != known {
		return "", pr
	}
	t := v.Type()
	var f cty.Value
	switch {
	case t.IsObjectType():
		if !t.HasAttribute(key) {
			return "", unset
		}
		f = v.GetAttr(key)
	case t.IsMapType():
		if !v.HasIndex(cty.StringVal(key)).True() {
			return "", unset
		}
		f = v.Index(cty.StringVal(key))
	default:
		return "", unknown
	}
	if f.IsNull() {
		return "", unset
	}
	f, err := convert.Convert(f, cty.String)
	if err != nil || !f.IsWhollyKnown() || f.IsNull() {
		return "", unknown
	}
	return f.AsString(), known
}

// credentials returns the run's AWS credentials, ok false without a key
// pair.
func credentials(vars map[string]string) (sigv4.Credentials, bool) {
	c := sigv4.Credentials{
		AccessKeyID:     strings.TrimSpace(vars["AWS_ACCESS_KEY_ID"]),
		SecretAccessKey: strings.TrimSpace(vars["AWS_SECRET_ACCESS_KEY"]),
		SessionToken:    strings.TrimSpace(vars["AWS_SESSION_TOKEN"]),
	}
	return c, c.AccessKeyID != "" && c.SecretAccessKey != ""
}

// errNoPolicy is a bucket without a policy: nothing to report, and not a
// failure either.
var errNoPolicy = errors.New("no bucket policy")

// readBucketPolicy GETs the bucket's policy, signed with cr. An answer
// other than 200 is an error naming the status and the S3 error code
// (NoSuchBucketPolicy is errNoPolicy); redirects are not followed, so the
// signed request goes to the configured endpoint only. The error never
// holds the request's headers or the answer's body.
func readBucketPolicy(ctx context.Context, t policyTarget, cr sigv4.Credentials, timeout time.Duration) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, t.url.String(), nil)
	if err != nil {
		return nil, errors.New("build request")
	}
	sigv4.Sign(req, nil, cr, t.region, "s3", time.Now())
	tr := http.DefaultTransport.(*http.Transport).Clone()
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // the operation and URL are known to the caller
		}
		if errors.Is(err, context.DeadlineExceeded) {
			return nil, fmt.Errorf("no answer within %s", timeout)
		}
		return nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxPolicySize+1))
	if err != nil {
		return nil, fmt.Errorf("HTTP %d: read body: %w", resp.StatusCode, err)
	}
	if resp.StatusCode != http.StatusOK {
		code := s3ErrorCode(body)
		if code == "NoSuchBucketPolicy" {
			return nil, errNoPolicy
		}
		return nil, fmt.Errorf("HTTP %d %s", resp.StatusCode, code)
	}
	if len(body) > maxPolicySize {
		return nil, fmt.Errorf("answer over %d bytes", maxPolicySize)
	}
	return body, nil
}

// s3ErrorCode returns the Code of an S3 XML error body if it is a plain
// identifier (AccessDenied, NotImplemented...), else "": nothing else of
// the answer is repeated.
func s3ErrorCode(body []byte) string {
	var e struct {
		Code string `xml:"Code"`
	}
	if xml.Unmarshal(body, &e) != nil || len(e.Code) > 64 {
		return ""
	}
	for _, r := range e.Code {
		if (r < 'A' || r > 'Z') && (r < 'a' || r > 'z') && (r < '0' || r > '9') {
			return ""
		}
	}
	return e.Code
}

// bucketPolicyIssue reads the policy of an s3 backend's bucket with the
// run's credentials and returns an issue when it grants public access.
// Every way of not seeing the policy (no credentials, a value not known
// statically, AccessDenied, NoSuchBucketPolicy, NotImplemented, a network
// error, a timeout, unparsable JSON) is no issue, with a debug line.
func bucketPolicyIssue(ctx context.Context, c config, env Env) (issue, bool) {
	log := env.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	t, ok := bucketPolicyTarget(c, env.Vars)
	if !ok {
		log.Debug("s3 bucket policy not read: bucket, region or endpoint not known statically")
		return issue{}, false
	}
	cr, ok := credentials(env.Vars)
	if !ok {
		log.Debug("s3 bucket policy not read: no AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY in the run's environment")
		return issue{}, false
	}
	timeout := env.timeout
	if timeout <= 0 {
		timeout = policyTimeout
	}
	doc, err := readBucketPolicy(ctx, t, cr, timeout)
	if errors.Is(err, errNoPolicy) {
		log.Debug("s3 bucket has no policy")
		return issue{}, false
	}
	if err != nil {
		log.Debug("s3 bucket policy not read", "reason", err.Error())
		return issue{}, false
	}
	grants, err := publicGrants(doc)
	if err != nil {
		log.Debug("s3 bucket policy not evaluated", "reason", err.Error())
		return issue{}, false
	}
	log.Debug("s3 bucket policy read", "public_statements", len(grants))
	if len(grants) == 0 {
		return issue{}, false
	}
	return issue{typ: c.typ, attrs: []string{"bucket"}, reason: grantsReason(grants)}, true
}

// grant is one public statement of a policy: which principal form made it
// public ("*", {"AWS": "*"}, NotPrincipal) and the sensitive actions it
// allows, in their canonical spelling (never the policy's own text).
type grant struct {
	statement int // 1-based
	principal string
	actions   []string
}

// sensitiveActions are the actions that read, write, list or take over the
// state objects; a public grant of any other action is not reported.
var sensitiveActions = []string{
	"s3:DeleteObject", "s3:DeleteObjectVersion", "s3:GetObject", "s3:GetObjectVersion",
	"s3:ListBucket", "s3:ListBucketVersions", "s3:PutBucketAcl", "s3:PutBucketPolicy",
	"s3:PutObject", "s3:PutObjectAcl",
}

// restrictingKeys are the condition keys that pin a request to known
// principals or networks; a condition on anything else (aws:SecureTransport,
// s3:prefix, aws:Referer, which any client can set) leaves a statement
// public.
var restrictingKeys = []string{
	"aws:principalaccount", "aws:principalarn", "aws:principalorgid", "aws:principalorgpaths",
	"aws:principalservicename", "aws:sourceaccount", "aws:sourcearn", "aws:sourceip",
	"aws:sourceorgid", "aws:sourceorgpaths", "aws:sourcevpc", "aws:sourcevpce",
	"aws:userid", "aws:username", "aws:vpcsourceip",
}

// restrictingOperators are the condition operators under which a missing
// key fails the condition (an anonymous caller has no aws:PrincipalOrgID):
// negated operators, ...IfExists and ForAllValues pass on a missing key.
var restrictingOperators = []string{
	"arnequals", "arnlike", "ipaddress", "stringequals", "stringequalsignorecase", "stringlike",
}

// publicGrants evaluates a bucket policy: the statements with Effect Allow,
// a public principal (Principal "*" or {"AWS": "*"}, or any NotPrincipal)
// and no restricting Condition, that allow a sensitive action (through
// Action patterns, or NotAction patterns that leave one out). Resources are
// not matched against the state key: anything public in a state bucket is
// worth a finding. Deny statements are not weighed against the grants.
func publicGrants(doc []byte) ([]grant, error) {
	var p struct {
		Statement json.RawMessage `json:"Statement"`
	}
	if err := json.Unmarshal(doc, &p); err != nil {
		return nil, errors.New("policy is not a JSON object")
	}
	var sts []policyStatement
	if err := json.Unmarshal(p.Statement, &sts); err != nil {
		var one policyStatement
		if err := json.Unmarshal(p.Statement, &one); err != nil {
			return nil, errors.New("policy Statement is neither an object nor a list of objects")
		}
		sts = []policyStatement{one}
	}
	var out []grant
	for i, st := range sts {
		if !strings.EqualFold(st.Effect, "Allow") {
			continue
		}
		principal := publicPrincipal(st)
		if principal == "" || restricts(st.Condition) {
			continue
		}
		var actions []string
		for _, a := range sensitiveActions {
			matched := slices.ContainsFunc(st.Action, func(p string) bool { return actionMatch(p, a) })
			if st.NotAction != nil {
				matched = !slices.ContainsFunc(st.NotAction, func(p string) bool { return actionMatch(p, a) })
			}
			if matched {
				actions = append(actions, a)
			}
		}
		if len(actions) > 0 {
			out = append(out, grant{statement: i + 1, principal: principal, actions: actions})
		}
	}
	return out, nil
}

// policyStatement is the part of a statement publicGrants reads.
type policyStatement struct {
	Effect       string                                `json:"Effect"`
	Principal    json.RawMessage                       `json:"Principal"`
	NotPrincipal json.RawMessage                       `json:"NotPrincipal"`
	Action       stringList                            `json:"Action"`
	NotAction    stringList                            `json:"NotAction"`
	Condition    map[string]map[string]json.RawMessage `json:"Condition"`
}

// stringList is a policy element that is a string or a list of strings.
type stringList []string

func (l *stringList) UnmarshalJSON(b []byte) error {
	var one string
	if err := json.Unmarshal(b, &one); err == nil {
		*l = stringList{one}
		return nil
	}
	var many []string
	if err := json.Unmarshal(b, &many); err != nil {
		return errors.New("not a string or a list of strings")
	}
	*l = many
	return nil
}

// publicPrincipal names the public principal of st, or "".
func publicPrincipal(st policyStatement) string {
	if len(st.NotPrincipal) > 0 && string(st.NotPrincipal) != "null" {
		return "NotPrincipal"
	}
	var s string
	if json.Unmarshal(st.Principal, &s) == nil {
		if s == "*" {
			return `Principal "*"`
		}
		return ""
	}
	var m map[string]stringList
	if json.Unmarshal(st.Principal, &m) != nil {
		return ""
	}
	for k, vs := range m {
		if strings.EqualFold(k, "AWS") && slices.Contains(vs, "*") {
			return `Principal {"AWS": "*"}`
		}
	}
	return ""
}

// restricts reports whether a Condition block limits who can use the
// statement: one restricting operator on one restricting key, with values
// that are not all wildcards.
func restricts(cond map[string]map[string]json.RawMessage) bool {
	for op, keys := range cond {
		op = strings.ToLower(op)
		op = strings.TrimPrefix(op, "foranyvalue:")
		if !slices.Contains(restrictingOperators, op) {
			continue
		}
		for k, raw := range keys {
			if !slices.Contains(restrictingKeys, strings.ToLower(k)) {
				continue
			}
			var vs stringList
			if json.Unmarshal(raw, &vs) != nil || len(vs) == 0 {
				continue
			}
			if slices.ContainsFunc(vs, func(v string) bool { return strings.Trim(v, "*?") != "" }) {
				return true
			}
		}
	}
	return false
}

// actionMatch matches an IAM action pattern (case-insensitive, '*' any
// run of characters, '?' any one) against an action.
func actionMatch(pattern, action string) bool {
	p, a := strings.ToLower(pattern), strings.ToLower(action)
	// Iterative wildcard match with backtracking to the last '*'.
	pi, ai, star, mark := 0, 0, -1, 0
	for ai < len(a) {
		switch {
		case pi < len(p) && (p[pi] == '?' || p[pi] == a[ai]):
			pi++
			ai++
		case pi < len(p) && p[pi] == '*':
			star, mark = pi, ai
			pi++
		case star >= 0:
			pi = star + 1
			mark++
			ai = mark
		default:
			return false
		}
	}
	for pi < len(p) && p[pi] == '*' {
		pi++
	}
	return pi == len(p)
}

// grantsReason is the one-line reason of the public-policy finding: the
// principal forms, the sensitive actions and the statement numbers.
func grantsReason(gs []grant) string {
	var principals, actions, stmts []string
	for _, g := range gs {
		if !slices.Contains(principals, g.principal) {
			principals = append(principals, g.principal)
		}
		for _, a := range g.actions {
			if !slices.Contains(actions, a) {
				actions = append(actions, a)
			}
		}
		stmts = append(stmts, fmt.Sprint(g.statement))
	}
	slices.Sort(actions)
	what := "statement"
	if len(stmts) > 1 {
		what = "statements"
	}
	return fmt.Sprintf("s3 state bucket policy grants public access: %s may %s with no restricting Condition (%s %s)",
		strings.Join(principals, ", "), strings.Join(actions, ", "), what, strings.Join(stmts, ", "))
}
