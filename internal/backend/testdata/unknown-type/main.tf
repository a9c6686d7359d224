terraform {
  backend "oss" {
    bucket = "corp-tfstate"
  }
}
