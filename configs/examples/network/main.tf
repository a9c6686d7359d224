terraform {
  required_providers {
    local = { source = "hashicorp/local" }
    # A file resource whose provider reads the content back on refresh, as a
    # cloud provider reads an API object: a hand edit shows as an in-place
    # update of one attribute. Built offline by `make tools`.
    dwtest = { source = "driftwatch/dwtest" }
  }
}

variable "out_dir" { type = string }

resource "dwtest_file" "hosts" {
  filename = "${var.out_dir}/network/hosts.conf"
  content  = "10.0.0.1 gateway\n10.0.0.2 dns\n"
}

resource "local_file" "routes" {
  filename = "${var.out_dir}/network/routes.conf"
  content  = "default via 10.0.0.1\n"
}
