#!/usr/bin/env bash
# Builds the release executables that bench/h200.sh runs on the GPU machine and leaves only
# those in .carry/ (under the 64 MiB a carried folder may hold), under stable names: nacre,
# corpus, cuda_disk_cache, cuda_fault, devices, device_semantics, queries (nacre-datafusion's
# tests), each compressed with xz (nacre with DataFusion is over 100 MiB); bench/h200.sh
# unpacks them. Run from the project root
# on the build machine; then run `bash bench/h200.sh OUT` on the GPU machine with .carry
# carried along.
set -euo pipefail
cd "$(dirname "$0")/.."
../shared/tools/carry-binaries.sh .carry >/dev/null
cd .carry
keep="nacre corpus cuda_disk_cache cuda_fault devices device_semantics queries"
for name in $keep; do
    [ "$name" = nacre ] && continue
    found=$(ls -t "$name"-* 2>/dev/null | head -n 1 || true)
    [ -n "$found" ] || { echo "no $name test executable was built" >&2; exit 1; }
    mv "$found" "$name"
done
for f in *; do
    case " $keep " in *" $f "*) ;; *) rm -f "$f" ;; esac
done
# Symbols are not needed there, and the carried folder must stay under its limit.
strip -s $keep
xz -T2 -6 $keep
du -sh . && ls
