// Package teams delivers incidents to a Microsoft Teams channel or chat
// through a Workflows (Power Automate) flow whose trigger is "When a
// Teams webhook request is received", with plain net/http (no SDK) and
// notify.Sender. Office 365 connectors (Incoming Webhooks) are retired;
// their URLs are refused. It owns a pure card builder (buildCard and
// encode: table tested, exact JSON) and a thin send. Its settings are
// teamscfg.Config (the notifiers[].teams block, declared and checked
// there). It must not import config, store, or any other notify vendor
// package; only the notifiers factory constructs it.
//
// One message is one Adaptive Card; Teams keeps nothing driftwatch could
// find again, so a resent card is posted again, byte-identical. The
// trigger URL is the credential: it and its parts are redacted from
// every error.
//
// The mapping, the card's size, the responses and the duplicates are in
// docs/alerts/teams.md.
package teams
