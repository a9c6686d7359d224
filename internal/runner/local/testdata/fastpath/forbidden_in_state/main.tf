# Forbidden types applied and unchanged: a clean plan (exit code 0, nothing
# to show) whose forbidden resources are in configuration and state, with
# string keys, inside a module called with for_each, and one with count = 0
# beside them.
terraform {
  required_providers {
    dwtest     = { source = "driftwatch/dwtest" }
    kubernetes = { source = "driftwatch/kubernetes" }
  }
}

variable "root" { type = string }

resource "kubernetes_config_map" "cm" {
  for_each = toset(["a", "b.c"])
  filename = "${var.root}/cm-${each.key}.txt"
  content  = "cm"
}

resource "kubernetes_config_map" "off" {
  count    = 0
  filename = "${var.root}/off.txt"
  content  = "off"
}

module "apps" {
  source   = "./modules/apps"
  for_each = toset(["x"])
  root     = "${var.root}/${each.key}"
}

resource "dwtest_file" "a" {
  filename = "${var.root}/a.txt"
  content  = "v1"
}
