package config_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/config"
)

func TestStoreWhere(t *testing.T) {
	require.Equal(t, "/data/dw.db", config.Store{Path: "/data/dw.db"}.Where())
	require.Equal(t, "postgres (store.dsn_file)", config.Store{Driver: config.StorePostgres, Path: "/data/dw.db", DSNFile: "/s/dsn"}.Where(),
		"never the DSN, nor the unused SQLite path")
}
