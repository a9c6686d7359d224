printf 'changed by an operator' > "$DIR/a.txt"
