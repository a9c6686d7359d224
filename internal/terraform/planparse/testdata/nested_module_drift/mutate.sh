printf 'edited by hand' > "$DIR/inner.txt"
