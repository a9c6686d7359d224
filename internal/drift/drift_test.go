package drift

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

func TestFingerprint(t *testing.T) {
	a := Finding{Kind: KindDrift, Address: "x.a", Action: "update", Attributes: []string{"b", "a"}}
	b := Finding{Kind: KindPending, Address: "x.b", Action: "create"}
	noise := Finding{Kind: KindNoise, Address: "data.x.c", Action: "read"}
	ignored := Finding{Kind: KindDrift, Address: "x.d", Action: "update", Ignored: true}

	fp := Fingerprint("ws", []Finding{a, b})
	require.Len(t, fp, 32)
	require.Equal(t, fp, Fingerprint("ws", []Finding{b, noise, ignored, {Kind: KindDrift, Address: "x.a", Action: "update", Attributes: []string{"a", "b"}}}),
		"order, noise and ignored findings do not change it")
	require.NotEqual(t, fp, Fingerprint("other", []Finding{a, b}), "workspace is part of it")
	require.NotEqual(t, fp, Fingerprint("ws", []Finding{a}), "a resolved finding changes it")
	a2 := a
	a2.Attributes = []string{"a", "b", "c"}
	require.NotEqual(t, fp, Fingerprint("ws", []Finding{a2, b}), "a new attribute path changes it")
	require.Empty(t, Fingerprint("ws", []Finding{noise, ignored}), "clean is empty")
}

func TestStatusOf(t *testing.T) {
	require.Equal(t, StatusClean, StatusOf(nil))
	require.Equal(t, StatusPending, StatusOf([]Finding{{Kind: KindPending}, {Kind: KindNoise}}))
	require.Equal(t, StatusDrift, StatusOf([]Finding{{Kind: KindPending}, {Kind: KindDrift}}))
	require.Equal(t, StatusForbidden, StatusOf([]Finding{{Kind: KindDrift}, {Kind: KindForbidden}}))
	require.Equal(t, StatusClean, StatusOf([]Finding{{Kind: KindDrift, Ignored: true}}))
	require.Greater(t, StatusErrored.Severity(), StatusForbidden.Severity())
}

func TestCheckFindings(t *testing.T) {
	check := Finding{Kind: KindCheck, Address: "check.health", Type: "check", Action: "fail", Detail: "n is 5"}
	require.Equal(t, StatusValidation, StatusOf([]Finding{{Kind: KindPending}, check}), "a failing check outranks pending")
	require.Equal(t, StatusDrift, StatusOf([]Finding{check, {Kind: KindDrift}}), "drift outranks a failing check")
	require.Equal(t, StatusClean, StatusOf([]Finding{{Kind: KindCheck, Ignored: true}}))
	require.Equal(t, 1, CountFindings([]Finding{check, {Kind: KindNoise}}).Check)
	for _, s := range []Status{StatusClean, StatusPending, StatusValidation, StatusDrift, StatusForbidden, StatusErrored} {
		require.GreaterOrEqual(t, s.Severity(), 0, s)
	}
	require.Less(t, StatusPending.Severity(), StatusValidation.Severity())
	require.Less(t, StatusValidation.Severity(), StatusDrift.Severity())

	fp := Fingerprint("ws", []Finding{check})
	require.NotEmpty(t, fp, "a failing check is an incident")
	changed := check
	changed.Detail = "n is 6"
	require.Equal(t, fp, Fingerprint("ws", []Finding{changed}), "a new message for the same failing check is the same incident")
	unknown := check
	unknown.Action = "unknown"
	require.NotEqual(t, fp, Fingerprint("ws", []Finding{unknown}), "fail and unknown differ")

	fs := []Finding{{Kind: KindPending, Address: "a"}, check, {Kind: KindDrift, Address: "z"}}
	SortFindings(fs)
	require.Equal(t, []Kind{KindDrift, KindCheck, KindPending}, []Kind{fs[0].Kind, fs[1].Kind, fs[2].Kind})
}

func TestCapDetail(t *testing.T) {
	require.Equal(t, "a b c", CapDetail(" a\n\n b\t c "))
	long := strings.Repeat("é", MaxCheckDetail) // two bytes each
	got := CapDetail(long)
	require.True(t, strings.HasSuffix(got, "…"))
	require.LessOrEqual(t, len(got), MaxCheckDetail+len("…"))
	require.True(t, utf8.ValidString(got), "never cuts a character in two")
	require.Equal(t, strings.Repeat("x", MaxCheckDetail), CapDetail(strings.Repeat("x", MaxCheckDetail)))
}

func TestThrottled(t *testing.T) {
	for _, s := range []string{
		"Error: reading EC2 Instance: operation error EC2: DescribeInstances, https response error StatusCode: 400, api error RequestLimitExceeded: Request limit exceeded.",
		"Error: Rate exceeded (aws_iam_role.x)",
		"Error: ThrottlingException: Rate exceeded",
		"Error: GET https://management.azure.com/...: 429 Too Many Requests",
		"Error: listing: TooManyRequests",
		"Error: unexpected status code: 429",
		"Error: HTTP/1.1 429",
		"Error: googleapi: Error 429: Quota exceeded, rateLimitExceeded (429)",
		"Error: API rate limit exceeded for installation",
		"Error: S3: SlowDown: Please reduce your request rate",
	} {
		require.True(t, Throttled(s), s)
	}
	for _, s := range []string{
		"Error: Invalid value for variable (main.tf line 429)",
		"Error: creating instance i-0429: InvalidParameter",
		"Error: port 4290 refused",
		"Error: Unsupported argument (main.tf line 12)",
		"",
	} {
		require.False(t, Throttled(s), s)
	}
}
