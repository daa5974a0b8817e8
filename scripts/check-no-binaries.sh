#!/usr/bin/env bash
# Refuses compiled programs and oversized files in git: a build output committed by
# mistake (a 16 MB kvgrpcd once sat at the root) bloats every clone and can run anywhere.
# Executables are told by their magic bytes (ELF, Mach-O, PE); any tracked file over
# MAX_KB is refused too. Only the files git takes as binary are read (text is never a
# program), so the check costs a fraction of a second.
set -euo pipefail
cd "$(dirname "$0")/.."
MAX_KB=${MAX_KB:-2048}
bad=0
while IFS= read -r -d '' f; do
  [ -f "$f" ] || continue
  magic=$(head -c 4 "$f" | od -An -tx1 | tr -d ' \n')
  case "$magic" in
    7f454c46|cffaedfe|cefaedfe|feedfacf|feedface|cafebabe) echo "$f is a compiled program: build outputs do not belong in git"; bad=1; continue;;
    4d5a*) echo "$f is a Windows program: build outputs do not belong in git"; bad=1; continue;;
  esac
  kb=$(( $(wc -c <"$f") / 1024 ))
  if [ "$kb" -gt "$MAX_KB" ]; then echo "$f is $kb KiB (over $MAX_KB): large files do not belong in git"; bad=1; fi
done < <(comm -z -23 <(git ls-files -z | sort -z) <(git grep -z -I -l -e '' | sort -z))
exit $bad
