terraform {
  backend "azurerm" {
    resource_group_name  = "tfstate"
    storage_account_name = "corptfstate"
    container_name       = "tfstate"
    key                  = "app.terraform.tfstate"
    access_key           = "CANARY-AZURE-KEY-a2a2"
  }
}
