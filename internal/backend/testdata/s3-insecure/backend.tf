# Neither encryption nor locking; credentials are canaries that must never
# appear in findings or errors.
terraform {
  backend "s3" {
    bucket     = "corp-tfstate"
    key        = "net/terraform.tfstate"
    region     = "eu-west-1"
    access_key = "CANARY-ACCESS-KEY-1f3a"
    secret_key = "CANARY-SECRET-KEY-9b7c"
    token      = "CANARY-TOKEN-55d2"
    encrypt    = false

    assume_role {
      role_arn = "arn:aws:iam::123456789012:role/CANARY-ROLE-77aa"
    }
  }
}
