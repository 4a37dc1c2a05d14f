#!/usr/bin/env bash
# Kubernetes' own node conformance tests against tskubelet: a throw-away control plane on
# loopback (etcd, kube-apiserver, kube-controller-manager, kube-scheduler, certificates made here),
# the private containerd of scripts/runtime-stack.sh with the e2e images imported, tskubelet joined
# as the only node, and the `[NodeConformance]` specs of upstream's e2e.test run by ginkgo.
# Manual and local only: CI does not run it (the upstream binaries and images are built outside the
# repository from Kubernetes' v1.28.7 source, which CI cannot fetch).
#
# Usage (as root): UPSTREAM_BIN=DIR UPSTREAM_IMAGES=DIR [PEER_KUBELET=FILE] npm run conformance
#   UPSTREAM_BIN     kube-apiserver, kube-controller-manager, kube-scheduler, e2e.test, ginkgo
#   UPSTREAM_IMAGES  image archives (*.tar) the specs use, imported into containerd's k8s.io namespace
#   PEER_KUBELET     an upstream kubelet: the same specs again with it as the node, on the same
#                    control plane, then the specs that fail on one side only
# Optional: CONFORMANCE_OUT (the output folder, default /tmp/tskubelet-conformance-<time>),
# CONFORMANCE_FOCUS, CONFORMANCE_SKIP (ginkgo regexps), CONFORMANCE_PROCS (4),
# CONFORMANCE_TIMEOUT_MIN (per side, 60), CONFORMANCE_CGROUP_ROOT (/tsk-conformance), and the
# TSKUBELET_STACK_* variables of scripts/runtime-stack.sh for a private containerd.
#
# The output folder gets, per side, junit.xml, summary.txt, ginkgo.log and the kubelet's log; with a
# peer, diff.txt. Everything started here is stopped on exit, whatever the exit.
set -euo pipefail

REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$REPO_ROOT"
# shellcheck source=scripts/conformance/pki.sh
source scripts/conformance/pki.sh
# shellcheck source=scripts/conformance/control-plane.sh
source scripts/conformance/control-plane.sh

FOCUS=${CONFORMANCE_FOCUS:-'\[NodeConformance\]'}
SKIP=${CONFORMANCE_SKIP:-'\[Serial\]|\[Slow\]|\[Disruptive\]|\[Flaky\]|\[Feature:'}
PROCS=${CONFORMANCE_PROCS:-4}
TIMEOUT_MIN=${CONFORMANCE_TIMEOUT_MIN:-60}
CGROUP_ROOT=${CONFORMANCE_CGROUP_ROOT:-/tsk-conformance}
OUT=${CONFORMANCE_OUT:-/tmp/tskubelet-conformance-$(date -u +%Y%m%dT%H%M%SZ)}
SERVICE_CIDR=10.0.0.0/24
SERVICE_CLUSTER_IP=10.0.0.1
START_TIMEOUT_S=120
NODE_READY_TIMEOUT_S=180
DRAIN_TIMEOUT_S=300
STOP_TIMEOUT_S=20

log() { echo "conformance: $*" >&2; }
die() {
  log "error: $*"
  exit 1
}

# ---------------------------------------------------------------------------------------------------
# checks and installs

check_inputs() {
  [[ $(id -u) == 0 ]] || die "needs root (containerd, mounts, cgroups)"
  [[ -n ${UPSTREAM_BIN:-} && -n ${UPSTREAM_IMAGES:-} ]] || die "set UPSTREAM_BIN and UPSTREAM_IMAGES (see the header of $0)"
  local b
  for b in kube-apiserver kube-controller-manager kube-scheduler e2e.test ginkgo; do
    [[ -x $UPSTREAM_BIN/$b ]] || die "$UPSTREAM_BIN/$b is missing or not executable"
  done
  compgen -G "$UPSTREAM_IMAGES/*.tar" >/dev/null || die "no image archives (*.tar) in $UPSTREAM_IMAGES"
  if [[ -n ${PEER_KUBELET:-} ]]; then [[ -x $PEER_KUBELET ]] || die "PEER_KUBELET $PEER_KUBELET is not executable"; fi
  [[ $PROCS =~ ^[1-9][0-9]*$ ]] || die "CONFORMANCE_PROCS must be a positive number, got $PROCS"
  [[ $TIMEOUT_MIN =~ ^[1-9][0-9]*$ ]] || die "CONFORMANCE_TIMEOUT_MIN must be a positive number, got $TIMEOUT_MIN"
  [[ $CGROUP_ROOT =~ ^/[A-Za-z0-9._-]+$ ]] || die "CONFORMANCE_CGROUP_ROOT must be one level below the root, got $CGROUP_ROOT"
  # Reports and logs of upstream's suite are never committed (the kit's rules).
  mkdir -p "$OUT"
  OUT=$(cd "$OUT" && pwd)
  if git -C "$OUT" rev-parse --show-toplevel >/dev/null 2>&1; then die "CONFORMANCE_OUT $OUT is inside a git repository"; fi
}

