# Only an output changes (phase base -> plan): output noise.
terraform {
  required_providers {
    dwtest = { source = "driftwatch/dwtest" }
  }
}

variable "root" { type = string }

variable "phase" {
  type    = string
  default = "plan"
}

resource "dwtest_file" "a" {
  filename = "${var.root}/a.txt"
  content  = "v1"
}

output "release" {
  value = "release-${var.phase}"
}
