terraform {
  backend "gcs" {}
}
