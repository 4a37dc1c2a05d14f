#!/usr/bin/env bash
# A private image registry on loopback for pull tests: Debian's docker-registry (the CNCF
# distribution registry), run by hand with its storage, config and log in a folder of the caller's.
# The package's own service (/etc/init.d/docker-registry, listening on :5000 for every address) is
# never used: installing the package must not start it, and a copy that did start is stopped.
#
# Usage: scripts/registry.sh COMMAND
#   install                      apt-get docker-registry when missing (its service left stopped)
#   start DIR PORT [USER:PASS]   serve on 127.0.0.1:PORT with storage under DIR; with USER:PASS,
#                                every request needs that basic auth (htpasswd, bcrypt via perl)
#   stop DIR                     stop the registry started on DIR (by its pid file), bounded
#   status DIR                   say whether it runs and answers
set -euo pipefail

BINARY=/usr/bin/docker-registry
PACKAGE=docker-registry
SERVICE_PIDFILE=/var/run/docker-registry.pid
UP_TIMEOUT_S=20
STOP_TIMEOUT_S=10

log() { echo "registry: $*" >&2; }
die() {
  log "error: $*"
  exit 1
}

installed() { [[ $(dpkg-query -W -f='${db:Status-Status}' "$PACKAGE" 2>/dev/null) == installed ]]; }

# The package's init script starts a registry on :5000 as soon as it is installed, unless a
# policy-rc.d says no (Debian's way to keep packages from starting services); systemd is absent here.
cmd_install() {
  if ! installed; then
    [[ $(id -u) == 0 ]] || die "installing $PACKAGE needs root"
    local policy=/usr/sbin/policy-rc.d
    if [[ ! -e $policy ]]; then
      printf '#!/bin/sh\nexit 101\n' >"$policy" && chmod 0755 "$policy"
      trap 'rm -f /usr/sbin/policy-rc.d' EXIT
    fi
    log "installing $PACKAGE"
    local out
    out=$(mktemp)
    if ! { DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$PACKAGE" ||
      { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$PACKAGE"; }; } >"$out" 2>&1; then
      cat "$out" >&2
      rm -f "$out"
      die "apt-get install $PACKAGE failed"
    fi
    rm -f "$out"
  fi
  # A service the package did start anyway (no policy-rc.d, or an older install) holds :5000.
  if [[ -f $SERVICE_PIDFILE ]] && kill -0 "$(cat "$SERVICE_PIDFILE")" 2>/dev/null; then
    log "stopping the $PACKAGE service the package started"
    /etc/init.d/docker-registry stop >/dev/null 2>&1 || kill "$(cat "$SERVICE_PIDFILE")" 2>/dev/null || true
  fi
  [[ -x $BINARY ]] || die "$BINARY is missing after install"
}

answers() { # PORT [USER:PASS]
  local code
  code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 ${2:+-u "$2"} "http://127.0.0.1:$1/v2/") || return 1
  [[ $code == 200 ]]
}

cmd_start() {
  local dir=${1:?usage: registry.sh start DIR PORT [USER:PASS]} port=${2:?usage: registry.sh start DIR PORT [USER:PASS]}
  local credentials=${3:-}
  [[ -x $BINARY ]] || die "$BINARY is missing: run 'scripts/registry.sh install'"
  if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
    die "127.0.0.1:$port is already in use"
  fi
  mkdir -p "$dir/data"
  local auth=''
  if [[ -n $credentials ]]; then
    local user=${credentials%%:*} pass=${credentials#*:}
    # libxcrypt (Debian's libcrypt) does bcrypt, which is the only hash the registry accepts.
    USER_=$user PASS_=$pass perl -e '
      my @c = ("a".."z", "A".."Z", "0".."9", ".", "/");
      my $salt = join("", map { $c[int(rand(64))] } 1..22);
      my $hash = crypt($ENV{PASS_}, "\$2b\$05\$" . $salt);
      die "no bcrypt in this libcrypt\n" unless defined $hash && $hash =~ /^\$2b\$/;
      print "$ENV{USER_}:$hash\n";' >"$dir/htpasswd"
    auth="auth:
  htpasswd:
    realm: tskubelet-test
    path: $dir/htpasswd"
  fi
  cat >"$dir/config.yml" <<EOF
version: 0.1
log:
  level: info
  accesslog:
    disabled: false
storage:
  filesystem:
    rootdirectory: $dir/data
  delete:
    enabled: true
  maintenance:
    uploadpurging:
      enabled: false
http:
  addr: 127.0.0.1:$port
$auth
EOF
  # setsid: a session of its own, so a test runner's end of process group does not take it early
  # and the caller's signals stay the caller's; stop() ends it by its pid.
  (
    for fd in /proc/self/fd/*; do
      fd=${fd##*/}
      ((fd > 2)) && exec {fd}>&-
    done
    exec setsid "$BINARY" serve "$dir/config.yml" </dev/null >>"$dir/registry.log" 2>&1
  ) &
  echo $! >"$dir/registry.pid"
  local deadline=$((SECONDS + UP_TIMEOUT_S))
  until answers "$port" "$credentials"; do
    if ! kill -0 "$(cat "$dir/registry.pid")" 2>/dev/null; then
      tail -n 20 "$dir/registry.log" >&2 || true
      die "docker-registry exited at start"
    fi
    ((SECONDS < deadline)) || die "docker-registry did not answer on 127.0.0.1:$port within ${UP_TIMEOUT_S}s"
    sleep 0.2
  done
  log "serving on 127.0.0.1:$port (storage $dir/data, log $dir/registry.log)"
}

cmd_stop() {
  local dir=${1:?usage: registry.sh stop DIR} pid
  [[ -f $dir/registry.pid ]] || return 0
  pid=$(cat "$dir/registry.pid")
  # Only our own process: the pid must still be docker-registry serving this folder's config.
  if [[ $(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null) == "$BINARY serve $dir/config.yml " ]]; then
    kill "$pid" 2>/dev/null || true
    local deadline=$((SECONDS + STOP_TIMEOUT_S))
    while kill -0 "$pid" 2>/dev/null; do
      if ((SECONDS >= deadline)); then
        kill -9 "$pid" 2>/dev/null || true
        break
      fi
      sleep 0.1
    done
  fi
  rm -f "$dir/registry.pid"
}

cmd_status() {
  local dir=${1:?usage: registry.sh status DIR} pid
  [[ -f $dir/registry.pid ]] || {
    echo "not running"
    return 1
  }
  pid=$(cat "$dir/registry.pid")
  kill -0 "$pid" 2>/dev/null || {
    echo "not running (stale pid $pid)"
    return 1
  }
  echo "running (pid $pid)"
}

case "${1:-}" in
  install) cmd_install ;;
  start) cmd_start "${@:2}" ;;
  stop) cmd_stop "${@:2}" ;;
  status) cmd_status "${@:2}" ;;
  *)
    sed -n '2,14p' "$0" >&2
    exit 2
    ;;
esac
