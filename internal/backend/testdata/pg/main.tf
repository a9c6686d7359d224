terraform {
  backend "pg" {
    conn_str = "postgres://tf:CANARY-PG-PASSWORD-d00d@db.example.com/tf?sslmode=require"
  }
}
