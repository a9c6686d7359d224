terraform {
  backend "http" {
    address  = "https://state.example.com/app"
    username = "driftwatch"
    password = "CANARY-HTTP-PASSWORD-c0de"
  }
}
