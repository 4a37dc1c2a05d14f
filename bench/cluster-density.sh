#!/usr/bin/env bash
# The cluster-mode density bench (bench/cluster-density.ts): pods created through a real
# kube-apiserver, tskubelet as the node, and with BENCH_PEER_KUBELET the upstream kubelet (or another
# tskubelet) as the node in alternating rounds (A B, B A, …). This script brings up what the bench needs and takes it down
# again, whatever the exit: a throw-away control plane on loopback (etcd and kube-apiserver of the
# upstream kit, certificates made here, an audit log of the node's requests; the start-up is
# scripts/conformance.sh's), the private containerd of scripts/runtime-stack.sh in a mount namespace
# of its own (scripts/conformance/node.sh: an upstream v1.28 kubelet garbage-collects /var/log/pods),
# a cgroup root of the run's own; then it runs the bench, prints the tables and writes the results.
# Manual and local only, like the conformance run: no test or CI step depends on the kit.
#
# Usage (as root): UPSTREAM_BIN=DIR [BENCH_PEER_KUBELET=FILE] bash bench/cluster-density.sh [--no-build]
#                  (npm run bench:cluster [-- --no-build])
#   UPSTREAM_BIN        the kit's bin folder (kube-apiserver); etcd from Debian's etcd-server on PATH
#   BENCH_KUBECONFIG    instead of UPSTREAM_BIN: an existing cluster. The kubelets join it with this
#                       kubeconfig as node BENCH_NODE_NAME (default: this host's name); the bench
#                       creates pods with BENCH_ADMIN_KUBECONFIG (default the same). Its API server's
#                       audit log is out of reach, so the per-pod traffic is measured only when
#                       BENCH_AUDIT_LOG names it (read as it grows), and the metrics' figures include
#                       every other client's.
#   BENCH_PEER_KUBELET  an upstream kubelet (e.g. /opt/upstream-1.28.7/bin/kubelet), in alternating rounds;
#                       or a tskubelet (e.g. bin/tskubelet with BENCH_PEER_NODE_ARGS): an A/B of our own
# The bench's own knobs (BENCH_PODS, BENCH_ROUNDS, BENCH_STEADY_S, …) are listed at the head of
# bench/cluster-density.ts. BENCH_OUT: the output folder (default /tmp/tskubelet-cluster-bench-<time>),
# which gets results.json, figures.jsonl, traffic.md and, on failure or with BENCH_KEEP_LOGS=1, the
# kubelets' logs (kubelet-<side>-run-<round>-<pods>.log) and the API server's audit log.
set -euo pipefail

REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$REPO_ROOT"
# shellcheck source=scripts/conformance/pki.sh
source scripts/conformance/pki.sh
# shellcheck source=scripts/conformance/control-plane.sh
source scripts/conformance/control-plane.sh
# shellcheck source=scripts/conformance/node.sh
source scripts/conformance/node.sh

SERVICE_CIDR=10.0.0.0/24
SERVICE_CLUSTER_IP=10.0.0.1
START_TIMEOUT_S=120
STOP_TIMEOUT_S=20
BENCH_STOP_TIMEOUT_S=90
NODE_NAME=${BENCH_NODE_NAME:-bench-node}
CGROUP_ROOT=/tsk-cluster-bench-$$
OUT=${BENCH_OUT:-/tmp/tskubelet-cluster-bench-$(date -u +%Y%m%dT%H%M%SZ)}
OWN_CONTROL_PLANE=false

log() { echo "cluster-bench: $*" >&2; }
die() {
  log "error: $*"
  exit 1
}

check_inputs() {
  [[ $(id -u) == 0 ]] || die "needs root (containerd, mounts, cgroups), as scripts/runtime-stack.sh does"
  if [[ -n ${BENCH_KUBECONFIG:-} ]]; then
    [[ -r $BENCH_KUBECONFIG ]] || die "BENCH_KUBECONFIG $BENCH_KUBECONFIG is not readable"
    [[ -z ${BENCH_ADMIN_KUBECONFIG:-} || -r $BENCH_ADMIN_KUBECONFIG ]] || die "BENCH_ADMIN_KUBECONFIG $BENCH_ADMIN_KUBECONFIG is not readable"
  elif [[ -n ${UPSTREAM_BIN:-} ]]; then
    [[ -x $UPSTREAM_BIN/kube-apiserver ]] || die "$UPSTREAM_BIN/kube-apiserver is missing or not executable"
    command -v etcd >/dev/null || die "etcd is not on PATH: install Debian's etcd-server (npm run conformance does it once)"
    OWN_CONTROL_PLANE=true
  else
    die "needs a kube-apiserver: set UPSTREAM_BIN to the upstream kit's bin folder (../shared/upstream/README.md; with etcd on PATH), or BENCH_KUBECONFIG to an existing cluster's kubeconfig"
  fi
  if [[ -n ${BENCH_PEER_KUBELET:-} ]]; then [[ -x $BENCH_PEER_KUBELET ]] || die "BENCH_PEER_KUBELET $BENCH_PEER_KUBELET is not executable"; fi
  mkdir -p "$OUT"
  OUT=$(cd "$OUT" && pwd)
}

