variable "name" {
  type = string
}

resource "dwtest_file" "m" {
  content = var.name
  mode    = "0644"
}
