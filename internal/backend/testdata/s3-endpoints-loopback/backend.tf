# A local S3-compatible store and its friends, all on loopback: plain
# http:// never leaves the machine.
terraform {
  backend "s3" {
    bucket         = "corp-tfstate"
    key            = "app/terraform.tfstate"
    region         = "eu-west-1"
    encrypt        = true
    use_lockfile   = true
    use_path_style = true
    endpoints = {
      s3       = "http://127.0.0.1:8333"
      dynamodb = "http://localhost:8000"
      iam      = "http://[::1]:9000"
      sts      = "http://127.8.9.10"
    }
  }
}
