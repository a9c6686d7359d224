# Applied from base.tf, then planned with this merged-but-unapplied config:
# an update, a replacement and a create, no drift.
terraform {
  required_providers {
    dwtest = { source = "driftwatch/dwtest" }
  }
}

variable "root" { type = string }

resource "dwtest_file" "a" {
  filename = "${var.root}/a.txt"
  content  = "v2"
}

resource "dwtest_file" "moved" {
  filename = "${var.root}/new.txt"
  content  = "m"
}

resource "terraform_data" "new" {
  input = "n"
}
