terraform {
  required_providers {
    dwtest     = { source = "driftwatch/dwtest" }
    kubernetes = { source = "driftwatch/kubernetes" }
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
