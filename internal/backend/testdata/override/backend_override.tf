terraform {
  backend "gcs" {
    bucket = "corp-tfstate"
  }
}
