terraform {
  required_providers {
    dwtest = { source = "driftwatch/dwtest" }
  }
}

variable "root" { type = string }

resource "dwtest_file" "f" {
  filename = "${var.root}/inner.txt"
  content  = "inner"
}
