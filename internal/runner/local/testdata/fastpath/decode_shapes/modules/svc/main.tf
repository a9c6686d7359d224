terraform {
  required_providers {
    dwtest = { source = "driftwatch/dwtest" }
  }
}

variable "root" { type = string }

resource "dwtest_file" "secret" {
  filename          = "${var.root}-secret.txt"
  sensitive_content = "svc-secret"
}
