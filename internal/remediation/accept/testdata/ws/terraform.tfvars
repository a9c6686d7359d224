# set per environment
region = "eu-west-1"
