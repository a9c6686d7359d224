terraform {
  backend "gcs" {
    bucket = "corp-tfstate"
    prefix = "app"
  }
}
