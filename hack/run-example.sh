#!/usr/bin/env bash
# make run: copy configs/examples to a scratch dir, apply every workspace
# with real Terraform, change things behind Terraform's back, print a
# one-shot audit, then run the daemon on it (status page on
# http://127.0.0.1:8080) until Ctrl-C. MODE=audit stops after the audit.
set -euo pipefail
bin=$(realpath "$1")
mode=${MODE:-daemon}
root=$(cd "$(dirname "$0")/.." && pwd)
T=${DRIFTWATCH_TOOLS:-$HOME/.cache/driftwatch}
source "${DRIFTWATCH_TOOLS_ENV:-$T/tools.env}"
export TF_CLI_CONFIG_FILE="$TF_CLI_CONFIG" CHECKPOINT_DISABLE=1
tf=${TF_BINARIES%% *}

work=$(mktemp -d "${TMPDIR:-/tmp}/driftwatch-example.XXXXXX")
cp -r "$root/configs/examples/." "$work/"
echo "==> setting up the example in $work with $tf"
for ws in network dns release platform; do
  printf 'out_dir = "%s/out"\n' "$work" > "$work/$ws/example.auto.tfvars"
  extra=()
  [ "$ws" = release ] && extra=(-var app_version=1.4.0)
  (cd "$work/$ws" && "$tf" init -input=false -no-color >/dev/null && \
     "$tf" apply -auto-approve -input=false -no-color "${extra[@]}" >/dev/null)
  # State holds every attribute: keep it private, as driftwatch's backend
  # hygiene check asks (a 0644 state file is a finding).
  chmod 600 "$work/$ws/terraform.tfstate"
done
echo "==> editing network/hosts.conf by hand (drift)"
echo "10.0.0.99 gateway # hotfix" > "$work/out/network/hosts.conf"

echo "==> driftwatch audit --config $work/driftwatch.yaml"
set +e
(cd "$work" && "$bin" audit --config driftwatch.yaml)
code=$?
set -e
echo "==> audit exit code $code (0 clean, 2 drift/pending/forbidden, 1 error)"
[ "$code" -ne 1 ]
[ "$mode" = audit ] && exit 0

echo "==> driftwatch daemon --config $work/driftwatch.yaml"
echo "    status page: http://127.0.0.1:8080   API: /api/v1/workspaces   metrics: /metrics   (Ctrl-C stops)"
cd "$work" && exec "$bin" daemon --config driftwatch.yaml --log-format text
