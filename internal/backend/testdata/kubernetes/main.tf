terraform {
  backend "kubernetes" {
    secret_suffix = "app"
    config_path   = "~/.kube/config"
  }
}
