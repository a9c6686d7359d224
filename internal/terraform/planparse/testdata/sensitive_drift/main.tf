# The file behind a sensitive attribute is edited (drift on
# sensitive_content), and a sensitive map whose keys are secrets changes
# (pending replace on triggers_replace). No canary string may appear in any
# finding. (Not input: terraform_data copies input to output without its
# sensitive mark, and Terraform itself then prints the map in clear text.)
terraform {
  required_providers {
    dwtest = { source = "driftwatch/dwtest" }
  }
}

variable "root" { type = string }

variable "phase" {
  type    = string
  default = "plan"
}

resource "dwtest_file" "secret" {
  filename          = "${var.root}/secret.txt"
  sensitive_content = "canary-before-8f3a1c"
}

resource "terraform_data" "secret_map" {
  triggers_replace = sensitive(var.phase == "base" ? { "canary-key-base-77d2" = "canary-value-base-1e9b" } : { "canary-key-plan-5b0c" = "canary-value-plan-a4f6" })
}
