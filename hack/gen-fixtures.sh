#!/usr/bin/env bash
# hack/gen-fixtures.sh - regenerate internal/terraform/planparse/testdata/<case>/plan.json
# from real Terraform runs, so the parser is tested on what Terraform really writes.
#
#   hack/gen-fixtures.sh [CASE...]     (default: every case directory)
#
# A case directory holds:
#   main.tf      the configuration that is planned (committed)
#   base.tf      optional: the configuration applied first (default main.tf)
#   mutate.sh    optional: run with bash after the apply and before the plan,
#                with $DIR set to the directory of the managed files, to
#                change things behind Terraform's back
#   modules/...  optional: local modules
#   plan.json    the output (committed)
#
# For each case: copy it to a temp dir, init, apply (with TF_VAR_phase=base),
# run mutate.sh, put main.tf in place, plan -out (with TF_VAR_phase unset, so
# configs that declare `phase` see its default "plan"), show -json. The temp
# dir prefix is replaced by /driftwatch-fixture and the timestamp is fixed,
# so plan.json does not depend on where or when it was generated (random
# values such as terraform_data ids still change on every run).
#
# Needs hack/provision.sh to have built the provider mirror and CLI config
# into $DRIFTWATCH_TOOLS (default $HOME/.cache/driftwatch); the CLI config is
# $TF_CLI_CONFIG, else $DRIFTWATCH_TOOLS/terraformrc. Terraform is $TERRAFORM,
# else $DRIFTWATCH_TOOLS/bin/terraform, else `terraform` on PATH. No state,
# lock file or .terraform dir is left in the checkout.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
TESTDATA=$ROOT/internal/terraform/planparse/testdata
T=${DRIFTWATCH_TOOLS:-$HOME/.cache/driftwatch}
CLI_CONFIG=${TF_CLI_CONFIG:-$T/terraformrc} # TF_CLI_CONFIG comes from $T/tools.env
if [[ -z ${TERRAFORM:-} && -x $T/bin/terraform ]]; then
	TERRAFORM=$T/bin/terraform
fi
TF=${TERRAFORM:-terraform}
PLACEHOLDER=/driftwatch-fixture
FIXED_TIMESTAMP=2000-01-01T00:00:00Z

log() { printf 'gen-fixtures: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

[[ -f $CLI_CONFIG ]] || die "$CLI_CONFIG missing: run hack/provision.sh (make tools) first"
command -v "$TF" >/dev/null || die "terraform not found (set TERRAFORM)"

# Only our own CLI config (the environment may name one that does not
# exist), no checkpoint calls, and nothing that changes plan behaviour.
export TF_CLI_CONFIG_FILE=$CLI_CONFIG
export CHECKPOINT_DISABLE=1
export TF_IN_AUTOMATION=1
unset TF_WORKSPACE TF_CLI_ARGS TF_CLI_ARGS_plan TF_CLI_ARGS_apply TF_CLI_ARGS_init TF_LOG TF_LOG_PATH TF_DATA_DIR

TMP=$(mktemp -d "${TMPDIR:-/tmp}/driftwatch-fixtures.XXXXXX")
trap 'rm -rf -- "$TMP"' EXIT

cases=("$@")
if ((${#cases[@]} == 0)); then
	for d in "$TESTDATA"/*/; do
		[[ -f $d/main.tf ]] && cases+=("$(basename "$d")")
	done
fi

gen() {
	local name=$1 src=$TESTDATA/$1 w work files
	[[ -f $src/main.tf ]] || die "$name: no main.tf in $src"
	w=$TMP/$name
	work=$w/work
	files=$w/files
	mkdir -p "$work" "$files"
	# The case without its outputs and scripts.
	(cd "$src" && tar --exclude=./plan.json --exclude=./mutate.sh --exclude=./.terraform \
		--exclude=./.terraform.lock.hcl --exclude='./*.tfstate*' -cf - .) | (cd "$work" && tar -xf -)
	if [[ -f $src/base.tf ]]; then
		mv "$work/base.tf" "$work/main.tf"
	fi
	export TF_VAR_root=$files
	(
		cd "$work"
		"$TF" init -input=false -no-color >"$w/init.log" 2>&1 || { cat "$w/init.log" >&2; exit 1; }
		TF_VAR_phase=base "$TF" apply -auto-approve -input=false -no-color >"$w/apply.log" 2>&1 ||
			{ cat "$w/apply.log" >&2; exit 1; }
	) || die "$name: init/apply failed"
	if [[ -f $src/mutate.sh ]]; then
		(cd "$work" && DIR=$files bash "$src/mutate.sh") || die "$name: mutate.sh failed"
	fi
	if [[ -f $src/base.tf ]]; then
		cp "$src/main.tf" "$work/main.tf"
	fi
	(
		cd "$work"
		"$TF" plan -input=false -no-color -lock=false -out=plan.tfplan >"$w/plan.log" 2>&1 ||
			{ cat "$w/plan.log" >&2; exit 1; }
		"$TF" show -json plan.tfplan >"$w/plan.raw.json"
	) || die "$name: plan/show failed"
	# Terraform writes compact JSON with unescaped slashes; the temp dir is
	# a plain prefix of every path it prints.
	sed -e "s#$files#$PLACEHOLDER#g" \
		-e "s#\"timestamp\":\"[^\"]*\"#\"timestamp\":\"$FIXED_TIMESTAMP\"#" \
		"$w/plan.raw.json" >"$src/plan.json.tmp"
	if grep -q "$TMP" "$src/plan.json.tmp"; then
		rm -f "$src/plan.json.tmp"
		die "$name: plan.json still mentions the temp dir $TMP"
	fi
	mv -f "$src/plan.json.tmp" "$src/plan.json"
	log "$name: $(wc -c <"$src/plan.json") bytes ($(grep -c '' "$w/plan.log") plan log lines)"
}

for c in "${cases[@]}"; do
	gen "$c"
done
