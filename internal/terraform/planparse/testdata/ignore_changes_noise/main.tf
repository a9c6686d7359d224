# The file is edited, but lifecycle ignore_changes makes the drift
# irrelevant: resource_changes is no-op, so the drift is noise.
terraform {
  required_providers {
    dwtest = { source = "driftwatch/dwtest" }
  }
}

variable "root" { type = string }

resource "dwtest_file" "a" {
  filename = "${var.root}/a.txt"
  content  = "v1"
  lifecycle {
    ignore_changes = [content]
  }
}
