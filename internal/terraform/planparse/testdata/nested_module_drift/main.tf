# Drift two modules deep: module.outer.module.inner.dwtest_file.f.
terraform {
  required_providers {
    dwtest = { source = "driftwatch/dwtest" }
  }
}

variable "root" { type = string }

module "outer" {
  source = "./modules/outer"
  root   = var.root
}
