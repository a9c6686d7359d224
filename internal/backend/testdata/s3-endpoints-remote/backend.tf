# Encrypted and locked, but the S3 and DynamoDB endpoints are plain http://
# to other machines; STS over https is fine.
terraform {
  backend "s3" {
    bucket         = "corp-tfstate"
    key            = "app/terraform.tfstate"
    region         = "eu-west-1"
    encrypt        = true
    use_lockfile   = true
    use_path_style = true
    endpoints = {
      s3       = "http://minio.corp.example.com:9000"
      dynamodb = "HTTP://10.0.4.7:8000"
      sts      = "https://sts.example.com"
    }
  }
}
