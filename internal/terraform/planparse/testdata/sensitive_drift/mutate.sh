printf 'canary-after-d41e07' > "$DIR/secret.txt"
