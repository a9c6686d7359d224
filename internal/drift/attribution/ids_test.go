package attribution

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestIDs(t *testing.T) {
	tests := []struct {
		name   string
		values string // as in a state's "values"
		want   map[string]string
	}{
		{
			name:   "aws",
			values: `{"id":"logs","arn":"arn:aws:s3:::logs","bucket":"logs","tags":{"name":"x"},"force_destroy":false}`,
			want:   map[string]string{"id": "logs", "arn": "arn:aws:s3:::logs"},
		},
		{
			name:   "google",
			values: `{"id":"projects/p/global/networks/n","name":"n","self_link":"https://www.googleapis.com/compute/v1/projects/p/global/networks/n"}`,
			want: map[string]string{
				"id": "projects/p/global/networks/n", "name": "n",
				"self_link": "https://www.googleapis.com/compute/v1/projects/p/global/networks/n",
			},
		},
		{
			name:   "kubernetes",
			values: `{"id":"apps/settings","data":{"a":"b"},"metadata":[{"name":"settings","namespace":"apps","uid":"u-1","labels":{"x":"y"},"resource_version":"7"}]}`,
			want:   map[string]string{"id": "apps/settings", "metadata.name": "settings", "metadata.namespace": "apps", "metadata.uid": "u-1"},
		},
		{
			name:   "left out: empty, not a string, control characters, too long, two metadata blocks",
			values: `{"id":"","arn":null,"name":7,"self_link":"a\nb","unique_id":"` + strings.Repeat("x", 1025) + `","metadata":[{"name":"a"},{"name":"b"}]}`,
			want:   map[string]string{},
		},
		{name: "nothing", values: `{}`, want: map[string]string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var values map[string]any
			require.NoError(t, json.Unmarshal([]byte(tt.values), &values))
			require.Equal(t, tt.want, IDs(values))
		})
	}
	require.NotNil(t, IDs(nil))
}

func TestIDsJSONDropsSensitive(t *testing.T) {
	const canary = "CANARY-5e1f"
	values := `{"id":"` + canary + `","arn":"arn:x","name":"n",
		"metadata":[{"name":"cm","namespace":"` + canary + `","uid":"u"}]}`
	tests := []struct {
		name      string
		sensitive []string
		want      map[string]string
	}{
		{"no markers", nil, map[string]string{"id": canary, "arn": "arn:x", "name": "n",
			"metadata.name": "cm", "metadata.namespace": canary, "metadata.uid": "u"}},
		{"attributes marked before and after", []string{`{"id":true}`, `{"metadata":[{"namespace":true}]}`},
			map[string]string{"arn": "arn:x", "name": "n", "metadata.name": "cm", "metadata.uid": "u"}},
		{"metadata marked whole", []string{`{"id":true,"metadata":[true]}`}, map[string]string{"arn": "arn:x", "name": "n"}},
		{"metadata marked as an attribute", []string{`{"id":true,"metadata":true}`}, map[string]string{"arn": "arn:x", "name": "n"}},
		{"everything marked", []string{`{}`, `true`}, map[string]string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var markers [][]byte
			for _, s := range tt.sensitive {
				markers = append(markers, []byte(s))
			}
			got := IDsJSON([]byte(values), markers...)
			require.Equal(t, tt.want, got)
			if len(tt.sensitive) > 0 {
				b, err := json.Marshal(got)
				require.NoError(t, err)
				require.NotContains(t, string(b), canary)
			}
		})
	}
	require.Equal(t, map[string]string{}, IDsJSON([]byte(`null`)))
	require.Equal(t, map[string]string{}, IDsJSON([]byte(`{"id":`)))
}
