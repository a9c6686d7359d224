package acceptance

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/driftwatch/driftwatch/internal/config"
	"github.com/driftwatch/driftwatch/internal/notify"
	"github.com/driftwatch/driftwatch/internal/notify/notifiers"
	"github.com/driftwatch/driftwatch/internal/notify/notifycfg"
	"github.com/driftwatch/driftwatch/internal/store"
	"github.com/driftwatch/driftwatch/internal/terraform"
)

// ProposingFor is how cfg proposes workspace's proven changes: nil when
// cfg names no accept.notifier (ErrNoProposer's case: a diff only). The
// notifier is built anew from cfg (its token file read now), so a
// rotated token or a reloaded config is used at once.
func ProposingFor(cfg *config.Config, workspace string, logger *slog.Logger) (*Proposing, error) {
	settings := cfg.EffectiveAccept()
	if settings.Notifier == "" {
		return nil, nil
	}
	var specs []notifycfg.Spec
	for _, sp := range cfg.NotifierSpecs() {
		if sp.Name == settings.Notifier {
			specs = append(specs, sp)
		}
	}
	built, err := notifiers.Build(specs, logger)
	if err != nil {
		return nil, err
	}
	opener, ok := built[settings.Notifier].(notify.ChangeOpener)
	if !ok {
		// config refuses any other type; this is a notifier it did not know.
		return nil, fmt.Errorf("accept.notifier %q opens no pull or merge requests", settings.Notifier)
	}
	return &Proposing{Settings: settings, Opener: opener, Link: cfg.Server.WorkspaceURL(workspace)}, nil
}

// OnceOptions are `driftwatch accept`'s flags: Propose a proven change
// (--propose), accept Deletions as removed blocks (--deletions).
type OnceOptions struct {
	Propose, Deletions bool
}

// Once is `driftwatch accept`: Do for req, proposing a proven change when
// o.Propose is set (accept.notifier and a git source are needed then).
func Once(ctx context.Context, cfg *config.Config, req terraform.Request, addresses []string, o OnceOptions, logger *slog.Logger) (store.Acceptance, error) {
	in := Input{Request: req, Addresses: addresses, Deletions: o.Deletions}
	if o.Propose {
		p, err := ProposingFor(cfg, req.Workspace, logger)
		switch {
		case err != nil:
			return store.Acceptance{}, err
		case p == nil:
			return store.Acceptance{}, ErrNoProposer
		case req.Source.Git == nil:
			return store.Acceptance{}, errors.New("its source is a local path: there is no repository to propose to (without --propose the change is a diff)")
		}
		in.Proposing = p
	}
	a := Do(ctx, in, Steps{})
	a.Workspace, a.Deletions = req.Workspace, o.Deletions
	return a, nil
}
