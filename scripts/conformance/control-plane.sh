# shellcheck shell=bash
# A throw-away control plane on loopback, shared by scripts/conformance.sh and
# bench/cluster-density.sh (both source it): etcd and kube-apiserver (optionally the controller
# manager and the scheduler) from the upstream kit, certificates made by pki.sh, the processes
# recorded and stopped by the caller's clean-up.
#
# The caller defines log and die, and sets WORK (the run's folder), PKI (the certificates' folder),
# UPSTREAM_BIN, SERVICE_CIDR, SERVICE_CLUSTER_IP, START_TIMEOUT_S and STOP_TIMEOUT_S.

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

# control_plane_start [--no-controllers] [-- EXTRA_APISERVER_FLAGS...]: etcd and kube-apiserver,
# then the controller manager and the scheduler unless --no-controllers; sets API_URL.
control_plane_start() {
  local controllers=true
  if [[ ${1:-} == --no-controllers ]]; then
    controllers=false
    shift
  fi
  [[ ${1:-} == -- ]] && shift
  local etcd_port etcd_peer_port api_port
  etcd_port=$(free_port)
  etcd_peer_port=$(free_port)
  api_port=$(free_port)
  API_URL=https://127.0.0.1:$api_port
  pki_make "$PKI" "$API_URL"

  start etcd "$WORK/etcd.log" etcd --name control-plane --data-dir "$WORK/etcd" \
    --listen-client-urls "http://127.0.0.1:$etcd_port" --advertise-client-urls "http://127.0.0.1:$etcd_port" \
    --listen-peer-urls "http://127.0.0.1:$etcd_peer_port" --initial-advertise-peer-urls "http://127.0.0.1:$etcd_peer_port" \
    --initial-cluster "control-plane=http://127.0.0.1:$etcd_peer_port" --log-level warn
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
    --kubelet-preferred-address-types=InternalIP,ExternalIP,Hostname --profiling=false "$@"
  wait_until "kube-apiserver to be ready" "$START_TIMEOUT_S" kube-apiserver api /readyz
  $controllers || return 0

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

control_plane_stop() {
  stop kube-scheduler
  stop kube-controller-manager
  stop kube-apiserver
  stop etcd
}
