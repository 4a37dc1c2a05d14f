#!/usr/bin/env bash
# The project's private container runtime for tests: a containerd of our own (with its CRI plugin),
# runc, and a CNI bridge, all from Debian's packages, with every file under .stack/ and a socket of
# its own. It never touches the system's containerd (/run/containerd/containerd.sock, /var/lib/containerd).
#
# Usage: scripts/runtime-stack.sh COMMAND
#   install  apt-get the packages the stack needs (only the missing ones)
#   images   build the offline test images into .stack/images/ (pause, busybox)
#   up       start our containerd (if not running) and import the images into namespace k8s.io
#   down     remove every pod and container, stop containerd, undo mounts, netns and iptables rules
#   clean    down, then delete containerd's state (images archives stay)
#   env      print CONTAINER_RUNTIME_ENDPOINT=... and friends, one KEY=VALUE a line
#   status   say whether our containerd runs and answers
#   crash    SIGKILL our containerd, and only it (its shims and containers live on), as a crash
#            would: for recovery tests; 'up' starts it again
#
# Overrides (rarely needed): TSKUBELET_STACK_DIR (default <repo>/.stack) and TSKUBELET_STACK_RUN_DIR
# (default /run/tskubelet, where the sockets live: unix socket paths are limited to 108 bytes).
# A second stack beside the first (so that two kubelets do not stop each other's pods) also needs
# its own TSKUBELET_STACK_BRIDGE (default tskube0) and TSKUBELET_STACK_POD_SUBNET (default 10.244.77.0/24).
set -euo pipefail

REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
STACK_DIR=${TSKUBELET_STACK_DIR:-$REPO_ROOT/.stack}
RUN_DIR=${TSKUBELET_STACK_RUN_DIR:-/run/tskubelet}
SOCK=$RUN_DIR/containerd.sock
CD_DIR=$STACK_DIR/containerd
CD_ROOT=$CD_DIR/root
CD_STATE=$CD_DIR/state
CD_CONFIG=$CD_DIR/config.toml
CD_LOG=$STACK_DIR/containerd.log
CD_PIDFILE=$STACK_DIR/containerd.pid
CNI_CONF_DIR=$STACK_DIR/cni/net.d
CNI_IPAM_DIR=$STACK_DIR/cni/ipam
CNI_BIN_DIR=/usr/lib/cni
IMAGES_DIR=$STACK_DIR/images
NETWORK_NAME=tskubelet${TSKUBELET_STACK_BRIDGE:+-$TSKUBELET_STACK_BRIDGE}
BRIDGE=${TSKUBELET_STACK_BRIDGE:-tskube0}
POD_SUBNET=${TSKUBELET_STACK_POD_SUBNET:-10.244.77.0/24}
SANDBOX_IMAGE=registry.k8s.io/pause:3.9
# containerd 1.6 puts every shim's socket in this compile-time folder, whatever its config says.
SHIM_SOCKET_DIR=/run/containerd/s
# A clean PATH for the daemon: the shim looks up runc, and CNI plugins look up iptables, in it.
DAEMON_PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
UP_TIMEOUT_S=30
STOP_TIMEOUT_S=15

log() { echo "runtime-stack: $*" >&2; }
die() {
  log "error: $*"
  exit 1
}

need_root() { [[ $(id -u) == 0 ]] || die "'$1' needs root (containerd, mounts and network namespaces)"; }

# Serialises up/down/clean: two test runs starting the stack at once must not start two daemons.
take_lock() {
  mkdir -p "$STACK_DIR"
  exec 9>"$STACK_DIR/.lock"
  flock -w 120 9 || die "another runtime-stack.sh holds $STACK_DIR/.lock for over 120 s"
}

# ---------------------------------------------------------------------------------------------------
# install

