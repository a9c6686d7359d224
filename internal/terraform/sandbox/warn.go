package sandbox

import "log/slog"

// Resolve is DetectIsolation for the runs of this process, logging a
// warning where they are not isolated from the daemon and from each
// other, or cannot resolve names.
func Resolve(setting, network string, logger *slog.Logger) (Isolation, error) {
	iso, err := DetectIsolation(setting, network)
	if err != nil {
		return iso, err
	}
	if iso.Mode != "namespaces" {
		logger.Warn("local runs are not isolated: a workspace's Terraform code can read what the daemon's user can (other workspaces' secrets, the daemon's files)",
			"sandbox", iso.Mode, "reason", iso.Reason)
	}
	if iso.Network != "isolated" {
		logger.Warn("local runs share this machine's network: a workspace's Terraform code can reach every port this machine listens on, the daemon's API included",
			"sandbox_network", iso.Network, "reason", iso.NetworkReason)
	}
	if iso.Network == "isolated" && LoopbackResolver("/etc/resolv.conf") {
		logger.Warn("local runs resolve no names: /etc/resolv.conf names only a resolver on loopback, which a run's own network namespace does not reach; point it at a resolver on another address, or set terraform.sandbox_network: host")
	}
	return iso, nil
}