# The node's requests in full (they are what the bench counts), everyone else's in brief (to see
# whether another client wrote during a window).
write_audit_policy() {
  cat >"$1" <<'POLICY'
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: RequestResponse
  userGroups: ["system:nodes"]
- level: Metadata
POLICY
}

# An existing cluster: the CA the kubelets trust for the API server's proxied calls is the one in
# the kubeconfig (certificate-authority or its -data).
existing_cluster_pki() {
  mkdir -p "$PKI"
  local ca data
  ca=$(kubectl --kubeconfig "$BENCH_KUBECONFIG" config view --raw --minify -o jsonpath='{.clusters[0].cluster.certificate-authority}')
  data=$(kubectl --kubeconfig "$BENCH_KUBECONFIG" config view --raw --minify -o jsonpath='{.clusters[0].cluster.certificate-authority-data}')
  if [[ -n $data ]]; then
    base64 -d <<<"$data" >"$PKI/ca.crt"
  elif [[ -n $ca ]]; then
    cp "$ca" "$PKI/ca.crt"
  else
    die "BENCH_KUBECONFIG names no certificate authority"
  fi
}

# runtime_up/down in the mount namespace NS (node.sh's peer_ns_make), where both kubelets run too:
# one containerd for both sides, and the kubelets' mounts are where containerd sees them.
runtime_up() {
  "${NS[@]}" bash "$REPO_ROOT/scripts/runtime-stack.sh" up >/dev/null
  set -a
  eval "$(bash scripts/runtime-stack.sh env)"
  set +a
}
runtime_down() { "${NS[@]}" bash "$REPO_ROOT/scripts/runtime-stack.sh" down; }

STACK_WAS_UP=false
BENCH_PID=

# Whatever the bench left running: it records its kubelet's pid, in case it was killed itself.
stop_bench() {
  if [[ -n $BENCH_PID ]] && kill -0 "$BENCH_PID" 2>/dev/null; then
    kill -TERM "$BENCH_PID" 2>/dev/null || true
    local deadline=$((SECONDS + BENCH_STOP_TIMEOUT_S))
    while kill -0 "$BENCH_PID" 2>/dev/null && ((SECONDS < deadline)); do sleep 0.5; done
    kill -KILL "$BENCH_PID" 2>/dev/null || true
  fi
  local pidfile=$WORK/kubelet.pid pid
  [[ -f $pidfile ]] || return 0
  pid=$(cat "$pidfile")
  # Only the kubelet the bench started: its command line names the run's folder.
  if [[ -n $pid ]] && tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF "$WORK/"; then
    log "stopping the kubelet the bench left (pid $pid)"
    kill -KILL "$pid" 2>/dev/null || true
  fi
}

cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  set +e
  if [[ -n ${WORK:-} ]]; then
    stop_bench
    control_plane_stop
    runtime_down >/dev/null 2>&1
    peer_ns_remove
    # Leave the stack as we found it: a developer's running containerd stays up.
    if $STACK_WAS_UP; then
      bash scripts/runtime-stack.sh up >/dev/null 2>&1 || log "could not bring the runtime stack up again"
    fi
    node --import tsx scripts/conformance/cgroup-root.ts destroy "$CGROUP_ROOT" || log "could not remove the cgroup root $CGROUP_ROOT"
    node_unmount_all "$WORK"
    if ((rc != 0)) || [[ -n ${BENCH_KEEP_LOGS:-} ]]; then keep_logs; fi
    if ((rc == 0)) || [[ -z ${BENCH_KEEP_WORK:-} ]]; then rm -rf --one-file-system "$WORK"; else log "kept $WORK"; fi
  fi
  exit "$rc"
}

# Each run's kubelet log as OUT/kubelet-<side>-run-<round>-<pods>.log, and the audit log.
keep_logs() {
  local f run
  for f in "$WORK"/*/run-*/kubelet-*.log; do
    [[ -f $f ]] || continue
    run=$(basename "$(dirname "$f")")
    cp "$f" "$OUT/$(basename "$f" .log)-$run.log"
  done
  if [[ -f $WORK/audit.log ]]; then cp "$WORK/audit.log" "$OUT/audit.log"; fi
}

