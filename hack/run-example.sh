#!/usr/bin/env bash
# make run: copy configs/examples to a scratch dir, apply every workspace
# with real Terraform, change things behind Terraform's back, then audit.
set -euo pipefail
bin=$(realpath "$1")
root=$(cd "$(dirname "$0")/.." && pwd)
T=${DRIFTWATCH_TOOLS:-$HOME/.cache/driftwatch}
source "$T/tools.env"
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
done
echo "==> editing network/hosts.conf by hand (drift)"
echo "10.0.0.99 gateway # hotfix" > "$work/out/network/hosts.conf"

echo "==> driftwatch audit --config $work/driftwatch.yaml"
set +e
(cd "$work" && "$bin" audit --config driftwatch.yaml)
code=$?
set -e
echo "==> exit code $code (0 clean, 2 drift/pending/forbidden, 1 error); scratch dir: $work"
[ "$code" -ne 1 ]
