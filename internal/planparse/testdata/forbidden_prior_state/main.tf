# Applied from base.tf with a kubernetes_config_map, which this config no
# longer declares: the forbidden type is only in prior state (planned delete).
terraform {
  required_providers {
    dwtest     = { source = "driftwatch/dwtest" }
    kubernetes = { source = "driftwatch/kubernetes" }
  }
}

variable "root" { type = string }

resource "dwtest_file" "a" {
  filename = "${var.root}/a.txt"
  content  = "v1"
}
