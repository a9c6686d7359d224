package view

import (
	"context"
	"fmt"
	"net/url"
	"slices"

	"github.com/driftwatch/driftwatch/internal/store"
)

// GroupIncidents are the group incidents: the open ones, or with all
// every one, most recently notified first (the store's order); none
// without a GroupReader.
func (s *Source) GroupIncidents(ctx context.Context, all bool) ([]store.GroupIncident, error) {
	if s.Groups == nil {
		return nil, nil
	}
	gs, err := s.Groups.GroupIncidents(ctx, all)
	if err != nil {
		return nil, fmt.Errorf("group incidents: %w", err)
	}
	return gs, nil
}

// GroupIncident is the group incident id; an error matching
// store.ErrNotFound when it is unknown, or without a GroupReader.
func (s *Source) GroupIncident(ctx context.Context, id string) (store.GroupIncident, error) {
	if s.Groups == nil {
		return store.GroupIncident{}, fmt.Errorf("group %q: %w", id, store.ErrNotFound)
	}
	g, err := s.Groups.GroupIncident(ctx, id)
	if err != nil {
		return store.GroupIncident{}, fmt.Errorf("group %q: %w", id, err)
	}
	return g, nil
}

// WorkspaceGroup is an open group incident that holds some of a
// workspace's findings: Members of them.
type WorkspaceGroup struct {
	store.GroupIncident
	Members int
}

// GroupsOf are the open group incidents that hold some of workspace's
// findings, in GroupIncidents' order.
func (s *Source) GroupsOf(ctx context.Context, workspace string) ([]WorkspaceGroup, error) {
	gs, err := s.GroupIncidents(ctx, false)
	if err != nil {
		return nil, err
	}
	var out []WorkspaceGroup
	for _, g := range gs {
		n := 0
		for _, m := range g.Members {
			if m.Workspace == workspace {
				n++
			}
		}
		if n > 0 {
			out = append(out, WorkspaceGroup{GroupIncident: g, Members: n})
		}
	}
	return out, nil
}

// GroupHolds reports whether some member of g is a finding of one of
// workspaces.
func GroupHolds(g store.GroupIncident, workspaces []string) bool {
	return slices.ContainsFunc(g.Members, func(m store.GroupMember) bool { return slices.Contains(workspaces, m.Workspace) })
}

// GroupPath is the path of a group's page, under prefix.
func GroupPath(prefix, id string) string {
	return prefix + "/groups/" + url.PathEscape(id)
}
