package config

// SecretFiles lists every file the config names that holds a secret: the
// API tokens, the notifiers' credentials, and every workspace's secret env
// files and git credentials. Their contents are redacted from every run's
// log and errors, whichever workspace runs (a workspace's code must not
// learn another's secrets, nor the daemon's, by printing them).
func (c *Config) SecretFiles() []string {
	files := []string{c.Server.TokenFile, c.Server.ReadTokenFile, c.Server.MetricsTokenFile, c.Server.Auth.Proxy.SecretFile,
		c.Server.Auth.OIDC.ClientSecretFile, c.Server.Auth.OIDC.CookieSecretFile}
	for _, t := range c.Server.Auth.Tokens {
		files = append(files, t.File)
	}
	for _, n := range c.Notifiers {
		if b := n.Settings(); b != nil {
			files = append(files, b.SecretFiles()...)
		}
	}
	files = append(files, c.Defaults.Attribution.secretFiles()...)
	for i := range c.AttributionByLabel {
		files = append(files, c.AttributionByLabel[i].secretFiles()...)
	}
	for _, w := range c.Workspaces {
		for _, f := range w.SecretEnvFiles {
			files = append(files, f)
		}
		files = append(files, w.Attribution.secretFiles()...)
		if g := w.Source.Git; g != nil {
			files = append(files, g.CredentialsFile)
		}
	}
	out := files[:0]
	for _, f := range files {
		if f != "" {
			out = append(out, f)
		}
	}
	return out
}

// SecretValues lists secrets written inline in the config: webhook header
// values (an Authorization header, say).
func (c *Config) SecretValues() []string {
	var out []string
	for _, n := range c.Notifiers {
		if w := n.Webhook; w != nil {
			for _, v := range w.Headers {
				out = append(out, v)
			}
		}
	}
	return out
}
