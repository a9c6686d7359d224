# mutate.sh deletes the file: local_file's Read removes the resource, so the
# drift action is delete and the plan re-creates it.
terraform {
  required_providers {
    local = { source = "hashicorp/local" }
  }
}

variable "root" { type = string }

resource "local_file" "gone" {
  filename = "${var.root}/gone.txt"
  content  = "v1"
}

resource "local_file" "kept" {
  filename = "${var.root}/kept.txt"
  content  = "v1"
}
