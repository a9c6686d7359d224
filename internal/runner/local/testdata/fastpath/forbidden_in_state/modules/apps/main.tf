terraform {
  required_providers {
    helm = { source = "driftwatch/helm" }
  }
}

variable "root" { type = string }

resource "helm_release" "app" {
  filename = "${var.root}-release.txt"
  content  = "release"
}
