// Package config is driftwatch's configuration file: the YAML schema
// (Config and its sections, and the inventory fragments `include:` names),
// defaults, strict loading (LoadFile, Load: an unknown key is an error,
// with a "did you mean" hint) and validation. Every error names file, line
// and key ("file:line: workspaces[1].source.path: ..."), all of them
// joined; relative paths resolve against the config file's directory.
//
// It is a leaf of plain data plus validation. Where a subsystem owns a
// block of settings, config embeds that subsystem's type rather than
// copying its fields: runner.kubernetes is kubecfg.Config (kube.Config is
// a defined type over it; Kube returns it), a remediation block embeds
// envelope.Envelope (engine.Envelope), backend_policy is
// backendpolicy.Overrides (EffectiveBackendPolicy merges the layers into a
// backend.Policy), an ignore entry is pattern.Ignore, and each notifier
// type's block is its <type>cfg.Config (internal/notify/<type>/<type>cfg,
// checked at load by its Check; NotifierSpecs hands the blocks to
// notifiers.Build). What config derives
// is plain data the subsystems take as is: EffectiveForbidden (which
// policy.CompileRules compiles with the Ignore entries),
// EffectiveRemediation, EffectiveAlertPolicy, EffectiveTimeout, and the
// secrets it names (SecretFiles, SecretValues) for redaction. Validation
// uses the subsystems' own checks from the same leaves: pattern.Compile
// (globs), cronspec (schedules, as the scheduler parses them),
// severity.Parse, cafile.Read (the callback CA), kubecfg.Config.Validate
// and envelope.Envelope.Validate.
//
// Loading reads the config and its fragments and checks that the files it
// names exist (token files: readable and not empty); it opens no
// connection, reads no Terraform tree, starts nothing and constructs no
// runner, notifier or store. A discover: entry is validated here and
// expanded through a Finder it is handed (LoadFileWith, DiscoverGit:
// internal/inventory's, which reads trees and checks git out); LoadFile
// and Load leave it unexpanded.
//
// It imports no internal package but leaves (packages that import no other
// internal package, or only notifycfg and notify/severity, for the
// notifiers' <type>cfg): backend/backendpolicy, cafile, notify/severity,
// notify/notifycfg and the <type>cfg, policy/pattern, policy/envelope,
// config/kubecfg, terraform/sandbox/netcfg and schedule/cronspec (the
// depguard rule config-imports-leaves-only in .golangci.yml enforces the
// list). Its importers: cmd/driftwatch, app, inventory, pipeline,
// incident, silence, leader, remediation and server (and tests).
package config
