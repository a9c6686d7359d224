terraform {
  backend "consul" {
    address      = "consul.example.com:8500"
    path         = "tf/app"
    lock         = false
    access_token = "CANARY-CONSUL-TOKEN-c4c4"
  }
}
