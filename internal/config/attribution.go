package config

import (
	"fmt"
	"os"
	"time"
)

// DefaultAttributionTimeout bounds one answer of an attribution command
// when no timeout is set.
const DefaultAttributionTimeout = 30 * time.Second

// maxAttributionTimeout bounds attribution.timeout: a run waits for its
// answers.
const maxAttributionTimeout = 10 * time.Minute

// Attribution is a workspace's (or defaults') attribution command: a
// program the daemon runs, outside Terraform's jail, for each drift
// finding first seen, to ask who changed the resource (docs/attribution.md).
type Attribution struct {
	// Command is the program and its arguments (no shell); a path with a
	// slash is relative to the config file, a bare name is looked up on
	// PATH. A workspace's empty list turns defaults' command off.
	Command []string `yaml:"command"`
	// Env is the program's environment beyond PATH and a private HOME;
	// nothing else of the daemon's is passed. Merged over defaults'.
	Env map[string]string `yaml:"env"`
	// SecretEnvFiles maps an environment variable to a file holding its
	// value, read at each call and redacted like every secret file.
	SecretEnvFiles map[string]string `yaml:"secret_env_files"`
	// Timeout bounds one call (default 30s, at most 10m).
	Timeout Duration `yaml:"timeout"`
}

// LabelAttribution is an attribution command for the workspaces that
// carry Labels (attribution_by_label[]): between defaults' and a
// workspace's own.
type LabelAttribution struct {
	// Labels a workspace must all carry (at least one).
	Labels      map[string]string `yaml:"labels"`
	Attribution `yaml:",inline"`
}

// matches reports whether a workspace with labels carries all of l's.
func (l LabelAttribution) matches(labels map[string]string) bool {
	for k, v := range l.Labels {
		if got, ok := labels[k]; !ok || got != v {
			return false
		}
	}
	return len(l.Labels) > 0
}

// AttributionCommand is a workspace's effective attribution command.
type AttributionCommand struct {
	Argv           []string
	Env            map[string]string
	SecretEnvFiles map[string]string
	Timeout        time.Duration
}

// EffectiveAttribution merges, in this order, defaults.attribution, the
// attribution_by_label entries whose labels the workspace carries (in
// config order) and the workspace's attribution: the last command set
// (an empty list: none), env and secret_env_files merged key by key (a
// secret overrides a plain value of the same name), the last timeout
// set, else DefaultAttributionTimeout. ok is false when there is no
// command.
func (c *Config) EffectiveAttribution(w Workspace) (cmd AttributionCommand, ok bool) {
	cmd.Timeout = DefaultAttributionTimeout
	layers := []*Attribution{c.Defaults.Attribution}
	for i := range c.AttributionByLabel {
		if c.AttributionByLabel[i].matches(w.Labels) {
			layers = append(layers, &c.AttributionByLabel[i].Attribution)
		}
	}
	for _, a := range append(layers, w.Attribution) {
		if a == nil {
			continue
		}
		if a.Command != nil {
			cmd.Argv = a.Command
		}
		cmd.Env = merge(cmd.Env, a.Env)
		cmd.SecretEnvFiles = merge(cmd.SecretEnvFiles, a.SecretEnvFiles)
		if a.Timeout > 0 {
			cmd.Timeout = time.Duration(a.Timeout)
		}
	}
	for k := range cmd.SecretEnvFiles {
		delete(cmd.Env, k)
	}
	return cmd, len(cmd.Argv) > 0
}

// validate checks a (nil: nothing to check) under key, making paths
// absolute against dir, the config file's directory.
func (a *Attribution) validate(pos *positions, key, dir string) []error {
	if a == nil {
		return nil
	}
	var errs []error
	add := func(k, format string, args ...any) { errs = append(errs, pos.errorf(key+"."+k, format, args...)) }
	if len(a.Command) > 0 {
		if a.Command[0] == "" {
			add("command[0]", "the program is empty")
		} else if err := checkBinary(dir, &a.Command[0]); err != nil {
			add("command[0]", "%v", err)
		}
	}
	for k := range a.Env {
		if err := validEnvName(k); err != nil {
			add("env."+k, "%v", err)
		}
	}
	checkSecretEnvFiles(a.SecretEnvFiles, a.Env, dir, validEnvName, add)
	switch {
	case a.Timeout < 0:
		add("timeout", "must not be negative")
	case time.Duration(a.Timeout) > maxAttributionTimeout:
		add("timeout", "must be at most %s", maxAttributionTimeout)
	}
	return errs
}

// secretFiles lists the secret files of a (nil: none).
func (a *Attribution) secretFiles() []string {
	if a == nil {
		return nil
	}
	out := make([]string, 0, len(a.SecretEnvFiles))
	for _, f := range a.SecretEnvFiles {
		out = append(out, f)
	}
	return out
}

// validEnvName accepts any well-formed environment variable name: an
// attribution command is no Terraform process, so none is reserved.
func validEnvName(k string) error {
	if !envName.MatchString(k) {
		return fmt.Errorf("%q is not a valid environment variable name", k)
	}
	return nil
}

// checkSecretEnvFiles checks secret_env_files (variable -> file) beside
// env: each name valid (checkName), not also in env, and its file, made
// absolute against dir, present.
func checkSecretEnvFiles(files, env map[string]string, dir string, checkName func(string) error, add func(k, format string, args ...any)) {
	for k, f := range files {
		if err := checkName(k); err != nil {
			add("secret_env_files."+k, "%v", err)
			continue
		}
		if _, dup := env[k]; dup {
			add("secret_env_files."+k, "also set in env")
		}
		files[k] = absFrom(dir, f)
		if _, err := os.Stat(files[k]); err != nil {
			add("secret_env_files."+k, "%v", err)
		}
	}
}
