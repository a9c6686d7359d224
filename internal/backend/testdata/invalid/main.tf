terraform {
  backend "s3" {
    bucket     = "corp-tfstate"
    secret_key = "CANARY-INVALID-SECRET-4242
  }
}