machine() {
  echo "machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.1f GiB", $2 / 1048576}' /proc/meminfo), kernel $(uname -r)"
  echo "runtime: $(containerd --version 2>/dev/null | awk '{print $1, $3}'), node $(node --version)"
  echo "load average at the start: $(cut -d' ' -f1-3 /proc/loadavg)"
}

main() {
  local build=true arg
  for arg in "$@"; do
    case $arg in
      --no-build) build=false ;;
      *)
        sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2
        exit 2
        ;;
    esac
  done
  check_inputs
  if $build; then
    log "building"
    npm run --silent build
  fi
  [[ -f dist/bench/cluster-density.js ]] || die "dist/ is not built: run without --no-build"
  bash scripts/runtime-stack.sh images >/dev/null
  bash scripts/runtime-stack.sh status >/dev/null 2>&1 && STACK_WAS_UP=true

  WORK=$(mktemp -d /tmp/tsk-cbench.XXXXXX)
  PKI=$WORK/pki
  trap cleanup EXIT
  trap 'exit 130' INT TERM
  machine | tee "$OUT/machine.txt" >&2

  local admin_kubeconfig node_kubeconfig audit_log=
  if $OWN_CONTROL_PLANE; then
    write_audit_policy "$WORK/audit-policy.yaml"
    audit_log=$WORK/audit.log
    # No controllers: the bench binds its pods itself (spec.nodeName) and makes what the controller
    # manager would (the namespace's service account, kube-root-ca.crt). No APIServerIdentity: its
    # lease renewals would be writes of no kubelet's in the windows measured.
    control_plane_start --no-controllers -- --audit-policy-file="$WORK/audit-policy.yaml" \
      --audit-log-path="$audit_log" --audit-log-format=json --feature-gates=APIServerIdentity=false
    pki_node "$PKI" "$NODE_NAME" "$API_URL"
    admin_kubeconfig=$PKI/admin.kubeconfig
    node_kubeconfig=$PKI/kubelet-$NODE_NAME.kubeconfig
  else
    existing_cluster_pki
    admin_kubeconfig=${BENCH_ADMIN_KUBECONFIG:-$BENCH_KUBECONFIG}
    node_kubeconfig=$BENCH_KUBECONFIG
    audit_log=${BENCH_AUDIT_LOG:-}
  fi

  # containerd restarts in the namespace: a stack that was up outside it goes down first.
  if $STACK_WAS_UP; then bash scripts/runtime-stack.sh down >/dev/null; fi
  peer_ns_make
  runtime_up
  node --import tsx scripts/conformance/cgroup-root.ts create "$CGROUP_ROOT"

  # The peer's settings are its kind's: tskubelet prints +tskubelet in its --version.
  local peer_kind=upstream
  if [[ ${BENCH_PEER_KIND:-} == tskubelet ]] ||
    [[ -z ${BENCH_PEER_KIND:-} && -n ${BENCH_PEER_KUBELET:-} && $("$BENCH_PEER_KUBELET" --version 2>&1) == *tskubelet* ]]; then
    peer_kind=tskubelet
  fi
  mkdir -p "$WORK/tskubelet" "$WORK/peer"
  node_side_config "$WORK/tskubelet/config.yaml" tskubelet "$(free_port)" "$(free_port)" "$WORK/tskubelet"
  node_side_config "$WORK/peer/config.yaml" "$peer_kind" "$(free_port)" "$(free_port)" "$WORK/peer"

  log "running the bench (figures in $OUT)"
  BENCH_CLUSTER_WORK=$WORK BENCH_CLUSTER_OUT=$OUT BENCH_CLUSTER_NODE_NAME=$NODE_NAME \
    BENCH_CLUSTER_ADMIN_KUBECONFIG=$admin_kubeconfig BENCH_CLUSTER_NODE_KUBECONFIG=$node_kubeconfig \
    BENCH_CLUSTER_AUDIT_LOG=$audit_log BENCH_CLUSTER_MOUNT_NS=$WORK/mntns/mnt \
    BENCH_CLUSTER_OWN_CONTROL_PLANE=$OWN_CONTROL_PLANE \
    node dist/bench/cluster-density.js >"$OUT/figures.jsonl" &
  BENCH_PID=$!
  wait "$BENCH_PID"
  BENCH_PID=

  echo
  cat "$OUT/machine.txt"
  echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo
  node dist/bench/table.js "$OUT/figures.jsonl"
  echo
  cat "$OUT/traffic.md"
  echo
  log "results in $OUT (results.json, figures.jsonl, traffic.md)"
}

main "$@"
