#!/usr/bin/env bash
# Runs every malformed input of malformed/cases.txt through the mpsim command and checks that it
# exits with code 2 and prints exactly one line: "mpsim: error: FILE:LINE:COL: ..." with the expected text.
# A case whose location starts with "--" expects the error to name that flag instead of the file
# ("mpsim: error: --set plan.tensor=0: ..."); its extra arguments (the optional 5th column, split
# like a shell does with quotes) follow the command's own.
# Usage: malformed_inputs.sh MPSIM_BINARY REPO_DIR
set -u
mpsim=$1
repo=$2
here="$repo/tests/integration/malformed"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Generated inputs: binary garbage (fixed bytes, so runs are repeatable) and a 100 MB file.
printf 'a:\x00\x01\xfe\xff\x7f garbage \x02\x03\n' > "$work/binary-garbage.yaml"
head -c 100000000 /dev/zero | tr '\0' 'x' > "$work/huge.yaml"

passed=0
failed=0
while IFS='|' read -r file command location expected extra_text; do
  file=$(echo "$file" | xargs)
  [[ -z "$file" || "$file" == \#* ]] && continue
  command=$(echo "$command" | xargs)
  location=$(echo "$location" | sed -e 's/^ *//' -e 's/ *$//')
  expected=$(echo "$expected" | sed -e 's/^ *//' -e 's/ *$//')
  extra=()
  if [[ -n "${extra_text// /}" ]]; then
    mapfile -d '' extra < <(printf '%s' "$extra_text" | xargs printf '%s\0')
  fi
  path="$here/$file"
  [[ -f "$work/$file" ]] && path="$work/$file"
  [[ ! -f "$path" && -f "$repo/$file" ]] && path="$repo/$file"  # a shipped input, e.g. configs/plans/...
  case "$command" in
    topo) args=(topo check "$path") ;;
    model) args=(model show "$path") ;;
    plan) args=(plan check "$path" --topology "$repo/topologies/4x-p4d.yaml" --model "$repo/configs/models/gpt3-13b.yaml") ;;
    simulate) args=(simulate --topology "$repo/topologies/4x-p4d.yaml" --model "$repo/configs/models/gpt3-13b.yaml" --plan "$path") ;;
    catalog) args=(plan --catalog "$path" --model "$repo/configs/models/gpt3-1.3b.yaml" --tokens 1B) ;;
    *) echo "bad command '$command' in cases.txt"; exit 2 ;;
  esac
  args+=("${extra[@]}")
  stderr=$(timeout 20 "$mpsim" "${args[@]}" 2>&1 >/dev/null)
  rc=$?
  lines=$(printf '%s\n' "$stderr" | grep -c '')
  if [[ "$location" == --* ]]; then
    prefix="mpsim: error: $location: "
  else
    prefix="mpsim: error: $path:$location"
  fi
  problem=""
  if [[ $rc -ne 2 ]]; then problem="exit code $rc, expected 2"
  elif [[ $lines -ne 1 ]]; then problem="$lines lines on stderr, expected 1"
  elif [[ "$stderr" != "$prefix"* ]]; then problem="does not start with '$prefix'"
  elif [[ "$stderr" != *"$expected"* ]]; then problem="does not contain '$expected'"
  fi
  if [[ -n "$problem" ]]; then
    echo "FAIL $file: $problem"
    echo "     got: $stderr"
    failed=$((failed + 1))
  else
    passed=$((passed + 1))
  fi
done < "$here/cases.txt"
echo "malformed inputs: $passed passed, $failed failed"
[[ $failed -eq 0 && $passed -ge 30 ]]
