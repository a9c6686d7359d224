# Drift on list and map instances whose keys sort differently as text and
# as Terraform orders them ([2] and [10]; "b.c"), and on a sensitive
# attribute inside a module instance; the data source reads a changed file.
printf 'edited' > "$DIR/n-2.txt"
printf 'edited' > "$DIR/n-10.txt"
printf 'edited' > "$DIR/k-b.c.txt"
printf 'edited' > "$DIR/k-a.txt"
printf 'svc-edited' > "$DIR/svc-two-secret.txt"
