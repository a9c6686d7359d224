package drift

import (
	"testing"

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