# docker-registry serves the image pull tests (scripts/registry.sh runs it by hand; its own service stays off).
# chromium drives the node page's browser test (test/integration/node-page-browser.test.ts, puppeteer-core);
# dbus-daemon runs the private bus the node shutdown test puts its stand-in for logind on.
# g++, make and python3 build usocket (node-gyp), which dbus-next needs to receive logind's lock fd:
# .ci/run installs these packages before npm ci for that reason.
PACKAGES=(containerd runc containernetworking-plugins busybox-static gcc g++ make python3 libc6-dev
  iptables iproute2 util-linux mount tar gzip docker-registry chromium dbus-daemon)

cmd_install() {
  local missing=() p
  for p in "${PACKAGES[@]}"; do
    [[ $(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null) == installed ]] || missing+=("$p")
  done
  ((${#missing[@]} == 0)) && return 0
  need_root install
  log "installing ${missing[*]}"
  # On a machine that runs systemd, installing containerd would also start the system's own
  # containerd service. A policy-rc.d answering 101 tells the packages not to start any service.
  local policy=/usr/sbin/policy-rc.d
  if [[ ! -e $policy ]]; then
    printf '#!/bin/sh\nexit 101\n' >"$policy" && chmod 0755 "$policy"
    trap 'rm -f /usr/sbin/policy-rc.d' EXIT
  fi
  export DEBIAN_FRONTEND=noninteractive
  # apt's chatter is shown only when it fails.
  local out
  out=$(mktemp)
  if ! { apt-get update -qq && apt-get install -y -qq --no-install-recommends "${missing[@]}"; } >"$out" 2>&1; then
    cat "$out" >&2
    rm -f "$out"
    die "apt-get install ${missing[*]} failed"
  fi
  rm -f "$out"
}

# ---------------------------------------------------------------------------------------------------
# images

cmd_images() { bash "$REPO_ROOT/images/build-images.sh" "$IMAGES_DIR"; }

# ---------------------------------------------------------------------------------------------------
# up

write_config() {
  mkdir -p "$CD_ROOT" "$CD_STATE" "$CNI_CONF_DIR" "$CNI_IPAM_DIR" "$RUN_DIR"
  # Debian's own machines may run AppArmor; where it is off or its parser is missing, containerd
  # must not try to load its default profile.
  local disable_apparmor=true
  if [[ $(cat /sys/module/apparmor/parameters/enabled 2>/dev/null) == Y ]] && command -v apparmor_parser >/dev/null; then
    disable_apparmor=false
  fi

  cat >"$CD_CONFIG.new" <<EOF
# Generated by scripts/runtime-stack.sh; edits are lost on the next 'up'.
version = 2
root = "$CD_ROOT"
state = "$CD_STATE"
oom_score = 0
# Only the plugins a test node needs; the others probe the host for nothing.
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs",
  "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper",
  "io.containerd.tracing.processor.v1.otlp", "io.containerd.internal.v1.tracing"]

[grpc]
  address = "$SOCK"
[ttrpc]
  address = "$SOCK.ttrpc"
[debug]
  address = ""
  level = "info"
[metrics]
  address = ""

[plugins."io.containerd.internal.v1.opt"]
  path = "$CD_DIR/opt"

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$SANDBOX_IMAGE"
  # Without CAP_SYS_RESOURCE the sandbox's oom_score_adj of -998 cannot be set, and every
  # RunPodSandbox would fail with "can't get final child's PID from pipe".
  restrict_oom_score_adj = true
  enable_selinux = false
  disable_apparmor = $disable_apparmor
  disable_cgroup = false
  max_container_log_line_size = 16384
  # Network namespaces under our state, not /var/run/netns, so 'down' finds every one of ours.
  netns_mounts_under_state_dir = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        # runc's state under ours instead of /run/containerd/runc.
        Root = "$CD_STATE/runc"
    # A second handler, runc again under another name, so that a RuntimeClass test can see its
    # handler reach RunPodSandbox (the runtimeclass integration test's 'test-handler').
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.test-handler]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.test-handler.options]
        SystemdCgroup = false
        Root = "$CD_STATE/runc"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "$CNI_BIN_DIR"
    conf_dir = "$CNI_CONF_DIR"
    max_conf_num = 1
  # A test registry on loopback, over plain HTTP (for image pull tests).
  [plugins."io.containerd.grpc.v1.cri".registry.mirrors."127.0.0.1:5000"]
    endpoint = ["http://127.0.0.1:5000"]
  [plugins."io.containerd.grpc.v1.cri".registry.mirrors."localhost:5000"]
    endpoint = ["http://127.0.0.1:5000"]
EOF
  mv "$CD_CONFIG.new" "$CD_CONFIG"

  # The CRI plugin adds the loopback interface itself; the conflist is the pod's eth0 and hostPorts.
  cat >"$CNI_CONF_DIR/10-$NETWORK_NAME.conflist" <<EOF
{
  "cniVersion": "1.0.0",
  "name": "$NETWORK_NAME",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "$BRIDGE",
      "isGateway": true,
      "ipMasq": false,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "ranges": [[{ "subnet": "$POD_SUBNET" }]],
        "routes": [{ "dst": "0.0.0.0/0" }],
        "dataDir": "$CNI_IPAM_DIR"
      }
    },
    { "type": "portmap", "capabilities": { "portMappings": true } }
  ]
}
EOF
}

