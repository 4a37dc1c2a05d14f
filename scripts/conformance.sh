#!/usr/bin/env bash
# Kubernetes' own node conformance tests against tskubelet (issue 34): a throw-away control plane on
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

free_port() {
  node -e 'const s = require("net").createServer().listen(0, "127.0.0.1", () => { console.log(s.address().port); s.close(); });'
}

# ---------------------------------------------------------------------------------------------------
# processes: each one started here is recorded and stopped on exit

declare -A PIDS=()

# start NAME LOGFILE COMMAND...: in the background, its output in LOGFILE.
start() {
  local name=$1 logfile=$2
  shift 2
  "$@" </dev/null >>"$logfile" 2>&1 &
  PIDS[$name]=$!
  log "started $name (pid ${PIDS[$name]}, log $logfile)"
}

# stop NAME: SIGTERM, then SIGKILL after STOP_TIMEOUT_S.
stop() {
  local name=$1 pid=${PIDS[$1]:-}
  [[ -n $pid ]] || return 0
  unset "PIDS[$name]"
  kill -0 "$pid" 2>/dev/null || return 0
  kill -TERM "$pid" 2>/dev/null || true
  local deadline=$((SECONDS + STOP_TIMEOUT_S))
  while kill -0 "$pid" 2>/dev/null && ((SECONDS < deadline)); do sleep 0.2; done
  if kill -0 "$pid" 2>/dev/null; then
    log "$name (pid $pid) ignored SIGTERM for ${STOP_TIMEOUT_S}s: SIGKILL"
    kill -KILL "$pid" 2>/dev/null || true
  fi
  wait "$pid" 2>/dev/null || true
}

alive() { kill -0 "${PIDS[$1]:-0}" 2>/dev/null; }

# wait_until WHAT TIMEOUT_S PROCESS COMMAND...: polls COMMAND; fails early when PROCESS exits.
wait_until() {
  local what=$1 timeout_s=$2 proc=$3
  shift 3
  local deadline=$((SECONDS + timeout_s))
  until "$@" >/dev/null 2>&1; do
    if [[ -n $proc ]] && ! alive "$proc"; then die "$proc exited while waiting for $what (see its log in $WORK)"; fi
    ((SECONDS < deadline)) || die "$what: not within ${timeout_s}s"
    sleep 1
  done
}

# ---------------------------------------------------------------------------------------------------
# the control plane

# api PATH [curl args...]: the API server as the admin.
api() {
  local p=$1
  shift
  curl -sS --fail --max-time 15 --cacert "$PKI/ca.crt" --cert "$PKI/admin.crt" --key "$PKI/admin.key" "$@" "$API_URL$p"
}

start_control_plane() {
  local etcd_port etcd_peer_port api_port
  etcd_port=$(free_port)
  etcd_peer_port=$(free_port)
  api_port=$(free_port)
  API_URL=https://127.0.0.1:$api_port
  pki_make "$PKI" "$API_URL"

  start etcd "$WORK/etcd.log" etcd --name conformance --data-dir "$WORK/etcd" \
    --listen-client-urls "http://127.0.0.1:$etcd_port" --advertise-client-urls "http://127.0.0.1:$etcd_port" \
    --listen-peer-urls "http://127.0.0.1:$etcd_peer_port" --initial-advertise-peer-urls "http://127.0.0.1:$etcd_peer_port" \
    --initial-cluster "conformance=http://127.0.0.1:$etcd_peer_port" --log-level warn
  wait_until "etcd to answer" "$START_TIMEOUT_S" etcd curl -sf --max-time 2 "http://127.0.0.1:$etcd_port/health"

  # The kubelets serve with self-signed certificates of their own, so the API server does not
  # verify them (no --kubelet-certificate-authority); the node's name does not resolve, so it
  # dials the node's InternalIP.
  start kube-apiserver "$WORK/kube-apiserver.log" "$UPSTREAM_BIN/kube-apiserver" \
    --etcd-servers="http://127.0.0.1:$etcd_port" --bind-address=127.0.0.1 --advertise-address=127.0.0.1 \
    --secure-port="$api_port" --tls-cert-file="$PKI/apiserver.crt" --tls-private-key-file="$PKI/apiserver.key" \
    --client-ca-file="$PKI/ca.crt" --service-account-key-file="$PKI/sa.pub" \
    --service-account-signing-key-file="$PKI/sa.key" \
    --service-account-issuer=https://kubernetes.default.svc.cluster.local \
    --authorization-mode=Node,RBAC --enable-admission-plugins=NodeRestriction --allow-privileged=true \
    --service-cluster-ip-range="$SERVICE_CIDR" --endpoint-reconciler-type=none \
    --kubelet-client-certificate="$PKI/apiserver-kubelet-client.crt" \
    --kubelet-client-key="$PKI/apiserver-kubelet-client.key" \
    --kubelet-preferred-address-types=InternalIP,ExternalIP,Hostname --profiling=false
  wait_until "kube-apiserver to be ready" "$START_TIMEOUT_S" kube-apiserver api /readyz

  start kube-controller-manager "$WORK/kube-controller-manager.log" "$UPSTREAM_BIN/kube-controller-manager" \
    --kubeconfig="$PKI/controller-manager.kubeconfig" --authentication-kubeconfig="$PKI/controller-manager.kubeconfig" \
    --authorization-kubeconfig="$PKI/controller-manager.kubeconfig" --bind-address=127.0.0.1 --secure-port=0 \
    --leader-elect=false --use-service-account-credentials=true --root-ca-file="$PKI/ca.crt" \
    --service-account-private-key-file="$PKI/sa.key" --service-cluster-ip-range="$SERVICE_CIDR" \
    --controllers='*,-nodeipam,-cloud-node-lifecycle' --profiling=false
  start kube-scheduler "$WORK/kube-scheduler.log" "$UPSTREAM_BIN/kube-scheduler" \
    --kubeconfig="$PKI/scheduler.kubeconfig" --authentication-kubeconfig="$PKI/scheduler.kubeconfig" \
    --authorization-kubeconfig="$PKI/scheduler.kubeconfig" --bind-address=127.0.0.1 --secure-port=0 \
    --leader-elect=false --profiling=false
  # Every namespace needs its default service account before e2e creates pods in it.
  wait_until "the controller manager's default service account" "$START_TIMEOUT_S" kube-controller-manager \
    api /api/v1/namespaces/default/serviceaccounts/default
  alive kube-scheduler || die "kube-scheduler exited (log $WORK/kube-scheduler.log)"
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
  stop kube-scheduler
  stop kube-controller-manager
  stop kube-apiserver
  stop etcd
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

  start_control_plane
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
