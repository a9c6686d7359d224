# A data source nested in a check block is read during apply (exit code 2,
# resource_changes action read) although nothing changes.
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

check "file_present" {
  data "dwtest_file" "probe" {
    filename = dwtest_file.a.filename
  }
  assert {
    condition     = data.dwtest_file.probe.content == "v1"
    error_message = "a.txt changed"
  }
}