# The pid of the containerd started with our config, found by its command line (a pid file alone
# could name a recycled pid).
our_containerd_pid() {
  local p args
  for p in /proc/[0-9]*; do
    mapfile -d '' -t args 2>/dev/null <"$p/cmdline" || continue
    if [[ ${args[*]} == "containerd --config $CD_CONFIG" ]]; then
      echo "${p#/proc/}"
      return 0
    fi
  done
  return 1
}

# Our shims: "containerd-shim-runc-v2 -namespace NS -id ID -address $SOCK". Prints "PID NS ID".
our_shims() {
  local p args cmd
  for p in /proc/[0-9]*; do
    mapfile -d '' -t args 2>/dev/null <"$p/cmdline" || continue
    cmd="${args[*]} "
    if [[ $cmd == *containerd-shim* && $cmd == *" -address $SOCK "* && $cmd =~ -namespace\ ([^ ]+)\ -id\ ([^ ]+) ]]; then
      echo "${p#/proc/} ${BASH_REMATCH[1]} ${BASH_REMATCH[2]}"
    fi
  done
}

ctr_() { timeout 60 ctr --address "$SOCK" "$@"; }

answers() { timeout 5 ctr --address "$SOCK" version >/dev/null 2>&1; }

start_containerd() {
  command -v containerd >/dev/null || die "containerd is missing: run 'scripts/runtime-stack.sh install'"
  if [[ -S $SOCK ]] && answers; then
    die "something else answers on $SOCK (another clone's stack?); stop it or set TSKUBELET_STACK_RUN_DIR"
  fi
  rm -f "$SOCK" "$SOCK.ttrpc"
  # Remember whether the shim socket folder is ours to remove again on 'down'.
  [[ -e /run/containerd ]] || touch "$STACK_DIR/.created-run-containerd"

  log "starting containerd (socket $SOCK, log $CD_LOG)"
  # env -i: nothing of the caller's environment (NOTIFY_SOCKET, proxies, CONTAINERD_*) leaks in.
  # setsid: its own session, so the caller's Ctrl-C or the end of its process group spares it.
  # Only stdin/out/err are passed on: an inherited fd would make the daemon hold our lock forever,
  # or keep a caller's pipe open so that a CI step reading it never ends.
  (
    for fd in /proc/self/fd/*; do
      fd=${fd##*/}
      ((fd > 2)) && exec {fd}>&-
    done
    exec env -i PATH="$DAEMON_PATH" HOME=/root setsid containerd --config "$CD_CONFIG" \
      </dev/null >>"$CD_LOG" 2>&1
  ) &

  local deadline=$((SECONDS + UP_TIMEOUT_S)) pid=""
  until answers; do
    sleep 0.2
    pid=$(our_containerd_pid) || {
      tail -n 20 "$CD_LOG" >&2
      die "containerd exited during start-up (log above, full log in $CD_LOG)"
    }
    ((SECONDS < deadline)) || {
      tail -n 20 "$CD_LOG" >&2
      die "containerd did not answer on $SOCK within ${UP_TIMEOUT_S}s"
    }
  done
  our_containerd_pid >"$CD_PIDFILE"

  # containerd serves even when its CRI plugin failed to load (a bad config, say): check it here,
  # where the reason is still in the log, rather than in a test's first RunPodSandbox.
  if ! ctr_ plugins ls | grep -Eq '^io\.containerd\.grpc\.v1[[:space:]]+cri[[:space:]].*ok[[:space:]]*$'; then
    grep -i 'cri' "$CD_LOG" | tail -n 10 >&2 || true
    die "containerd's CRI plugin did not load (see $CD_LOG)"
  fi
}

