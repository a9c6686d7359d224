// Package notifytest holds what notifier tests share: local servers that
// speak each vendor's protocol (OpsGenie's Alert API v2, Jira Service
// Management's integration API, PagerDuty's Events API v2, a Teams
// Workflows trigger, GitHub's REST API, GitLab's REST API v4, a real SMTP
// server (emersion/go-smtp) with STARTTLS and AUTH, a signed-webhook
// receiver, Slack's Web API, and Slack's side of interactivity: a signer
// of interaction requests and a response_url receiver), failure injection
// for the cases a real service cannot produce on demand, and Conformance,
// the checks every notify.Notifier must pass.
//
// The servers are real HTTP(S) servers on 127.0.0.1 (httptest), so the
// notifiers' real clients, SDKs and TLS stacks run in tests; they record
// every request for exact assertions. The fakes are stricter than the
// services where that catches bugs (OpsGenie's field limits are errors
// here, where the service truncates silently) and say so in their docs.
//
// Conformance checks: a message is delivered; status codes are classified
// (429 with Retry-After, 500 and 503 retryable; 400, 401 and 403
// permanent); a server that echoes the notifier's secrets in an error body
// gets none of them into the error; a network failure is retryable and
// the notifier recovers when the server is back; a cancelled or expired
// context returns promptly, and one already done is a retryable error
// with nothing sent (for servers that record requests).
//
// Checks that HTTP notifiers' own tests share, with each vendor's tables
// and texts: RequireStatusClasses (status → retryable, one attempt per
// Notify), RequireAPIError (a vendor's error answer), RequireRetryAfter
// with RetryAfter429 and Clock (Retry-After delays), RequireTimeout,
// RedirectServer and RequireNoRedirect (no redirect is followed),
// DeliverEchoing with RequireNoSecretsInResults and
// RequireNoSecretsInHeader (no secret escapes, whatever the server
// echoes); ConformanceOf (Conformance for a server constructor and the
// vendor's test notifier) and Start/StartLogged (the same pair for one
// test); NotifyLifecycle, RequirePosts and RequireReopens (one incident's
// messages); for New, Validate and Notify tests, OpenChecks with NewOf
// (notify.Open's checks of logger and secret file), Files (a folder of
// secret files), RequireValidate (a Config.Validate table),
// NotifyStateless, RequireUnknownEvent(Of), LifecycleEvents, OrDiscard
// and MustNew (a vendor's New that fails the test on error), MustJSON
// (a value as the JSON body a test expects). Fixtures:
// SampleMessage and SampleKey, Errored and Forbidden (the other
// classes), AwaitingApproval (a proposed remediation);
// RequireInitFailedAlert and RequireGenieLimits check the alert OpsGenie
// and JSM both make through package genie.
//
// Only tests import this package.
package notifytest
