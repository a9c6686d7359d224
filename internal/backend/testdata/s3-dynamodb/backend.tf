terraform {
  backend "s3" {
    bucket         = "corp-tfstate"
    key            = "app/terraform.tfstate"
    region         = "eu-west-1"
    encrypt        = "true" # a string converts, as in Terraform
    kms_key_id     = "alias/tfstate"
    dynamodb_table = "tf-locks"
  }
}
