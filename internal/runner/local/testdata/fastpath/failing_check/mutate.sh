printf 'edited' > "$DIR/a.txt"
