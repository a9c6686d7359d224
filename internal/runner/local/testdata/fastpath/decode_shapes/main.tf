# Every kind of change the plan file records, beside drift (mutate.sh):
# a dynamic value changed in depth (terraform_data input, whose output
# becomes unknown), a replacement triggered by another resource, a move, a
# delete for lack of configuration, an output change, a data source read
# during the plan and instances in modules called with for_each.
terraform {
  required_providers {
    dwtest = { source = "driftwatch/dwtest" }
  }
}

variable "root" { type = string }

resource "dwtest_file" "n" {
  count    = 11
  filename = "${var.root}/n-${count.index}.txt"
  content  = "n"
}

resource "dwtest_file" "k" {
  for_each = toset(["a", "b.c", "z"])
  filename = "${var.root}/k-${each.key}.txt"
  content  = "k"
}

module "svc" {
  source   = "./modules/svc"
  for_each = toset(["one", "two"])
  root     = "${var.root}/svc-${each.key}"
}

resource "terraform_data" "shape" {
  input = { list = [1, "y", true, 4], nested = { deep = ["a", "c"], more = { x = null } }, n = 2.5 }
}

resource "terraform_data" "trigger" {
  input = "t2"
}

resource "dwtest_file" "replaced" {
  filename = "${var.root}/replaced.txt"
  content  = "r"
  lifecycle {
    replace_triggered_by = [terraform_data.trigger]
  }
}

moved {
  from = dwtest_file.old_name
  to   = dwtest_file.new_name
}

resource "dwtest_file" "new_name" {
  filename = "${var.root}/renamed.txt"
  content  = "m"
}

data "dwtest_file" "read" {
  filename = dwtest_file.k["a"].filename
}

output "greeting" {
  value = "hello, ${data.dwtest_file.read.content}"
}
