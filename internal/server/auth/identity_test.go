package auth

import (
	"context"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/config"
	"github.com/driftwatch/driftwatch/internal/server/control"
)

func TestRoleGrants(t *testing.T) {
	all := []Role{RoleViewer, RoleOperator, RoleApprover, RoleAdmin}
	for held, want := range map[Role][]Role{
		RoleViewer:   {RoleViewer},
		RoleOperator: {RoleViewer, RoleOperator},
		RoleApprover: {RoleViewer, RoleApprover},
		RoleAdmin:    all,
		Role("root"): nil,
	} {
		for _, need := range all {
			require.Equal(t, slices.Contains(want, need), held.Grants(need), "%s grants %s", held, need)
		}
	}
}

// The approver scope: all labels, and one of the owners when set.
func TestMayApprove(t *testing.T) {
	net := config.WorkspaceScope{Labels: map[string]string{"tier": "network", "env": "prod"}}
	billing := config.WorkspaceScope{Owners: []string{"team-billing"}}
	for _, c := range []struct {
		name  string
		roles map[Role][]config.WorkspaceScope
		ws    control.WorkspaceInfo
		want  bool
	}{
		{"unscoped approver", map[Role][]config.WorkspaceScope{RoleApprover: {{}}}, control.WorkspaceInfo{Name: "x"}, true},
		{"labels match", map[Role][]config.WorkspaceScope{RoleApprover: {net}}, control.WorkspaceInfo{Labels: map[string]string{"tier": "network", "env": "prod", "a": "b"}}, true},
		{"one label missing", map[Role][]config.WorkspaceScope{RoleApprover: {net}}, control.WorkspaceInfo{Labels: map[string]string{"tier": "network"}}, false},
		{"owner", map[Role][]config.WorkspaceScope{RoleApprover: {billing}}, control.WorkspaceInfo{Owner: "team-billing"}, true},
		{"other owner", map[Role][]config.WorkspaceScope{RoleApprover: {billing}}, control.WorkspaceInfo{Owner: "team-web"}, false},
		{"either scope", map[Role][]config.WorkspaceScope{RoleApprover: {net, billing}}, control.WorkspaceInfo{Owner: "team-billing"}, true},
		{"scoped and unscoped", map[Role][]config.WorkspaceScope{RoleApprover: {billing, {}}}, control.WorkspaceInfo{Owner: "team-web"}, true},
		{"admin", map[Role][]config.WorkspaceScope{RoleAdmin: {{}}}, control.WorkspaceInfo{}, true},
		{"operator", map[Role][]config.WorkspaceScope{RoleOperator: {{}}}, control.WorkspaceInfo{}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			var id Identity
			for r, scopes := range c.roles {
				for _, sc := range scopes {
					id.grant(r, sc)
				}
			}
			require.Equal(t, c.want, id.MayApprove(c.ws))
		})
	}
}

// CallerActor names who the server authenticated, and nobody for an
// anonymous caller or outside a request.
func TestCallerActor(t *testing.T) {
	require.Empty(t, CallerActor(context.Background()))
	require.Empty(t, CallerActor(WithIdentity(context.Background(), Identity{Method: MethodAnonymous})))
	require.Equal(t, "token:ci", CallerActor(WithIdentity(context.Background(), Identity{Method: MethodTokenPrefix + "ci"})))
	require.Equal(t, "alice", CallerActor(WithIdentity(context.Background(), Identity{Method: MethodProxy, Name: "alice"})))
}
