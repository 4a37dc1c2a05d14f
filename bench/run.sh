#!/usr/bin/env bash
# The benchmarks (see docs/benchmarks.md): builds, brings the private containerd up, runs relist,
# status, websocket and density, prints a table and one JSON line per figure. Leaves the runtime stack as it
# found it: if this script started containerd, it stops it again ('down').
#
# Usage: bench/run.sh [--quick] [--no-build]     (npm run bench [-- --quick])
#   --quick     short windows and fewer repetitions: checks the benches run, figures are rougher
#   --no-build  use dist/ as it is (just built, or a tree whose tests do not type-check yet)
# Env: BENCH_OUT (where the JSON lines go; default a temporary file), and each bench's own knobs
#      (BENCH_ROUNDS, BENCH_STEADY_S, BENCH_DENSITY_SIZES, BENCH_RELIST_SIZES, …: see the head of
#      bench/*.ts). BENCH_PEER_KUBELET=<binary> measures a second kubelet (another checkout's
#      bin/tskubelet, or an upstream kubelet) side by side in the density bench.
# Needs root (containerd, mounts, network namespaces), as scripts/runtime-stack.sh does.
# The cluster-mode bench (a real kube-apiserver) runs apart: npm run bench:cluster (bench/cluster-density.sh).
set -euo pipefail
cd "$(dirname "$0")/.."

no_build=0
for arg in "$@"; do
  case $arg in
    --quick) export BENCH_QUICK=1 ;;
    --no-build) no_build=1 ;;
    *)
      sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2
      exit 2
      ;;
  esac
done

log() { echo "bench: $*" >&2; }
started_at=$SECONDS
out=${BENCH_OUT:-$(mktemp -t tskubelet-bench-XXXXXX.jsonl)}
: >"$out"

if ((no_build)); then
  [[ -f dist/kubelet/main.js && -f dist/bench/density.js ]] || { log "dist/ is not built: run without --no-build"; exit 1; }
else
  log "building"
  npm run --silent build
fi

started_stack=0
cleanup() {
  if ((started_stack)); then
    log "stopping the runtime stack this run started"
    bash scripts/runtime-stack.sh down || log "runtime-stack.sh down failed"
  fi
}
trap cleanup EXIT
if ! bash scripts/runtime-stack.sh status >/dev/null 2>&1; then
  started_stack=1
fi
bash scripts/runtime-stack.sh images
bash scripts/runtime-stack.sh up >/dev/null
eval "$(bash scripts/runtime-stack.sh env)"
export CONTAINER_RUNTIME_ENDPOINT

# The machine, for the figures' context (docs/benchmarks.md states it with them).
machine() {
  echo "machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.1f GiB", $2 / 1048576}' /proc/meminfo), kernel $(uname -r)"
  echo "runtime: $(containerd --version 2>/dev/null | awk '{print $1, $3}'), node $(node --version)"
  echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
}
machine >&2

failed=()
for bench in relist status websocket-frame stats node-page density; do
  log "running $bench"
  if ! node "dist/bench/$bench.js" >>"$out"; then
    failed+=("$bench")
    log "$bench failed"
  fi
done

echo
machine
echo "ran in $((SECONDS - started_at)) s${BENCH_QUICK:+ (quick mode)}; JSON lines in $out"
echo
node dist/bench/table.js "$out"
echo
cat "$out"

if ((${#failed[@]})); then
  log "failed: ${failed[*]}"
  exit 1
fi
