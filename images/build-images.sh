#!/usr/bin/env bash
# Builds the test images offline, as OCI image archives that `ctr images import` takes:
#   OUT/pause.tar    registry.k8s.io/pause:3.9 (a static pause from images/pause.c)
#   OUT/busybox.tar  docker.io/library/busybox:latest and :1.36 (Debian's busybox-static)
# Beside each archive stays its unpacked OCI layout (OUT/pause/, OUT/busybox/), handy for pushing
# to a test registry. Everything is reproducible: the same inputs give the same digests, and an
# archive whose inputs did not change is not rebuilt.
#
# Usage: images/build-images.sh OUT_DIR
set -euo pipefail

IMAGES_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
OUT=${1:?usage: build-images.sh OUT_DIR}
BUSYBOX_BIN=/bin/busybox
PATH_ENV=PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

die() {
  echo "build-images: $*" >&2
  exit 1
}

# OCI names the CPU the way Go does; Debian's names differ for a few.
oci_arch() {
  case "$(dpkg --print-architecture)" in
    amd64) echo amd64 ;;
    arm64) echo arm64 ;;
    armhf) echo arm ;;
    i386) echo 386 ;;
    *) dpkg --print-architecture ;;
  esac
}

# A tar that is byte-for-byte the same on every build: sorted names, fixed times, owner 0, and the
# GNU format (POSIX pax would add atime/ctime records).
reproducible_tar() { # SRC_DIR OUT_FILE
  local entries
  mapfile -t entries < <(find "$1" -mindepth 1 -maxdepth 1 -printf '%f\n' | LC_ALL=C sort)
  LC_ALL=C tar --create --file="$2" --directory="$1" --format=gnu --sort=name \
    --mtime=@0 --owner=0 --group=0 --numeric-owner -- "${entries[@]}"
}

# Stores FILE in LAYOUT's blob store; prints "sha256:HEX SIZE".
add_blob() { # LAYOUT FILE
  local hex size
  hex=$(sha256sum "$2" | cut -d' ' -f1)
  size=$(stat -c %s "$2")
  mkdir -p "$1/blobs/sha256"
  cp "$2" "$1/blobs/sha256/$hex"
  echo "sha256:$hex $size"
}

# Writes the OCI layout for a one-layer image made of ROOTFS and packs it into OUT/NAME.tar.
# CONFIG is the image's "config" object (Env, Cmd, Entrypoint, User...); REFS are its full names.
# Each name gets an image of its own (one layer, shared): "@TAG@" in CONFIG becomes the name's tag.
# With two names on one image, containerd's CRI would report the alphabetically first name in every
# ContainerStatus (busybox:1.36 for a pod that asked for busybox), which upstream never shows.
build_oci_image() { # NAME ROOTFS CONFIG REF...
  local name=$1 rootfs=$2 config=$3
  shift 3
  local work=$OUT/.build-$name layout=$OUT/.build-$name/layout
  rm -rf "$work"
  mkdir -p "$layout"

  reproducible_tar "$rootfs" "$work/layer.tar"
  # diff_ids name the uncompressed layer; the manifest names the compressed blob.
  local diff_id layer layer_digest layer_size
  diff_id=sha256:$(sha256sum "$work/layer.tar" | cut -d' ' -f1)
  gzip -9 -n <"$work/layer.tar" >"$work/layer.tar.gz" # -n: no name or time in the header
  layer=$(add_blob "$layout" "$work/layer.tar.gz")
  layer_digest=${layer% *} layer_size=${layer#* }

  local entries=() ref cfg cfg_digest cfg_size man man_digest man_size
  for ref in "$@"; do
    printf '{"architecture":"%s","os":"linux","created":"1970-01-01T00:00:00Z","config":%s,"rootfs":{"type":"layers","diff_ids":["%s"]},"history":[{"created":"1970-01-01T00:00:00Z","created_by":"tskubelet images/build-images.sh"}]}' \
      "$(oci_arch)" "${config//@TAG@/${ref##*:}}" "$diff_id" >"$work/config.json"
    cfg=$(add_blob "$layout" "$work/config.json")
    cfg_digest=${cfg% *} cfg_size=${cfg#* }

    printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"%s","size":%s},"layers":[{"mediaType":"application/vnd.oci.image.layer.v1.tar+gzip","digest":"%s","size":%s}]}' \
      "$cfg_digest" "$cfg_size" "$layer_digest" "$layer_size" >"$work/manifest.json"
    man=$(add_blob "$layout" "$work/manifest.json")
    man_digest=${man% *} man_size=${man#* }

    # ctr reads io.containerd.image.name first; the OCI ref.name carries the same full name (a bare
    # tag there would make ctr prefix it with "import-DATE").
    entries+=("$(printf '{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"%s","size":%s,"annotations":{"io.containerd.image.name":"%s","org.opencontainers.image.ref.name":"%s"}}' \
      "$man_digest" "$man_size" "$ref" "$ref")")
    echo "build-images: $ref $man_digest" >&2
  done
  local joined
  joined=$(IFS=,; echo "${entries[*]}")
  printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[%s]}' "$joined" >"$layout/index.json"
  printf '{"imageLayoutVersion":"1.0.0"}' >"$layout/oci-layout"

  reproducible_tar "$layout" "$work/image.tar"
  rm -rf "${OUT:?}/$name"
  mv "$layout" "$OUT/$name"
  mv "$work/image.tar" "$OUT/$name.tar"
  rm -rf "$work"
}

