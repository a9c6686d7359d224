terraform {
  required_providers {
    dwtest     = { source = "driftwatch/dwtest" }
    kubernetes = { source = "driftwatch/kubernetes" }
    helm       = { source = "driftwatch/helm" }
  }
}

variable "root" { type = string }

resource "kubernetes_config_map" "legacy" {
  filename = "${var.root}/cm.txt"
  content  = "cm"
}

resource "dwtest_file" "a" {
  filename = "${var.root}/a.txt"
  content  = "v1"
}

# Forbidden everywhere, with count: the configuration address
# helm_release.app folds into the instance address helm_release.app[0].
resource "helm_release" "app" {
  count    = 1
  filename = "${var.root}/release-${count.index}.txt"
  content  = "release"
}