# Imports an image archive unless every name in it already points at its manifest.
import_image() { # NAME
  local tar=$IMAGES_DIR/$1.tar index=$IMAGES_DIR/$1/index.json
  [[ -f $tar && -f $index ]] || die "missing $tar: run 'scripts/runtime-stack.sh images'"
  local have wanted digest ref
  have=$(ctr_ -n k8s.io images ls)
  # index.json is ours (images/build-images.sh): one line per manifest, "DIGEST NAME".
  wanted=$(grep -oE '"digest":"sha256:[0-9a-f]+","size":[0-9]+,"annotations":\{"io.containerd.image.name":"[^"]+"' "$index" |
    sed -E 's/^"digest":"([^"]+)".*"io.containerd.image.name":"([^"]+)"$/\1 \2/')
  [[ -n $wanted ]] || die "no image names in $index"
  while read -r digest ref; do
    if ! awk -v ref="$ref" -v digest="$digest" '$1 == ref && $3 == digest { found = 1 } END { exit !found }' <<<"$have"; then
      log "importing $1"
      # ctr unpacks into the default snapshotter (overlayfs), the one the CRI plugin uses.
      ctr_ -n k8s.io images import "$tar" >/dev/null || die "ctr images import $tar failed"
      return 0
    fi
  done <<<"$wanted"
}

cmd_up() {
  need_root up
  take_lock
  cmd_images
  if our_containerd_pid >/dev/null && answers; then
    log "containerd already running (pid $(our_containerd_pid))"
  else
    if our_containerd_pid >/dev/null; then
      log "our containerd runs but does not answer: restarting it"
      stop_containerd
    fi
    write_config
    start_containerd
  fi
  import_image pause
  import_image busybox
  log "ready: CONTAINER_RUNTIME_ENDPOINT=unix://$SOCK"
  echo "$SOCK"
}

# ---------------------------------------------------------------------------------------------------
# down

