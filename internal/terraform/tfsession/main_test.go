package tfsession

import (
	"os"
	"testing"

	"github.com/driftwatch/driftwatch/internal/testutil/tftest"
)

// No process of a run these tests start may outlive it.
func TestMain(m *testing.M) { os.Exit(tftest.Main(m)) }
