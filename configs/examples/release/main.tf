variable "out_dir" { type = string }

# hack/run-example.sh applies with version = "1.4.0"; the code says 1.5.0:
# merged but never applied, which is pending, not drift.
variable "app_version" {
  type    = string
  default = "1.5.0"
}

resource "terraform_data" "release" {
  input = { app = "shop", version = var.app_version }
}
