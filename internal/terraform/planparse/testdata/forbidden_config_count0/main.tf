# Forbidden types that exist only in configuration: count = 0 at the root and
# an empty for_each in a module. Nothing is in state or planned values.
terraform {
  required_providers {
    dwtest     = { source = "driftwatch/dwtest" }
    kubernetes = { source = "driftwatch/kubernetes" }
  }
}

variable "root" { type = string }

resource "kubernetes_config_map" "disabled" {
  count    = 0
  filename = "${var.root}/cm.txt"
  content  = "cm"
}

module "charts" {
  source = "./modules/charts"
  root   = var.root
}

resource "dwtest_file" "a" {
  filename = "${var.root}/a.txt"
  content  = "v1"
}
