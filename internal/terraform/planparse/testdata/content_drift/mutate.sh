printf 'tampered' > "$DIR/a.txt"
