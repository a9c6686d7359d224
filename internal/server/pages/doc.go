// Package pages is driftwatch's server-rendered HTML: the status page
// (the workspace list with its filters and pager, notifier health, held
// notifications, pending remediations, open group incidents), a
// workspace's page (with the groups holding its findings), a run's page
// with its log, a remediation's page, a group incident's page, the
// Silences, Trends (line charts as inline SVG, with tables for screen
// readers) and Audit pages, an adoption's result (Adopt, the answer to a
// scan page's Adopt button), and the message page every refusal and
// sign-in answer uses (Message, Refuse). One method of Pages per route,
// mounted by the server.
//
// Templates and the stylesheet are embedded (assets/). Every page is
// rendered into a buffer first (a template error is a clean 500), with a
// Content-Security-Policy that allows the inline stylesheet alone: no
// script, no external load, no framing; forms only to this origin. The
// pages change nothing themselves: their buttons (Accept, Adopt) post
// forms to API routes, and the commands they show are API calls.
//
// What a page shows is read through view.Source. Of the server's rooms
// it imports view, auth (who is signed in, refusals), control, respond
// and apitypes, never api; besides them store, stats, runlog and drift.
package pages
