terraform {
  required_providers {
    local = { source = "hashicorp/local" }
    # Stand-in for hashicorp/kubernetes, built offline by `make tools`.
    kubernetes = { source = "driftwatch/kubernetes" }
  }
}

variable "out_dir" { type = string }

resource "local_file" "readme" {
  filename = "${var.out_dir}/platform/README"
  content  = "platform bootstrap\n"
}

# Kubernetes objects belong to Argo CD, not Terraform: driftwatch reports
# this as forbidden even though nothing drifted.
resource "kubernetes_config_map" "settings" {
  filename = "${var.out_dir}/platform/settings.yaml"
  content  = "log_level: info\n"
}
