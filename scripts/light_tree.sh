#!/usr/bin/env bash
# What travels to the GPU machine is capped at 64 MiB a call, the tracked tree included, and
# results/ alone is about 50 MB: `on` leaves results/ out of what travels (out of git's index and
# ignored through .git/info/exclude; the files stay where they are), so a 56 MiB folder of wheels
# (wheels.sh) goes in one call; `off` puts it back. Commit nothing while it is on (a commit would
# delete results/): `on` refuses with changes staged and installs a pre-commit hook that refuses a
# commit while it is on; `status` says which state it is in.
#     bash scripts/light_tree.sh on|off|status
set -euo pipefail
cd "$(dirname "$0")/.."
exclude=$(git rev-parse --git-path info/exclude)
is_on() { grep -qx '/results/' "$exclude" 2>/dev/null; }
case "${1:-}" in
on)
  if is_on; then echo "already on"; exit 0; fi
  git diff --cached --quiet || { echo "changes are staged: commit or unstage them first" >&2; exit 2; }
  mkdir -p "$(dirname "$exclude")"  # a clone without git's templates has no info/ folder
  git rm -r -q --cached results && echo '/results/' >> "$exclude"
  # a commit made while on would delete results/ from the repository: a hook refuses it
  hook=$(git rev-parse --git-path hooks/pre-commit)
  if [ ! -e "$hook" ]; then
    mkdir -p "$(dirname "$hook")"  # a fresh clone may have no hooks folder
    printf '%s\n' '#!/bin/sh' "# scripts/light_tree.sh: no commit while results/ is out of the index" \
      "if grep -qx '/results/' \"$exclude\" 2>/dev/null; then" \
      "  echo 'results/ is out of the index (scripts/light_tree.sh on): run bash scripts/light_tree.sh off first' >&2; exit 1" \
      "fi" > "$hook" && chmod +x "$hook"
  fi
  echo "on: results/ left out of what travels; bash scripts/light_tree.sh off before any commit" ;;
off)
  if ! is_on; then echo "already off"; exit 0; fi
  git reset -q -- results && sed -i '\#^/results/$#d' "$exclude"
  echo "off: results/ tracked again" ;;
status) if is_on; then echo "on (do not commit)"; else echo "off"; fi ;;
*) echo "usage: bash scripts/light_tree.sh on|off|status" >&2; exit 2 ;;
esac
