terraform {
  required_providers {
    local = { source = "hashicorp/local" }
  }
}

variable "out_dir" { type = string }

resource "local_file" "zone" {
  filename = "${var.out_dir}/dns/example.zone"
  content  = "@ IN A 10.0.0.10\n"
}

output "zone_file" { value = local_file.zone.filename }
