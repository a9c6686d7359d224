//go:build linux

package kubetest

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// BuildImage builds an image from a Dockerfile and a build context
// directory, tagged name:<hash of both and of the base image's id>, unless
// the engine already holds that tag. It returns the tag.
func (e DockerEnv) BuildImage(t testing.TB, name, dockerfile, contextDir string) string {
	t.Helper()
	h, err := hashTree(contextDir)
	if err != nil {
		t.Fatal(err)
	}
	base, err := exec.Command(e.CLI, "image", "inspect", "--format", "{{.Id}}", e.Image).Output()
	if err != nil {
		t.Fatalf("inspect %s: %v", e.Image, err)
	}
	h = hashStrings(h, dockerfile, strings.TrimSpace(string(base)))
	tag := name + ":" + h[:16]
	if exec.Command(e.CLI, "image", "inspect", tag).Run() == nil {
		t.Logf("kubetest: image %s is cached", tag)
		return tag
	}
	began := time.Now()
	df := filepath.Join(t.TempDir(), "Dockerfile")
	if err := os.WriteFile(df, []byte(dockerfile), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(e.CLI, "build", "--network", "none", "-f", df, "-t", tag, contextDir)
	cmd.Env = append(os.Environ(), "DOCKER_BUILDKIT=0")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("docker build %s: %v\n%s", tag, err, out)
	}
	t.Logf("kubetest: built %s in %s", tag, time.Since(began).Round(time.Millisecond))
	// Older builds of name (another base image or content) are stale.
	if old, err := exec.Command(e.CLI, "image", "ls", name, "--format", "{{.Repository}}:{{.Tag}}").Output(); err == nil {
		for _, o := range strings.Fields(string(old)) {
			if o != tag {
				_ = exec.Command(e.CLI, "image", "rm", o).Run()
			}
		}
	}
	return tag
}

func hashTree(dir string) (string, error) {
	var parts []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		info, err := d.Info()
		if err != nil {
			return err
		}
		if d.IsDir() {
			parts = append(parts, "d "+rel+" "+info.Mode().String())
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		parts = append(parts, "f "+rel+" "+info.Mode().String()+" "+hashStrings(string(b)))
		return nil
	})
	return hashStrings(parts...), err
}

func hashStrings(ss ...string) string {
	h := sha256.New()
	for _, s := range ss {
		fmt.Fprintf(h, "%d:%s\n", len(s), s)
	}
	return hex.EncodeToString(h.Sum(nil))
}