# Debian's etcd-server, once; its service must not start (a policy-rc.d answering 101 says so).
install_etcd() {
  command -v etcd >/dev/null && return 0
  log "installing etcd-server"
  local policy=/usr/sbin/policy-rc.d created_policy=false out
  if [[ ! -e $policy ]]; then
    printf '#!/bin/sh\nexit 101\n' >"$policy" && chmod 0755 "$policy"
    created_policy=true
  fi
  out=$(mktemp)
  if ! { timeout 300 apt-get update -qq && DEBIAN_FRONTEND=noninteractive timeout 600 apt-get install -y -qq --no-install-recommends etcd-server; } >"$out" 2>&1; then
    cat "$out" >&2
    rm -f "$out"
    $created_policy && rm -f "$policy"
    die "apt-get install etcd-server failed"
  fi
  rm -f "$out"
  $created_policy && rm -f "$policy"
  command -v etcd >/dev/null || die "etcd-server is installed but etcd is not on PATH"
}

# ---------------------------------------------------------------------------------------------------
# the runtime

STACK_WAS_UP=false

# runtime_up: in the mount namespace NS when one is set (the peer's, see scripts/conformance/node.sh).
runtime_up() {
  "${NS[@]}" bash "$REPO_ROOT/scripts/runtime-stack.sh" up >/dev/null
  set -a
  eval "$(bash scripts/runtime-stack.sh env)"
  set +a
  local sock=${CONTAINER_RUNTIME_ENDPOINT#unix://} have tar
  have=$(timeout 60 ctr --address "$sock" -n k8s.io images ls -q)
  for tar in "$UPSTREAM_IMAGES"/*.tar; do
    # An archive's image names are in its index (the kit's archives are OCI layouts).
    local names
    names=$(tar -xOf "$tar" index.json 2>/dev/null | jq -r '.manifests[].annotations["io.containerd.image.name"] // empty' 2>/dev/null || true)
    if [[ -n $names ]] && ! grep -qvxF -f <(echo "$have") <<<"$names"; then continue; fi
    log "importing $(basename "$tar")"
    timeout 300 ctr --address "$sock" -n k8s.io images import "$tar" >/dev/null || die "ctr images import $tar failed"
  done
}

# Removes every pod of the private stack (CRI StopPodSandbox/RemovePodSandbox, then the rest) and
# stops its containerd, in the mount namespace it runs in.
runtime_down() {
  "${NS[@]}" bash "$REPO_ROOT/scripts/runtime-stack.sh" down
}

# ---------------------------------------------------------------------------------------------------
# the node under test

source scripts/conformance/node.sh

# ---------------------------------------------------------------------------------------------------

cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  set +e
  stop ginkgo
  stop kubelet
  control_plane_stop
  if [[ -n ${WORK:-} ]]; then
    runtime_down >/dev/null 2>&1
    peer_ns_remove
    # Leave the stack as we found it: a developer's running containerd stays up.
    if $STACK_WAS_UP; then runtime_up >/dev/null 2>&1; fi
    node_unmount_all "$WORK"
    node --import tsx scripts/conformance/cgroup-root.ts destroy "$CGROUP_ROOT" || log "could not remove the cgroup root $CGROUP_ROOT"
    if ((rc == 0)) || [[ -z ${CONFORMANCE_KEEP_WORK:-} ]]; then rm -rf --one-file-system "$WORK"; else log "kept $WORK"; fi
  fi
  exit "$rc"
}

main() {
  check_inputs
  install_etcd
  bash scripts/runtime-stack.sh install
  npm run --silent build
  bash scripts/runtime-stack.sh status >/dev/null 2>&1 && STACK_WAS_UP=true

  WORK=$(mktemp -d /tmp/tsk-conformance.XXXXXX)
  PKI=$WORK/pki
  trap cleanup EXIT
  trap 'exit 130' INT TERM
  local began=$SECONDS

  control_plane_start
  runtime_up
  node --import tsx scripts/conformance/cgroup-root.ts create "$CGROUP_ROOT"

  run_side tskubelet
  if [[ -n ${PEER_KUBELET:-} ]]; then
    runtime_down
    peer_ns_make
    runtime_up
    run_side upstream
    runtime_down
    peer_ns_remove
    node --import tsx scripts/conformance/junit-summary.ts diff \
      tskubelet "$OUT/tskubelet/junit.xml" upstream "$OUT/upstream/junit.xml" | tee "$OUT/diff.txt"
  fi
  log "done in $(((SECONDS - began) / 60)) min $(((SECONDS - began) % 60)) s; results in $OUT"
}

main "$@"
