// Package sigv4 signs S3 requests with AWS Signature Version 4, the small
// subset the backend check needs for its one request (GET a bucket's
// ?policy) and tests need to plant one (PUT ?policy): the host,
// x-amz-content-sha256, x-amz-date and, with a session token,
// x-amz-security-token headers are signed, the payload hash is the body's.
// It is not a general AWS client: no chunked payloads, no presigning, no
// retries. It keeps no state and writes nothing but the request's headers;
// the secret key is used only as HMAC key material and never copied into a
// header, an error or a string.
package sigv4

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"time"
)

// Credentials are an access key pair, with the session token of temporary
// credentials ("" for long-term keys).
type Credentials struct {
	AccessKeyID     string
	SecretAccessKey string
	SessionToken    string
}

// String hides the credentials from %v and %+v: a Credentials value that
// reaches a log or an error by mistake prints nothing of them.
func (Credentials) String() string { return "sigv4.Credentials{redacted}" }

// GoString does the same for %#v.
func (c Credentials) GoString() string { return c.String() }

// Sign adds the Signature Version 4 headers to req for service in region
// at now, with body as the payload (nil: empty). req.URL.Path is signed
// as URIEncode(path) and its query as the canonical query string, so the
// caller must send the path that way (set req.URL.RawPath = URIEncode(Path)
// when the path holds anything but unreserved characters and '/').
func Sign(req *http.Request, body []byte, c Credentials, region, service string, now time.Time) {
	now = now.UTC()
	amzDate := now.Format("20060102T150405Z")
	day := now.Format("20060102")
	sum := sha256.Sum256(body)
	payload := hex.EncodeToString(sum[:])
	req.Header.Set("X-Amz-Date", amzDate)
	req.Header.Set("X-Amz-Content-Sha256", payload)
	headers := map[string]string{
		"host":                 req.URL.Host,
		"x-amz-content-sha256": payload,
		"x-amz-date":           amzDate,
	}
	if c.SessionToken != "" {
		req.Header.Set("X-Amz-Security-Token", c.SessionToken)
		headers["x-amz-security-token"] = c.SessionToken
	}
	names := make([]string, 0, len(headers))
	for k := range headers {
		names = append(names, k)
	}
	sort.Strings(names)
	var canonHeaders strings.Builder
	for _, k := range names {
		canonHeaders.WriteString(k + ":" + strings.TrimSpace(headers[k]) + "\n")
	}
	signed := strings.Join(names, ";")
	path := req.URL.Path
	if path == "" {
		path = "/"
	}
	canonical := strings.Join([]string{req.Method, URIEncode(path), CanonicalQuery(req.URL.RawQuery),
		canonHeaders.String(), signed, payload}, "\n")
	scope := day + "/" + region + "/" + service + "/aws4_request"
	crSum := sha256.Sum256([]byte(canonical))
	toSign := "AWS4-HMAC-SHA256\n" + amzDate + "\n" + scope + "\n" + hex.EncodeToString(crSum[:])
	key := hmacSHA256([]byte("AWS4"+c.SecretAccessKey), day)
	key = hmacSHA256(key, region)
	key = hmacSHA256(key, service)
	key = hmacSHA256(key, "aws4_request")
	sig := hex.EncodeToString(hmacSHA256(key, toSign))
	req.Header.Set("Authorization", fmt.Sprintf("AWS4-HMAC-SHA256 Credential=%s/%s, SignedHeaders=%s, Signature=%s",
		c.AccessKeyID, scope, signed, sig))
}

// CanonicalQuery returns raw (an encoded query string) in SigV4's
// canonical form: parameters sorted by name then value, each name and
// value URI-encoded, a bare name ("policy") given an empty value.
func CanonicalQuery(raw string) string {
	if raw == "" {
		return ""
	}
	var pairs []string
	for _, p := range strings.Split(raw, "&") {
		if p == "" {
			continue
		}
		k, v, _ := strings.Cut(p, "=")
		pairs = append(pairs, uriEncodeAll(unescape(k))+"="+uriEncodeAll(unescape(v)))
	}
	sort.Strings(pairs)
	return strings.Join(pairs, "&")
}

// URIEncode encodes a path as SigV4 wants it: every byte but the
// unreserved characters and '/' percent-encoded, upper-case hex.
func URIEncode(p string) string { return encode(p, "-_.~/") }

func uriEncodeAll(s string) string { return encode(s, "-_.~") }

func encode(s, keep string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || strings.IndexByte(keep, c) >= 0 {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}

// unescape decodes %XX escapes (and '+' as a space, as query strings do);
// a malformed escape is kept as it is.
func unescape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] == '+':
			b.WriteByte(' ')
		case s[i] == '%' && i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]):
			h, _ := hex.DecodeString(s[i+1 : i+3])
			b.Write(h)
			i += 2
		default:
			b.WriteByte(s[i])
		}
	}
	return b.String()
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

func hmacSHA256(key []byte, msg string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(msg))
	return m.Sum(nil)
}
