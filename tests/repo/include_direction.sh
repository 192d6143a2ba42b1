#!/usr/bin/env bash
# Dependencies point one way. The folders of src/ are layers, lowest first:
#
#   0 core
#   1 profile, backend, data
#   2 nn, optim
#   3 model      graph, executor, model state, save/load
#   4 parallel   devices, communicators, reducers, strategies
#   5 train      fit, evaluate/predict, callbacks, checkpoints, the job check
#   6 advise, report
#   7 cli, python (python/src, the nanobind module)
#
# A file may include its own folder, the public API (include/tandem, "tandem/..."), and
# folders of lower layers; never a higher layer, nor another folder of its own layer. Every
# include that breaks this is printed as file:line, and the script fails; so does a folder
# of src/ missing from the table (its layer must be decided) or an include of a folder that
# does not exist.
# Usage: include_direction.sh REPO_ROOT
set -euo pipefail
root="${1:?usage: include_direction.sh REPO_ROOT}"
declare -A layer=([core]=0 [profile]=1 [backend]=1 [data]=1 [nn]=2 [optim]=2 [model]=3
  [parallel]=4 [train]=5 [advise]=6 [report]=6 [cli]=7 [python]=7)

bad=0
complain() {
  echo "include_direction: $*"
  bad=1
}

for dir in "$root"/src/*/; do
  name="$(basename "$dir")"
  [ -n "${layer[$name]:-}" ] || complain "src/$name/ has no layer in include_direction.sh's table"
done

# folder-name path: every C++ file under path is in layer[folder-name].
check_folder() {
  local from="$1" path="$2" rel line file number target
  [ -d "$path" ] || return 0
  while IFS= read -r line; do
    file="${line%%:*}"
    rest="${line#*:}"
    number="${rest%%:*}"
    target="$(sed -E 's/^.*#[[:space:]]*include[[:space:]]+"([^/"]+)\/.*$/\1/' <<< "$rest")"
    rel="${file#"$root"/}"
    [ "$target" = tandem ] && continue
    [ "$target" = "$from" ] && continue
    if [ -z "${layer[$target]:-}" ]; then
      complain "$rel:$number includes \"$target/...\", a folder with no layer"
    elif [ "${layer[$target]}" -gt "${layer[$from]}" ]; then
      complain "$rel:$number: $from (layer ${layer[$from]}) includes $target (layer ${layer[$target]}), a higher layer"
    elif [ "${layer[$target]}" -eq "${layer[$from]}" ]; then
      complain "$rel:$number: $from includes $target, another folder of its layer (${layer[$from]})"
    fi
  done < <(grep -rnE '^[[:space:]]*#[[:space:]]*include[[:space:]]+"[^/"]+/' \
    --include='*.h' --include='*.cpp' "$path" || true)
}

for dir in "$root"/src/*/; do
  name="$(basename "$dir")"
  [ -n "${layer[$name]:-}" ] && check_folder "$name" "${dir%/}"
done
check_folder python "$root/python/src"

if [ "$bad" -ne 0 ]; then
  echo "include_direction: FAILED (see the layer table at the top of tests/repo/include_direction.sh)"
  exit 1
fi
echo "include_direction: every include in src/ and python/src points down"
