# shellcheck shell=bash
# The node under test of scripts/conformance.sh (sourced by it): tskubelet, or an upstream kubelet
# (PEER_KUBELET), joined to the run's control plane as its only node, the e2e specs run against it,
# then its pods drained and the kubelet stopped. Both kubelets get the same settings, so that a spec
# failing on one side only points at a difference between the kubelets.

# The settings both kubelets share: node_config FILE PORT HEALTHZ_PORT
node_config() {
  cat >"$1" <<CONFIG
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
port: $2
healthzBindAddress: 127.0.0.1
healthzPort: $3
readOnlyPort: 0
# A cgroup root of the run's own: neither kubelet takes another kubelet's pod cgroups for orphans.
cgroupDriver: cgroupfs
cgroupRoot: $CGROUP_ROOT
cgroupsPerQOS: true
enforceNodeAllocatable: []
failSwapOn: false
clusterDomain: cluster.local
# The API server proxies logs, exec and port-forward with a client certificate of the run's CA.
authentication:
  anonymous:
    enabled: false
  webhook:
    enabled: true
  x509:
    clientCAFile: $PKI/ca.crt
authorization:
  mode: Webhook
# A shared machine's disk or memory must not evict the specs' pods halfway.
evictionHard:
  memory.available: 1Mi
  nodefs.available: 1%
  imagefs.available: 1%
  nodefs.inodesFree: 1%
CONFIG
}

# node_config and what differs between the two kubelets: node_side_config FILE SIDE PORT HEALTHZ_PORT DIR
# (SIDE tskubelet or upstream; DIR the side's folder, for tskubelet's pod logs).
node_side_config() {
  local file=$1 side=$2 dir=$5
  node_config "$file" "$3" "$4"
  if [[ $side == tskubelet ]]; then
    echo "podLogsDir: $dir/pod-logs" >>"$file"
  else
    # It would otherwise add its own iptables chains to the host's.
    echo "makeIPTablesUtilChains: false" >>"$file"
  fi
}

node_ready() {
  api "/api/v1/nodes/$1" | jq -e '[.status.conditions[]? | select(.type == "Ready" and .status == "True")] | length == 1'
}

no_pods_left() {
  api /api/v1/pods | jq -e '.items | length == 0'
}

# run_side SIDE: SIDE is tskubelet or upstream (PEER_KUBELET).
run_side() {
  local side=$1
  local node_name=conformance-$side dir=$WORK/$side out=$OUT/$side port healthz
  mkdir -p "$dir" "$out"
  rm -f "$out/junit.xml"
  pki_node "$PKI" "$node_name" "$API_URL"
  port=$(free_port)
  healthz=$(free_port)
  node_side_config "$dir/config.yaml" "$side" "$port" "$healthz" "$dir"
  local common=(--config="$dir/config.yaml" --kubeconfig="$PKI/kubelet-$node_name.kubeconfig"
    --root-dir="$dir/root" --hostname-override="$node_name"
    --container-runtime-endpoint="$CONTAINER_RUNTIME_ENDPOINT" --v=2)
  if [[ $side == tskubelet ]]; then
    start kubelet "$out/kubelet.log" node bin/tskubelet "${common[@]}"
  else
    start kubelet "$out/kubelet.log" "${NS[@]}" "$PEER_KUBELET" "${common[@]}"
  fi
  wait_until "node $node_name to be Ready" "$NODE_READY_TIMEOUT_S" kubelet node_ready "$node_name"

  log "$side: running ginkgo ($PROCS processes; output in $out/ginkgo.log)"
  local began=$SECONDS rc=0
  # ginkgo stops itself at --timeout; timeout(1) bounds the rest (a hung process, the report).
  # The report's name is relative to --output-dir: without one, ginkgo puts it beside the binary.
  timeout --kill-after=30 $((TIMEOUT_MIN * 60 + 300)) "$UPSTREAM_BIN/ginkgo" run --procs="$PROCS" \
    --timeout="${TIMEOUT_MIN}m" --no-color --focus="$FOCUS" --skip="$SKIP" --output-dir="$out" --junit-report=junit.xml \
    "$UPSTREAM_BIN/e2e.test" -- --kubeconfig="$PKI/admin.kubeconfig" --provider=skeleton \
    </dev/null >"$out/ginkgo.log" 2>&1 || rc=$?
  log "$side: ginkgo exited $rc after $(((SECONDS - began) / 60)) min $(((SECONDS - began) % 60)) s"
  [[ -f $out/junit.xml ]] || die "$side: ginkgo wrote no report (see $out/ginkgo.log)"
  node --import tsx scripts/conformance/junit-summary.ts summary "$side" "$out/junit.xml" | tee "$out/summary.txt"

  # The specs' namespaces go away after them; the node finishes their pods before it stops.
  local deadline=$((SECONDS + DRAIN_TIMEOUT_S))
  until no_pods_left >/dev/null 2>&1; do
    if ((SECONDS >= deadline)); then
      log "$side: pods still in the API after ${DRAIN_TIMEOUT_S}s:"
      api /api/v1/pods | jq -r '.items[] | "  \(.metadata.namespace)/\(.metadata.name) \(.status.phase)"' >&2 || true
      break
    fi
    sleep 2
  done
  stop kubelet
  api "/api/v1/nodes/$node_name" -X DELETE >/dev/null || log "could not delete node $node_name"
  node_unmount_all "$dir"
}

