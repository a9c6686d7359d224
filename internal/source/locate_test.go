package source

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestLocate(t *testing.T) {
	root := t.TempDir()
	writeFiles(t, root, 0o644, map[string]string{
		"main.tf": `terraform {
  backend "s3" {
    bucket = "b"
  }
}

resource "aws_instance" "web" {
  count = 2
}

data "aws_ami" "ubuntu" {}

module "net" {
  source   = "./modules/net"
  for_each = toset(["a", "b"])
}

module "registry" {
  source = "terraform-aws-modules/vpc/aws"
}

module "missing_dir" {
  source = "./nowhere"
}
`,
		"buckets.tf": `
resource "aws_s3_bucket" "logs" {
  for_each = var.buckets
}

check "health" {
  data "http" "probe" {
    url = "https://example.test"
  }
}

output "bucket_arns" {
  value = []
}

variable "buckets" {
  type = map(string)
}
`,
		"extra.tf.json": `{
  "resource": {
    "null_resource": {
      "from_json": {
        "triggers": {}
      }
    }
  },
  "module": {
    "jsonmod": {
      "source": "./modules/net"
    }
  }
}
`,
		"broken.tf": `resource "x" {`,
		"modules/net/main.tf": `variable "cidr" {}

resource "aws_vpc" "main" {}

module "sub" {
  source = "../sub"
}
`,
		"modules/sub/subnets.tf": `

resource "aws_subnet" "s" {
  count = 3
}
`,
	})
	main := filepath.Join(root, "main.tf")
	for _, tc := range []struct {
		name, address string
		want          Location
	}{
		{"root resource", "aws_instance.web", Location{main, 7, true}},
		{"count instance", "aws_instance.web[1]", Location{main, 7, true}},
		{"for_each key with dots, brackets and quotes", `aws_s3_bucket.logs["a.b[\"c\"].d"]`,
			Location{filepath.Join(root, "buckets.tf"), 2, true}},
		{"data block", "data.aws_ami.ubuntu", Location{main, 11, true}},
		{"data block scoped in a check block", "data.http.probe", Location{filepath.Join(root, "buckets.tf"), 7, true}},
		{"tf.json", "null_resource.from_json", Location{filepath.Join(root, "extra.tf.json"), 4, true}},
		{"backend", "backend.s3", Location{main, 2, true}},
		{"another backend type: the backend block", "backend.local", Location{main, 2, true}},
		{"local module called from .tf.json", "module.jsonmod.aws_vpc.main",
			Location{filepath.Join(root, "modules", "net", "main.tf"), 3, true}},
		{"local module", `module.net["a"].aws_vpc.main`,
			Location{filepath.Join(root, "modules", "net", "main.tf"), 3, true}},
		{"nested local module with instance keys", `module.net["b"].module.sub.aws_subnet.s[2]`,
			Location{filepath.Join(root, "modules", "net", "..", "sub", "subnets.tf"), 3, true}},
		{"resource missing in a local module: the module block", `module.net["a"].aws_vpc.gone`, Location{main, 13, true}},
		{"registry module: the module block", "module.registry.module.vpc.aws_vpc.this[0]", Location{main, 18, true}},
		{"module directory missing: the module block", "module.missing_dir.aws_vpc.x", Location{main, 22, true}},
		{"check block", "check.health", Location{filepath.Join(root, "buckets.tf"), 6, true}},
		{"output block", "output.bucket_arns", Location{filepath.Join(root, "buckets.tf"), 12, true}},
		{"variable block", "var.buckets", Location{filepath.Join(root, "buckets.tf"), 16, true}},
		{"variable of a local module", `module.net["a"].var.cidr`, Location{filepath.Join(root, "modules", "net", "main.tf"), 1, true}},
		{"a module call itself", "module.registry", Location{main, 18, true}},
		{"check missing in a local module: the module block", "module.net.check.gone", Location{main, 13, true}},
		{"unknown check", "check.nope", Location{main, 1, false}},
		{"unknown module", "module.nope.aws_vpc.x", Location{main, 1, false}},
		{"unknown resource", "aws_instance.nope", Location{main, 1, false}},
		{"not an address", "", Location{main, 1, false}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := NewLocator().Locate(t.Context(), root, tc.address)
			want := tc.want
			want.File = filepath.Clean(want.File)
			got.File = filepath.Clean(got.File)
			require.Equal(t, want, got)
		})
	}
}

func TestLocateFallback(t *testing.T) {
	t.Run("first configuration file without main.tf", func(t *testing.T) {
		root := t.TempDir()
		writeFiles(t, root, 0o644, map[string]string{"b.tf": "", "a.tf.json": "{}", ".hidden.tf": "", "notes.txt": ""})
		got := NewLocator().Locate(t.Context(), root, "aws_instance.x")
		require.Equal(t, Location{File: filepath.Join(root, "a.tf.json"), Line: 1}, got)
	})
	t.Run("a terraform block without a backend", func(t *testing.T) {
		root := t.TempDir()
		writeFiles(t, root, 0o644, map[string]string{"main.tf": "\nterraform {\n  required_version = \">= 1.5\"\n}\n"})
		got := NewLocator().Locate(t.Context(), root, "backend.local")
		require.Equal(t, Location{File: filepath.Join(root, "main.tf"), Line: 2, Exact: true}, got)
	})
	t.Run("missing directory", func(t *testing.T) {
		root := filepath.Join(t.TempDir(), "gone")
		got := NewLocator().Locate(t.Context(), root, "aws_instance.x")
		require.Equal(t, Location{File: filepath.Join(root, "main.tf"), Line: 1}, got)
	})
	t.Run("a named pipe is skipped, not read", func(t *testing.T) {
		root := t.TempDir()
		writeFiles(t, root, 0o644, map[string]string{"main.tf": `resource "a_b" "c" {}`})
		mkfifo(t, filepath.Join(root, "pipe.tf"))
		got := NewLocator().Locate(t.Context(), root, "a_b.c")
		require.Equal(t, Location{File: filepath.Join(root, "main.tf"), Line: 1, Exact: true}, got)
	})
}

func TestSplitAddress(t *testing.T) {
	for in, want := range map[string][]string{
		"aws_instance.web":                     {"aws_instance", "web"},
		"aws_instance.web[0]":                  {"aws_instance", "web"},
		`module.a["x.y"].module.b[3].data.t.n`: {"module", "a", "module", "b", "data", "t", "n"},
		`t.n["q\"].[x"]`:                       {"t", "n"},
		`t.n["back\\"]`:                        {"t", "n"},
		`module.m["k]"].t.n`:                   {"module", "m", "t", "n"},
		"":                                     {""},
	} {
		require.Equal(t, want, splitAddress(in), in)
	}
}
