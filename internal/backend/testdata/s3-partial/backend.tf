# Partial configuration: everything comes from backend_config.
terraform {
  backend "s3" {}
}
