package sqlite_test

import (
	"path/filepath"
	"testing"

	"github.com/driftwatch/driftwatch/internal/store/storetest"
)

func TestSessionConformance(t *testing.T) {
	storetest.SessionConformance(t, func(t *testing.T, dir string) storetest.SessionStore {
		return openStore(t, filepath.Join(dir, "driftwatch.db"))
	})
}

func TestAcceptanceConformance(t *testing.T) {
	storetest.AcceptanceConformance(t, func(t *testing.T, dir string) storetest.AcceptanceStore {
		return openStore(t, filepath.Join(dir, "driftwatch.db"))
	})
}

func TestGroupConformance(t *testing.T) {
	storetest.GroupConformance(t, func(t *testing.T, dir string) storetest.GroupStore {
		return openStore(t, filepath.Join(dir, "driftwatch.db"))
	})
}
