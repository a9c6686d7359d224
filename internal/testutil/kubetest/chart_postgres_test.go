package kubetest

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/driftwatch/driftwatch/internal/config"
)

// TestChartPostgres: with store.postgres.existingSecret the config the
// daemon loads names a PostgreSQL store whose DSN file is the mounted
// Secret's key, and no PVC is made: the data volume is an emptyDir.
func TestChartPostgres(t *testing.T) {
	_, m := mustTemplate(t, "--set", "store.postgres.existingSecret=driftwatch-db", "--set", "store.postgres.secretKey=url")
	assert.NotContains(t, keys(m), "PersistentVolumeClaim/driftwatch/driftwatch")

	cm := get[*corev1.ConfigMap](t, m, "ConfigMap/driftwatch/driftwatch")
	cfg, err := config.Load("/etc/driftwatch/driftwatch.yaml", []byte(cm.Data["driftwatch.yaml"]))
	require.NoError(t, err)
	assert.Equal(t, config.StorePostgres, cfg.Store.Driver)
	assert.Equal(t, "/var/run/secrets/driftwatch/postgres/url", cfg.Store.DSNFile)

	pod := get[*appsv1.Deployment](t, m, "Deployment/driftwatch/driftwatch").Spec.Template.Spec
	vols := map[string]corev1.Volume{}
	for _, v := range pod.Volumes {
		vols[v.Name] = v
	}
	mounts := map[string]corev1.VolumeMount{}
	for _, vm := range pod.Containers[0].VolumeMounts {
		mounts[vm.MountPath] = vm
	}
	require.Contains(t, mounts, "/var/run/secrets/driftwatch/postgres")
	assert.True(t, mounts["/var/run/secrets/driftwatch/postgres"].ReadOnly)
	secret := vols[mounts["/var/run/secrets/driftwatch/postgres"].Name].Secret
	require.NotNil(t, secret)
	assert.Equal(t, "driftwatch-db", secret.SecretName)
	assert.Equal(t, int32(0o440), *secret.DefaultMode)
	data := vols[mounts["/var/lib/driftwatch"].Name]
	assert.Nil(t, data.PersistentVolumeClaim)
	assert.NotNil(t, data.EmptyDir, "caches only: no PVC")

	out, err := template(t, "--set", "store.postgres.dsn=postgres://x")
	require.Error(t, err, out)
	assert.Contains(t, err.Error(), "additional properties 'dsn' not allowed", "the DSN itself never goes in values")
}
