package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"

	"github.com/driftwatch/driftwatch/internal/source"
	"github.com/driftwatch/driftwatch/internal/terraform/sandbox"
)

// stateInSandbox reports why the workspace's state would live inside the
// sandbox's copy of the code, or "" when it lives elsewhere. The local
// runner copies a path source with whatever terraform.tfstate it holds;
// detection may read that copy, but an apply would write the new state
// into a directory deleted right after, losing it (a re-created resource
// would be orphaned). The backend as initialised is recorded in
// DATA_DIR/terraform.tfstate; without that file there is no backend block,
// i.e. the implicit local backend in the working directory. The file is
// read with source.ReadFile (confined to moduleDir unless TF_DATA_DIR is
// elsewhere): a checkout may hold a .terraform of its own.
func stateInSandbox(ctx context.Context, moduleDir string, env map[string]string, tfWorkspace string) (string, error) {
	dataDir := env["TF_DATA_DIR"]
	if dataDir == "" {
		dataDir = ".terraform"
	}
	if !filepath.IsAbs(dataDir) {
		dataDir = filepath.Join(moduleDir, dataDir)
	}
	root := moduleDir
	if rel, err := filepath.Rel(moduleDir, dataDir); err != nil || !filepath.IsLocal(rel) {
		root = dataDir // the operator's TF_DATA_DIR
	}
	b, err := source.ReadFile(ctx, root, filepath.Join(dataDir, "terraform.tfstate"), source.MaxConfigFileSize)
	if errors.Is(err, fs.ErrNotExist) {
		return "the workspace has no backend block: its state is a local file in the copied source", nil
	}
	if err != nil {
		return "", fmt.Errorf("read backend config: %w", err)
	}
	var bs struct {
		Backend *struct {
			Type   string `json:"type"`
			Config struct {
				Path         *string `json:"path"`
				WorkspaceDir *string `json:"workspace_dir"`
			} `json:"config"`
		} `json:"backend"`
	}
	if err := json.Unmarshal(b, &bs); err != nil {
		return "", fmt.Errorf("parse backend config: %w", err)
	}
	if bs.Backend == nil || bs.Backend.Type != "local" {
		return "", nil
	}
	notAbs := func(p *string) bool { return p == nil || !filepath.IsAbs(*p) }
	if tfWorkspace == "" || tfWorkspace == "default" {
		if notAbs(bs.Backend.Config.Path) {
			return `the local backend's path is relative: its state is a file in the copied source (give backend "local" an absolute path, or use a remote backend)`, nil
		}
		return "", nil
	}
	if notAbs(bs.Backend.Config.WorkspaceDir) {
		return `the local backend's workspace_dir is relative: the workspace's state is a file in the copied source (give it an absolute workspace_dir, or use a remote backend)`, nil
	}
	return "", nil
}

// isLockError reports whether Terraform's stderr says the state lock is
// held by someone else (Terraform and OpenTofu word it the same).
func isLockError(stderr string) bool {
	if !strings.Contains(stderr, "Error acquiring the state lock") {
		return false
	}
	// The same words when the backend could not be asked (no answer, a
	// 5xx): that is not someone else's lock, and is told as what it is.
	_, unreachable := sandbox.BackendFailure("", stderr)
	return !unreachable
}

// lockedReason is the state_locked refusal's reason: what was refused
// (while), and the holder from the "Lock Info:" block of Terraform's
// stderr (ID, operation, who, since), so that an operator can find the
// holder or, if it is gone, `terraform force-unlock` that ID.
func lockedReason(while, stderr string) string {
	return while + parseLockInfo(stderr).holder() + ": nothing applied; re-detect later"
}

// lockInfo is the holder of a state lock, as Terraform's "Lock Info:"
// block names it; every field may be empty.
type lockInfo struct {
	ID, Operation, Who, Created string
}

// parseLockInfo reads the "Lock Info:" block of Terraform's stderr (both
// Terraform and OpenTofu print it when the lock is held by someone else).
func parseLockInfo(stderr string) lockInfo {
	info := map[string]string{}
	if _, block, ok := strings.Cut(stderr, "Lock Info:"); ok {
		for _, line := range strings.Split(block, "\n") {
			k, v, ok := strings.Cut(strings.TrimSpace(line), ":")
			if !ok || k == "" || strings.Contains(k, " ") {
				if strings.TrimSpace(line) != "" {
					break // past the block
				}
				continue
			}
			info[k] = strings.TrimSpace(v)
		}
	}
	return lockInfo{ID: info["ID"], Operation: info["Operation"], Who: info["Who"], Created: info["Created"]}
}

// holder is " (lock ID X, OPERATION by WHO since CREATED)", or "" without
// an ID.
func (l lockInfo) holder() string {
	if l.ID == "" {
		return ""
	}
	h := " (lock ID " + l.ID
	if l.Operation != "" {
		h += ", " + l.Operation
	}
	if l.Who != "" {
		h += " by " + l.Who
	}
	if l.Created != "" {
		h += " since " + l.Created
	}
	return h + ")"
}
