terraform {
  backend "s3" {
    bucket       = "corp-tfstate"
    key          = "app/terraform.tfstate"
    region       = "eu-west-1"
    encrypt      = true
    use_lockfile = true
  }
}
