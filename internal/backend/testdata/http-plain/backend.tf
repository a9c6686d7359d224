terraform {
  backend "http" {
    address        = "http://state.example.com/app"
    lock_address   = "HTTP://state.example.com/app/lock"
    unlock_address = "https://state.example.com/app/lock"
    password       = "CANARY-HTTP-PASSWORD-c0de"
  }
}
