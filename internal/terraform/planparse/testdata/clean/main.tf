# Applied and planned unchanged: no findings.
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

resource "terraform_data" "b" {
  input = { name = "b", tags = {} }
}
