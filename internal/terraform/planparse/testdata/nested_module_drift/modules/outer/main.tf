terraform {
  required_providers {
    dwtest = { source = "driftwatch/dwtest" }
  }
}

variable "root" { type = string }

module "inner" {
  source = "./inner"
  root   = var.root
}

resource "dwtest_file" "o" {
  filename = "${var.root}/outer.txt"
  content  = "outer"
}
