package source

// PLACEHOLDER until h5-propose merges (the helper's file replaces it).

// Identity is a commit's author and committer.
type Identity struct{ Name, Email string }