# Stops and removes every pod through the CRI API, as a kubelet would: that is what runs CNI DEL
# (releasing the IP, the hostPort rules) and unmounts the pod's netns and shm. Needs node_modules.
cri_remove_all_pods() {
  local client=$REPO_ROOT/src/cri/connect-runtime.ts
  if ! command -v node >/dev/null || [[ ! -d $REPO_ROOT/node_modules/tsx || ! -f $client ]]; then
    log "node, node_modules or $client missing: skipping the CRI clean-up, falling back to runc and umount"
    return 1
  fi
  # The kubelet's own CRI client (src/cri), as the tests use it.
  # shellcheck disable=SC2016 # the single-quoted text is JavaScript, not shell
  (cd "$REPO_ROOT" && SOCK=$SOCK timeout 120 node --import tsx --input-type=module -e '
    import { connectRuntime } from "./src/cri/connect-runtime.ts";
    const { runtime, close } = await connectRuntime("unix://" + process.env.SOCK, { signal: AbortSignal.timeout(15000) });
    let failed = 0;
    const items = await runtime.listPodSandbox({}, { timeoutMs: 10000 });
    for (const { id } of items) {
      try {
        await runtime.stopPodSandbox(id, { timeoutMs: 30000 });
        await runtime.removePodSandbox(id, { timeoutMs: 30000 });
      } catch (err) {
        failed++;
        console.error(`runtime-stack: pod ${id.slice(0, 12)}: ${err.message}`);
      }
    }
    if (items.length) console.error(`runtime-stack: removed ${items.length - failed} of ${items.length} pod(s)`);
    close();
    process.exit(failed ? 1 : 0);
  ')
}

stop_containerd() {
  local pid
  pid=$(our_containerd_pid) || return 0
  kill -TERM "$pid" 2>/dev/null || true
  local deadline=$((SECONDS + STOP_TIMEOUT_S))
  while kill -0 "$pid" 2>/dev/null && ((SECONDS < deadline)); do sleep 0.2; done
  if kill -0 "$pid" 2>/dev/null; then
    log "containerd (pid $pid) ignored SIGTERM for ${STOP_TIMEOUT_S}s: SIGKILL"
    kill -KILL "$pid" 2>/dev/null || true
    sleep 0.5
  fi
  rm -f "$CD_PIDFILE"
}

# Whatever the CRI clean-up left: containers (killed through runc's state, which covers every
# process of each container's cgroup), then the shims that waited for them.
kill_leftovers() {
  local ns_root id
  if command -v runc >/dev/null; then
    for ns_root in "$CD_STATE"/runc/*/; do
      [[ -d $ns_root ]] || continue
      for id in $(runc --root "$ns_root" list -q 2>/dev/null); do
        log "killing leftover container ${id:0:12}"
        runc --root "$ns_root" kill --all "$id" KILL 2>/dev/null || true
        timeout 10 runc --root "$ns_root" delete --force "$id" 2>/dev/null || true
      done
    done
  fi

  local shims pid ns
  shims=$(our_shims)
  [[ -n $shims ]] || return 0
  while read -r pid ns id; do kill -TERM "$pid" 2>/dev/null || true; done <<<"$shims"
  sleep 1
  while read -r pid ns id; do
    kill -KILL "$pid" 2>/dev/null || true
    # A killed shim leaves its socket behind; its name is sha256("<containerd address>/<ns>/<id>").
    rm -f "$SHIM_SOCKET_DIR/$(printf '%s' "$SOCK/$ns/$id" | sha256sum | cut -d' ' -f1)"
  done <<<"$shims"
}

# Unmounts everything under our folders, deepest first (rootfs overlays, sandbox shm, netns).
# The example kubelet's --root-dir (scripts/run-example.sh): the kubelet makes it a mount point of its
# own and mounts pod volumes under it, and once it is stopped nobody else unmounts them.
EXAMPLE_ROOT_DIR=$STACK_DIR/kubelet

unmount_all() {
  local mounts m
  # Field 5 of mountinfo is the mount point, with spaces and such written as octal escapes.
  mapfile -t mounts < <(awk '{print $5}' /proc/self/mountinfo | while read -r m; do printf '%b\n' "$m"; done |
    grep -E "^($CD_DIR|$RUN_DIR)/|^$EXAMPLE_ROOT_DIR(/|\$)" | awk '{print length, $0}' | sort -rn | cut -d' ' -f2-)
  for m in "${mounts[@]}"; do
    umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || log "could not unmount $m"
  done
}

# hostPort rules of pods whose CNI DEL never ran (containerd died first): portmap marks them with
# a comment naming the network, and jumps from them to one chain per pod.
remove_stale_portmap_rules() {
  command -v iptables >/dev/null || return 0
  local rules rule chain
  rules=$(iptables -w 5 -t nat -S 2>/dev/null | grep -F "name: \\\"$NETWORK_NAME\\\"") || return 0
  while read -r rule; do
    [[ $rule == -A\ * ]] || continue
    chain=$(grep -oE -- '-j CNI-[A-Z]+-[0-9a-f]+' <<<"$rule" | cut -d' ' -f2) || true
    # The rule is printed in iptables' own shell quoting, so it reads back through eval.
    eval "iptables -w 5 -t nat -D ${rule#-A }" 2>/dev/null || true
    if [[ -n $chain ]]; then
      iptables -w 5 -t nat -F "$chain" 2>/dev/null || true
      iptables -w 5 -t nat -X "$chain" 2>/dev/null || true
    fi
  done <<<"$rules"
}

cmd_down() {
  need_root down
  take_lock
  if our_containerd_pid >/dev/null && answers; then
    cri_remove_all_pods || log "CRI clean-up incomplete: forcing the rest"
  fi
  stop_containerd
  kill_leftovers
  unmount_all
  # What is left of an unmounted netns is an empty file.
  rm -f "$CD_STATE"/io.containerd.grpc.v1.cri/netns/*
  remove_stale_portmap_rules
  # containerd's default cgroup parent for pods without one; rmdir removes only an empty cgroup.
  rmdir /sys/fs/cgroup/*/k8s.io /sys/fs/cgroup/k8s.io 2>/dev/null || true
  # No pod is left, so no address is in use: a fresh IPAM store forgets those leaked by a crash.
  rm -rf "${CNI_IPAM_DIR:?}"/*
  if [[ -e /sys/class/net/$BRIDGE ]] && [[ -z $(ls "/sys/class/net/$BRIDGE/brif" 2>/dev/null) ]]; then
    ip link delete "$BRIDGE" 2>/dev/null || true
  fi
  rm -f "$SOCK" "$SOCK.ttrpc"
  rmdir "$RUN_DIR" 2>/dev/null || true
  if [[ -e $STACK_DIR/.created-run-containerd ]]; then
    rmdir "$SHIM_SOCKET_DIR" /run/containerd 2>/dev/null || true
    rm -f "$STACK_DIR/.created-run-containerd"
  fi
  log "down"
}

cmd_clean() {
  cmd_down
  if grep -qF " $CD_DIR/" /proc/self/mountinfo; then
    die "mounts remain under $CD_DIR; not deleting it"
  fi
  # --one-file-system: should a mount have slipped through, never delete through it.
  rm -rf --one-file-system "${CD_DIR:?}" "${CNI_IPAM_DIR:?}" "$STACK_DIR/tmp" "$CD_LOG"
  log "cleaned $CD_DIR"
}

# ---------------------------------------------------------------------------------------------------

cmd_env() {
  echo "CONTAINER_RUNTIME_ENDPOINT=unix://$SOCK"
  echo "IMAGE_SERVICE_ENDPOINT=unix://$SOCK"
  echo "TSKUBELET_STACK_DIR=$STACK_DIR"
  echo "TSKUBELET_POD_CIDR=$POD_SUBNET"
  echo "TSKUBELET_SANDBOX_IMAGE=$SANDBOX_IMAGE"
}

# Only the daemon started with our config is killed (found by its command line, as 'down' finds it):
# never the system's containerd, nor another stack's.
cmd_crash() {
  need_root crash
  take_lock
  local pid
  pid=$(our_containerd_pid) || die "our containerd is not running"
  kill -KILL "$pid"
  local deadline=$((SECONDS + STOP_TIMEOUT_S))
  # By command line rather than kill -0: a killed daemon nobody reaps yet is a zombie with none.
  while our_containerd_pid >/dev/null; do
    ((SECONDS < deadline)) || die "containerd (pid $pid) still there ${STOP_TIMEOUT_S}s after SIGKILL"
    sleep 0.1
  done
  rm -f "$CD_PIDFILE"
  log "killed containerd (pid $pid); shims and containers live on"
}

cmd_status() {
  local pid
  if pid=$(our_containerd_pid) && answers; then
    echo "running: pid $pid, socket $SOCK"
  elif [[ -n ${pid:-} ]]; then
    echo "not answering: pid $pid, socket $SOCK"
    return 1
  else
    echo "stopped"
    return 1
  fi
}

case "${1:-}" in
  install) cmd_install ;;
  images) cmd_images ;;
  up) cmd_up ;;
  down) cmd_down ;;
  clean) cmd_clean ;;
  env) cmd_env ;;
  status) cmd_status ;;
  crash) cmd_crash ;;
  *)
    sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//' >&2
    exit 2
    ;;
esac
