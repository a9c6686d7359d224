// Package layout holds the test of the repository's layout: the top-level
// folders under internal/ import each other in one direction only (no
// import runs back up), and there are at most 30 of them.
package layout

import (
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const module = "github.com/driftwatch/driftwatch/"

// maxFolders bounds the top-level folders under internal/: a newcomer
// reads the list in a minute.
const maxFolders = 30

// folder is the top-level folder under internal/ that pkg lies in ("" for
// a package elsewhere: cmd, bench).
func folder(pkg string) string {
	rest, ok := strings.CutPrefix(pkg, module+"internal/")
	if !ok {
		return ""
	}
	f, _, _ := strings.Cut(rest, "/")
	return f
}

// TestFoldersImportOneWay lists every package's imports (tests left out:
// a test may reach anywhere) and checks that the folders under internal/,
// taken as one node each, form no cycle.
func TestFoldersImportOneWay(t *testing.T) {
	_, file, _, ok := runtime.Caller(0)
	require.True(t, ok)
	root := filepath.Join(filepath.Dir(file), "..", "..", "..")
	cmd := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .Imports " "}}`, "./...")
	cmd.Dir = root
	out, err := cmd.Output()
	require.NoError(t, err)

	edges := map[string]map[string][]string{} // from -> to -> "a -> b" package pairs
	folders := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		from := folder(f[0])
		if from == "" {
			continue
		}
		folders[from] = true
		for _, imp := range f[1:] {
			to := folder(imp)
			if to == "" || to == from {
				continue
			}
			if edges[from] == nil {
				edges[from] = map[string][]string{}
			}
			edges[from][to] = append(edges[from][to], strings.TrimPrefix(f[0], module)+" -> "+strings.TrimPrefix(imp, module))
		}
	}
	require.LessOrEqual(t, len(folders), maxFolders, "top-level folders under internal/")

	// A depth-first search; a folder met again on the path closes a cycle.
	const (
		unseen = iota
		onPath
		done
	)
	state := map[string]int{}
	var path []string
	var visit func(f string)
	visit = func(f string) {
		state[f] = onPath
		path = append(path, f)
		tos := make([]string, 0, len(edges[f]))
		for to := range edges[f] {
			tos = append(tos, to)
		}
		slices.Sort(tos)
		for _, to := range tos {
			switch state[to] {
			case onPath:
				cycle := append(slices.Clone(path[slices.Index(path, to):]), to)
				var why []string
				for i := 0; i+1 < len(cycle); i++ {
					why = append(why, edges[cycle[i]][cycle[i+1]][0])
				}
				t.Errorf("folders import each other: %s\n  %s", strings.Join(cycle, " -> "), strings.Join(why, "\n  "))
			case unseen:
				visit(to)
			}
		}
		path = path[:len(path)-1]
		state[f] = done
	}
	names := make([]string, 0, len(folders))
	for f := range folders {
		names = append(names, f)
	}
	slices.Sort(names)
	for _, f := range names {
		if state[f] == unseen {
			visit(f)
		}
	}
}
