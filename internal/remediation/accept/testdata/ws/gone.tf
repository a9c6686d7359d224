# Deleted by hand, and not to come back.
resource "dwtest_file" "gone" {
  filename = "gone.txt"
  content  = "v1" # the removed block replaces this block
}

resource "dwtest_file" "counted" {
  count   = 2
  content = "c${count.index}"
}

resource "dwtest_file" "used" {
  content = "u"
}

output "used" {
  value = "${dwtest_file.used.content}!"
}
