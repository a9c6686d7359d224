package pattern

// Ignore silences drift on matching addresses (and, if given, attributes):
// one `ignore:` entry of a workspace, as written in the config.
// policy.CompileRules compiles it into a policy.IgnoreRule.
type Ignore struct {
	Address    string   `yaml:"address"`
	Attributes []string `yaml:"attributes"`
}
