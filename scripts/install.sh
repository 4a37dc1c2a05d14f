#!/usr/bin/env bash
# Installs tskubelet on a Debian machine as the node's kubelet: the package (from `npm pack` output,
# built here when none is given) under /usr/local, /usr/local/bin/tskubelet, the systemd unit and
# kubeadm's drop-in, /etc/default/kubelet and an example /var/lib/kubelet/config.yaml (existing files
# are kept). Then `kubeadm join` (or your own kubeconfig) and `systemctl start kubelet`.
#
#   sudo bash scripts/install.sh [tskubelet-x.y.z.tgz] [--start]
#
# DESTDIR=/some/root installs into a staging tree and skips systemctl (packaging, tests).
set -euo pipefail
cd "$(dirname "$0")/.."

TARBALL=""
START=0
for arg in "$@"; do
  case "$arg" in
    --start) START=1 ;;
    *.tgz) TARBALL="$(realpath "$arg")" ;;
    *) echo "install.sh: unknown argument $arg" >&2; exit 2 ;;
  esac
done
DESTDIR="${DESTDIR:-}"

if [ -z "$DESTDIR" ] && [ "$(id -u)" != 0 ]; then
  echo "install.sh: run as root (or set DESTDIR)" >&2
  exit 1
fi
if ! command -v node >/dev/null || [ "$(node -p 'process.versions.node.split(".")[0]')" -lt 20 ]; then
  echo "install.sh: tskubelet needs Node.js 20 or newer on PATH (Debian 12 ships 18: use NodeSource or nvm)" >&2
  exit 1
fi
if [ -z "$DESTDIR" ]; then
  missing=()
  # g++, make and python3 build usocket (node-gyp), which the node shutdown manager's D-Bus client needs.
  for pkg in containerd runc containernetworking-plugins g++ make python3; do
    dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
  done
  if [ "${#missing[@]}" -gt 0 ]; then
    apt-get update
    DEBIAN_FRONTEND=noninteractive apt-get install -y "${missing[@]}"
  fi
fi

if [ -z "$TARBALL" ]; then
  [ -d node_modules ] || npm ci --no-audit --no-fund
  TARBALL="$(realpath "$(npm pack --silent | tail -1)")"
fi

prefix="$DESTDIR/usr/local"
mkdir -p "$prefix"
npm install --global --prefix "$prefix" --omit=dev --no-audit --no-fund "$TARBALL"

unitdir="$DESTDIR/usr/lib/systemd/system"
install -D -m 0644 packaging/systemd/kubelet.service "$unitdir/kubelet.service"
install -D -m 0644 packaging/systemd/kubelet.service.d/10-kubeadm.conf "$unitdir/kubelet.service.d/10-kubeadm.conf"
if [ ! -e "$DESTDIR/etc/default/kubelet" ]; then
  install -D -m 0644 /dev/null "$DESTDIR/etc/default/kubelet"
  echo 'KUBELET_EXTRA_ARGS=' >"$DESTDIR/etc/default/kubelet"
fi
if [ ! -e "$DESTDIR/var/lib/kubelet/config.yaml" ]; then
  install -D -m 0644 packaging/config.yaml "$DESTDIR/var/lib/kubelet/config.yaml"
fi
mkdir -p "$DESTDIR/etc/kubernetes/manifests"

if [ -z "$DESTDIR" ]; then
  systemctl daemon-reload
  systemctl enable kubelet
  [ "$START" = 1 ] && systemctl restart kubelet
fi
echo "tskubelet installed: $prefix/bin/tskubelet, unit kubelet.service (join with kubeadm, then systemctl start kubelet)"
