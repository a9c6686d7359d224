# mutate.sh edits the file behind Terraform's back: drift on content.
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

resource "dwtest_file" "untouched" {
  filename = "${var.root}/untouched.txt"
  content  = "same"
}
