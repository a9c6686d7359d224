package tfsession

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestProviders(t *testing.T) {
	dir := t.TempDir()
	require.Nil(t, Providers(dir), "no lock file")

	require.NoError(t, os.WriteFile(filepath.Join(dir, LockFile), []byte(`# This file is maintained automatically by "terraform init".
provider "registry.terraform.io/hashicorp/aws" {
  version     = "5.81.0"
  constraints = "~> 5.0"
  hashes = [
    "h1:abc=",
  ]
}

provider "registry.terraform.io/driftwatch/dwtest" {
  version = "0.2.0"
}

provider "registry.terraform.io/hashicorp/broken" {
  version = 5
}
`), 0o644))
	require.Equal(t, map[string]string{
		"registry.terraform.io/hashicorp/aws":     "5.81.0",
		"registry.terraform.io/driftwatch/dwtest": "0.2.0",
	}, Providers(dir))

	require.NoError(t, os.WriteFile(filepath.Join(dir, LockFile), []byte(`provider "x" {`), 0o644))
	require.Nil(t, Providers(dir), "a file that does not parse")
}
