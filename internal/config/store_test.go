package config_test

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/config"
)

func TestStoreDriver(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "driftwatch.yaml")

	cfg, err := config.Load(file, []byte("{}\n"))
	require.NoError(t, err)
	require.Equal(t, config.StoreSQLite, cfg.Store.Driver, "sqlite is the default")
	require.Empty(t, cfg.Store.DSNFile)

	cfg, err = config.Load(file, []byte("store:\n  driver: postgres\n  dsn_file: secrets/dsn\n"))
	require.NoError(t, err)
	require.Equal(t, config.StorePostgres, cfg.Store.Driver)
	require.Equal(t, filepath.Join(dir, "secrets", "dsn"), cfg.Store.DSNFile, "relative to the config file")

	for name, c := range map[string]struct{ yaml, want string }{
		"postgres without dsn": {"store:\n  driver: postgres\n",
			"driftwatch.yaml:1: store.dsn_file: is required with driver postgres"},
		"dsn for sqlite": {"store:\n  dsn_file: dsn\n",
			"store.dsn_file: is for driver postgres; the sqlite store is store.path"},
		"unknown driver": {"store:\n  driver: mysql\n",
			`driftwatch.yaml:2: store.driver: "mysql" is not sqlite or postgres`},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := config.Load(file, []byte(c.yaml))
			require.ErrorContains(t, err, c.want)
		})
	}
}
