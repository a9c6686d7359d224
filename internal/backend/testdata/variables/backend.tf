# OpenTofu allows variables and locals in backend blocks; they are unknown
# to a static reader, so no finding may come from them.
terraform {
  backend "s3" {
    bucket         = var.bucket
    key            = "${local.prefix}/terraform.tfstate"
    encrypt        = var.encrypt
    use_lockfile   = local.lock
    dynamodb_table = lower(var.table)
    secret_key     = var.secret_key
  }
}
