terraform {
  required_providers {
    dwtest = { source = "driftwatch/dwtest" }
  }
}

variable "root" { type = string }

resource "dwtest_file" "a" {
  filename = "${var.root}/a.txt"
  content  = "v1"
}

resource "dwtest_file" "moved" {
  filename = "${var.root}/old.txt"
  content  = "m"
}
