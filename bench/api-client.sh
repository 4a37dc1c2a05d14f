#!/usr/bin/env bash
# The API client's CPU per request (bench/api-client.ts) against a real kube-apiserver: a throw-away
# control plane on loopback (etcd and kube-apiserver of the upstream kit, certificates of the run's
# own: scripts/conformance/control-plane.sh and pki.sh, as bench/cluster-density.sh), the node's
# client certificate for the calls, the admin's for the set-up and the watch's writes. No kubelet,
# no containerd. Everything is stopped and removed on exit.
#
# Usage: UPSTREAM_BIN=DIR bash bench/api-client.sh [--no-build] [-- NODE_ARGS...]
#   (NODE_ARGS for node itself, e.g. --cpu-prof --cpu-prof-dir=/tmp/prof)
# Knobs: BENCH_API_ROUNDS, BENCH_API_REQUESTS, BENCH_API_CONCURRENCY, BENCH_API_PODS (bench/api-client.ts).
set -euo pipefail

REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$REPO_ROOT"
# shellcheck source=scripts/conformance/pki.sh
source scripts/conformance/pki.sh
# shellcheck source=scripts/conformance/control-plane.sh
source scripts/conformance/control-plane.sh

SERVICE_CIDR=10.0.0.0/24
SERVICE_CLUSTER_IP=10.0.0.1
START_TIMEOUT_S=120
STOP_TIMEOUT_S=20
NODE_NAME=bench-node

log() { echo "api-client-bench: $*" >&2; }
die() {
  log "error: $*"
  exit 1
}

cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  set +e
  control_plane_stop
  [[ -n ${WORK:-} ]] && rm -rf --one-file-system "$WORK"
  exit "$rc"
}

main() {
  local build=true
  while (($#)); do
    case $1 in
      --no-build) build=false ;;
      --) shift && break ;;
      *) die "unknown argument $1 (usage in the head of $0)" ;;
    esac
    shift
  done
  [[ -x ${UPSTREAM_BIN:-}/kube-apiserver ]] || die "set UPSTREAM_BIN to the upstream kit's bin folder (kube-apiserver)"
  command -v etcd >/dev/null || die "etcd is not on PATH: install Debian's etcd-server"
  if $build; then npm run --silent build; fi
  [[ -f dist/bench/api-client.js ]] || die "dist/ is not built: run without --no-build"
  WORK=$(mktemp -d /tmp/tsk-apibench.XXXXXX)
  PKI=$WORK/pki
  trap cleanup EXIT
  trap 'exit 130' INT TERM
  control_plane_start --no-controllers
  pki_node "$PKI" "$NODE_NAME" "$API_URL"
  log "load average at the start: $(cut -d' ' -f1-3 /proc/loadavg)"
  BENCH_API_NODE=$NODE_NAME BENCH_API_ADMIN_KUBECONFIG=$PKI/admin.kubeconfig \
    BENCH_API_NODE_KUBECONFIG=$PKI/kubelet-$NODE_NAME.kubeconfig node "$@" dist/bench/api-client.js
  log "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
}

main "$@"
