resource "dwtest_file" "x" {
  content = "same"
}
