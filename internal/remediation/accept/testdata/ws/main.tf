locals {
  # the environment
  env = "prod"
}

variable "size" {
  type    = number
  default = 3
}

variable "region" {
  type = string
}

variable "token" {
  type      = string
  sensitive = true
  default   = "canary-default"
}

variable "unset" {
  type = string
}

resource "dwtest_file" "lit" {
  filename = "a.txt"
  content  = "v1" # keep this comment
  tags = {
    team  = "core"
    owner = "ops"
  }
}

resource "dwtest_file" "loc" {
  content = local.env
}

resource "dwtest_file" "def" {
  size = var.size
}

resource "dwtest_file" "tfv" {
  region = var.region
}

resource "dwtest_file" "refused" {
  fn     = upper("x")
  cond   = var.size > 2 ? "a" : "b"
  tmpl   = "${local.env}-x"
  ref    = dwtest_file.lit.id
  forx   = [for s in ["a"] : s]
  secret = var.token
  unset  = var.unset
}

module "app" {
  source = "./modules/app"
  name   = "one"
}

module "s1" {
  source = "./modules/shared"
}

module "s2" {
  source = "./modules/shared"
}

module "remote" {
  source = "hashicorp/consul/aws"
}
