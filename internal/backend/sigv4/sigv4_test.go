package sigv4

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestSignKnownAnswer signs the "GET Bucket Lifecycle" example of the
// Amazon S3 API reference's Signature Version 4 examples (a bucket
// subresource with an empty value, exactly the shape of GET ?policy) and
// compares with the signature published there, so the signer is checked
// against AWS's arithmetic, not against itself.
func TestSignKnownAnswer(t *testing.T) {
	req, err := http.NewRequest(http.MethodGet, "https://examplebucket.s3.amazonaws.com/?lifecycle", nil)
	require.NoError(t, err)
	Sign(req, nil, Credentials{AccessKeyID: "AKIAIOSFODNN7EXAMPLE", SecretAccessKey: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"},
		"us-east-1", "s3", time.Date(2013, 5, 24, 0, 0, 0, 0, time.UTC))
	require.Equal(t, "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, "+
		"SignedHeaders=host;x-amz-content-sha256;x-amz-date, "+
		"Signature=fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e0f91ac7a200a0136783543", req.Header.Get("Authorization"))
	require.Equal(t, "20130524T000000Z", req.Header.Get("X-Amz-Date"))
	require.Equal(t, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", req.Header.Get("X-Amz-Content-Sha256"))
}

// TestSignListObjects is the same reference's "GET Bucket (List Objects)"
// example: query parameters are sorted and encoded before signing.
func TestSignListObjects(t *testing.T) {
	req, err := http.NewRequest(http.MethodGet, "https://examplebucket.s3.amazonaws.com/?max-keys=2&prefix=J", nil)
	require.NoError(t, err)
	Sign(req, nil, Credentials{AccessKeyID: "AKIAIOSFODNN7EXAMPLE", SecretAccessKey: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"},
		"us-east-1", "s3", time.Date(2013, 5, 24, 0, 0, 0, 0, time.UTC))
	require.Contains(t, req.Header.Get("Authorization"),
		"Signature=34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7")
}

// TestSessionTokenSigned: temporary credentials send their token, and it
// is one of the signed headers (S3 rejects it otherwise).
func TestSessionTokenSigned(t *testing.T) {
	req, err := http.NewRequest(http.MethodGet, "https://b.s3.eu-west-1.amazonaws.com/?policy", nil)
	require.NoError(t, err)
	Sign(req, nil, Credentials{AccessKeyID: "AKID", SecretAccessKey: "SECRET", SessionToken: "TOKEN"}, "eu-west-1", "s3", time.Now())
	require.Equal(t, "TOKEN", req.Header.Get("X-Amz-Security-Token"))
	require.Contains(t, req.Header.Get("Authorization"), "SignedHeaders=host;x-amz-content-sha256;x-amz-date;x-amz-security-token,")
	require.NotContains(t, req.Header.Get("Authorization"), "SECRET")
}

func TestCanonicalQuery(t *testing.T) {
	require.Equal(t, "policy=", CanonicalQuery("policy"))
	require.Equal(t, "a=1&b=x%20y&prefix=J", CanonicalQuery("prefix=J&b=x+y&a=1"))
	require.Empty(t, CanonicalQuery(""))
}

func TestCredentialsNeverPrint(t *testing.T) {
	c := Credentials{AccessKeyID: "AKID-CANARY", SecretAccessKey: "SECRET-CANARY", SessionToken: "TOKEN-CANARY"}
	for _, s := range []string{c.String(), c.GoString()} {
		require.NotContains(t, s, "CANARY")
	}
}
