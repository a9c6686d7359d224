# Drift and a check block whose assertion fails: the plan file records
# the check's status only, so the run reads the plan with show -json (its
# address, kind and message are there).
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

check "content_is_v1" {
  assert {
    condition     = dwtest_file.a.content == "v2"
    error_message = "a.txt is not v2"
  }
}