# Rebuilds NAME only when the hash of its inputs (given on stdin) changed or the archive is gone.
needs_build() { # NAME < inputs
  local stamp
  stamp=$(sha256sum | cut -d' ' -f1)
  if [[ -f $OUT/$1.tar && -f $OUT/$1.inputs && $(cat "$OUT/$1.inputs") == "$stamp" ]]; then
    return 1
  fi
  echo "$stamp" >"$OUT/$1.inputs.new"
  return 0
}
mark_built() { mv "$OUT/$1.inputs.new" "$OUT/$1.inputs"; }

command -v gcc >/dev/null || die "gcc is missing: run 'scripts/runtime-stack.sh install'"
[[ -x $BUSYBOX_BIN ]] || die "$BUSYBOX_BIN is missing: run 'scripts/runtime-stack.sh install'"
# A dynamic busybox (Debian's plain 'busybox' package) would not run in an image without libc.
[[ $(LC_ALL=C ldd "$BUSYBOX_BIN" 2>&1 || true) =~ not\ a\ dynamic|statically\ linked ]] ||
  die "$BUSYBOX_BIN is not static: install busybox-static"
mkdir -p "$OUT"
umask 022

# --- pause -------------------------------------------------------------------------------------
if {
  cat "${BASH_SOURCE[0]}" "$IMAGES_DIR/pause.c"
  gcc --version | head -n1
  dpkg-query -W libc6-dev 2>/dev/null || true
} | needs_build pause; then
  rootfs=$OUT/.rootfs-pause
  rm -rf "$rootfs" && mkdir -p "$rootfs"
  gcc -static -O2 -s -Wall -Wextra -o "$rootfs/pause" "$IMAGES_DIR/pause.c"
  chmod 0755 "$rootfs/pause"
  # The same user and entrypoint as the upstream pause image.
  build_oci_image pause "$rootfs" \
    "{\"Env\":[\"$PATH_ENV\"],\"Entrypoint\":[\"/pause\"],\"User\":\"65535:65535\",\"WorkingDir\":\"/\"}" \
    registry.k8s.io/pause:3.9
  rm -rf "$rootfs"
  mark_built pause
fi

# --- busybox -----------------------------------------------------------------------------------
if {
  cat "${BASH_SOURCE[0]}"
  sha256sum "$BUSYBOX_BIN"
} | needs_build busybox; then
  rootfs=$OUT/.rootfs-busybox
  rm -rf "$rootfs"
  mkdir -p "$rootfs"/{bin,dev,etc,home,proc,root,sys,tmp,usr/bin,usr/sbin,var}
  chmod 1777 "$rootfs/tmp"
  chmod 0700 "$rootfs/root"
  cp "$BUSYBOX_BIN" "$rootfs/bin/busybox"
  chmod 0755 "$rootfs/bin/busybox"
  # Every applet in /bin, as upstream's busybox image has them; /usr/bin/env for shebangs.
  for applet in $("$BUSYBOX_BIN" --list); do
    [[ $applet == busybox ]] || ln -s busybox "$rootfs/bin/$applet"
  done
  ln -s ../../bin/busybox "$rootfs/usr/bin/env"
  printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/home:/bin/false\n' >"$rootfs/etc/passwd"
  printf 'root:x:0:\nnobody:x:65534:\n' >"$rootfs/etc/group"
  chmod 0644 "$rootfs/etc/passwd" "$rootfs/etc/group"
  build_oci_image busybox "$rootfs" \
    "{\"Env\":[\"$PATH_ENV\"],\"Cmd\":[\"sh\"],\"Labels\":{\"org.opencontainers.image.version\":\"@TAG@\"}}" \
    docker.io/library/busybox:latest docker.io/library/busybox:1.36
  rm -rf "$rootfs"
  mark_built busybox
fi
