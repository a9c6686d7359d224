terraform {
  backend "local" {}
}

resource "terraform_data" "x" {}
