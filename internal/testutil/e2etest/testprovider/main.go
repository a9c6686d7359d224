// Command terraform-provider-dwtest is a tiny Terraform provider used only by
// driftwatch's end-to-end tests. It lives in its own Go module so that the
// main driftwatch module does not depend on terraform-plugin-framework.
//
// The provider name comes from the basename of os.Args[0]
// ("terraform-provider-NAME_v0.1.0" -> NAME, falling back to "dwtest"), so one
// binary can be installed in a filesystem mirror as driftwatch/dwtest,
// driftwatch/kubernetes and driftwatch/helm. Every name exposes a managed
// resource backed by a local file:
//
//	dwtest     -> dwtest_file, plus dwtest_revision_file (revisionFileResource)
//	              and data sources dwtest_file and dwtest_sleep
//	kubernetes -> kubernetes_config_map
//	helm       -> helm_release
//
// Editing or deleting the file outside Terraform gives real resource_drift.
// Each file resource has the identity {filename} (Terraform 1.12 and
// later store it; older Terraform and OpenTofu ignore it), the file
// resource imports by path or identity, and each name serves a list
// resource of its file type (fileListResource) for `terraform query`
// (Terraform 1.14 and later): the files in a directory.
//
// The version comes from the basename too ("…_v0.2.0" -> 0.2.0, else
// 0.1.0), so the same binary installed as 0.1.0 and 0.2.0 is a provider
// and its next release: 0.2.0 normalises a file's content as it reads it
// (trailing white space trimmed), as a provider upgrade that changes how
// an attribute is normalised does, which drifts every resource whose
// content ends in white space.
package main

import (
	"context"
	"flag"
	"log"
	"os"
	"path/filepath"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/providerserver"
)

const (
	defaultName    = "dwtest"
	defaultVersion = "0.1.0"
	// trimVersion is the version from which content is read trimmed.
	trimVersion = "0.2.0"
)

// providerVersion derives the provider's version from a binary path.
func providerVersion(arg0 string) string {
	base := strings.TrimSuffix(filepath.Base(arg0), ".exe")
	i := strings.LastIndex(base, "_v")
	if i < 0 || !strings.HasPrefix(base, "terraform-provider-") {
		return defaultVersion
	}
	v := base[i+2:]
	for _, r := range v {
		if !(r >= '0' && r <= '9' || r == '.') {
			return defaultVersion
		}
	}
	if v == "" {
		return defaultVersion
	}
	return v
}

// providerName derives the provider's type name from a binary path.
func providerName(arg0 string) string {
	base := filepath.Base(arg0)
	const prefix = "terraform-provider-"
	if !strings.HasPrefix(base, prefix) {
		return defaultName
	}
	name := strings.TrimPrefix(base, prefix)
	if i := strings.Index(name, "_"); i >= 0 {
		name = name[:i]
	}
	name = strings.TrimSuffix(name, ".exe")
	if name == "" {
		return defaultName
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-') {
			return defaultName
		}
	}
	return name
}

// resourceTypeName is the single managed resource type each name exposes.
func resourceTypeName(name string) string {
	switch name {
	case "kubernetes":
		return "kubernetes_config_map"
	case "helm":
		return "helm_release"
	default:
		return name + "_file"
	}
}

func main() {
	var debug bool
	flag.BoolVar(&debug, "debug", false, "run the provider in debug mode (for debuggers)")
	flag.Parse()

	name := providerName(os.Args[0])
	err := providerserver.Serve(context.Background(), newProvider(name, providerVersion(os.Args[0])), providerserver.ServeOpts{
		Address: "registry.terraform.io/driftwatch/" + name,
		Debug:   debug,
	})
	if err != nil {
		log.Fatal(err)
	}
}
