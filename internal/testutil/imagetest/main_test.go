package imagetest

import (
	"os"
	"testing"

	"github.com/driftwatch/driftwatch/internal/testutil/pgtest"
)

// TestMain stops the PostgreSQL cluster TestImageReplicasFailover starts.
func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }
