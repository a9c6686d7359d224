rm -f "$DIR/gone.txt"