# Unmounts what a stopped kubelet left under DIR (its pods' tmpfs and bind mounts), deepest first.
node_unmount_all() {
  local prefix m
  prefix=$(realpath "$1")/
  awk '{print $5}' /proc/self/mountinfo | while read -r m; do printf '%b\n' "$m"; done |
    { grep -F "$prefix" || true; } | awk '{print length, $0}' | sort -rn | cut -d' ' -f2- |
    while read -r m; do umount -l "$m" 2>/dev/null || log "could not unmount $m"; done
}

# An upstream v1.28 kubelet has no podLogsDir: it writes its pods' logs under /var/log/pods, links
# them from /var/log/containers, and its garbage collector removes every folder and link there that
# belongs to no pod of its own, other kubelets' too. So the peer and the containerd it drives run in
# a mount namespace of their own, where both folders are the run's (NS is the command prefix that
# enters it); the host's folders are left as they were.
NS=()
VAR_LOG_MADE=()
peer_ns_make() {
  local d ns=$WORK/mntns
  for d in /var/log/pods /var/log/containers; do
    [[ -e $d ]] || VAR_LOG_MADE+=("$d")
    mkdir -p "$d" "$WORK/upstream/var-log/${d##*/}"
  done
  # The file that holds the namespace must sit on a private mount.
  mkdir -p "$ns"
  mount --bind "$ns" "$ns"
  mount --make-private "$ns"
  touch "$ns/mnt"
  unshare --mount="$ns/mnt" --propagation private true
  NS=(nsenter --mount="$ns/mnt" --)
  for d in pods containers; do "${NS[@]}" mount --bind "$WORK/upstream/var-log/$d" "/var/log/$d"; done
}

# Ends the namespace (what is mounted in it goes with it) once nothing runs in it any more.
peer_ns_remove() {
  local d ns=$WORK/mntns
  ((${#NS[@]})) || return 0
  NS=()
  umount "$ns/mnt" 2>/dev/null || umount -l "$ns/mnt" 2>/dev/null || log "could not unmount $ns/mnt"
  umount "$ns" 2>/dev/null || umount -l "$ns" 2>/dev/null || true
  # Only empty folders this run made: another kubelet may have started using them since.
  for d in "${VAR_LOG_MADE[@]}"; do rmdir "$d" 2>/dev/null || true; done
}
