terraform {
  required_providers {
    local = { source = "hashicorp/local" }
  }
}

variable "out_dir" { type = string }

resource "local_file" "hosts" {
  filename = "${var.out_dir}/network/hosts.conf"
  content  = "10.0.0.1 gateway\n10.0.0.2 dns\n"
}

resource "local_file" "routes" {
  filename = "${var.out_dir}/network/routes.conf"
  content  = "default via 10.0.0.1\n"
}
