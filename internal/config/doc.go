// Package config is driftwatch's configuration file: the YAML schema
// (Config and its sections, and the inventory fragments `include:` names),
// defaults, strict loading (LoadFile, Load: an unknown key is an error,
// with a "did you mean" hint) and validation. Every error names file, line
// and key ("file:line: workspaces[1].source.path: ..."), all of them
// joined; relative paths resolve against the config file's directory.
//
// It also maps its settings onto the types the packages that use them
// own: Workspace.Rules (policy.Rules), EffectiveBackendPolicy
// (backend.Policy), EffectiveRemediation (with a remediate.Envelope),
// RunnerKubernetes.Kube (kube.Config), EffectiveAlertPolicy, and lists the
// secrets it names (SecretFiles, SecretValues) for redaction.
//
// Loading reads the config and its fragments and checks that the files it
// names exist (token files: readable and not empty); it opens no
// connection, starts nothing and constructs no runner, notifier or store.
//
// It imports backend, notify, policy, remediate, runner/kube and schedule
// for their types, parsers and validators; none of them may import it.
// It must not import app, audit, server, store, outbox, incident,
// remediation, tfsession, runner/local, runner/sandbox, runner/remote or
// the notifier implementations. Only cmd/driftwatch, app and remediation
// import it (and kubetest's tests).
package config
