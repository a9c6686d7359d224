# The endpoint comes from a variable: not known statically, not reported.
terraform {
  backend "s3" {
    bucket       = "corp-tfstate"
    key          = "app/terraform.tfstate"
    region       = "eu-west-1"
    encrypt      = true
    use_lockfile = true
    endpoints    = { s3 = var.s3_endpoint }
  }
}
