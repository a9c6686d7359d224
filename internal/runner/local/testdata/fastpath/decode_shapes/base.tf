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
  input = { list = [1, "x", true], nested = { deep = ["a", "b"] }, n = 1.5 }
}

resource "terraform_data" "trigger" {
  input = "t1"
}

resource "dwtest_file" "replaced" {
  filename = "${var.root}/replaced.txt"
  content  = "r"
}

resource "dwtest_file" "old_name" {
  filename = "${var.root}/renamed.txt"
  content  = "m"
}

resource "dwtest_file" "gone" {
  filename = "${var.root}/gone.txt"
  content  = "g"
}

data "dwtest_file" "read" {
  filename = dwtest_file.k["a"].filename
}

output "greeting" {
  value = "hello"
}
