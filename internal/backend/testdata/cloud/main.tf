terraform {
  cloud {
    organization = "corp"
    token        = "CANARY-CLOUD-TOKEN-0b0b"
    workspaces {
      name = "app"
    }
  }
}
