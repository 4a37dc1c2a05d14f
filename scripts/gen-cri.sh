#!/usr/bin/env bash
# Regenerates the TypeScript of the protos (npm run gen:cri): CRI runtime.v1 into src/cri/generated,
# containerd's events API into src/cri/containerd-events/generated, the one call of containerd's
# content API that pull progress reads into src/cri/containerd-content/generated, the device plugin
# API into src/cm/devicemanager/generated, the pod resources API into src/podresources/generated,
# the plugin registration API into src/pluginmanager/generated and the CSI calls into
# src/volume/csi/generated. Uses buf and
# ts-proto from node_modules (no protoc). With --check, regenerates into a scratch copy and fails
# when the committed output differs (CI runs this from npm run lint).
set -euo pipefail
cd "$(dirname "$0")/.."

targets=(src/cri/generated src/cri/containerd-events/generated src/cri/containerd-content/generated
  src/cm/devicemanager/generated src/podresources/generated src/pluginmanager/generated
  src/volume/csi/generated)
# Each target's proto folder (with its buf.gen.yaml), in the same order.
protos=(src/cri/proto src/cri/containerd-events/proto src/cri/containerd-content/proto
  src/cm/devicemanager/proto src/podresources/proto src/pluginmanager/proto src/volume/csi/proto)

generate() {
  local root=$1 i
  for i in "${!targets[@]}"; do
    rm -rf "${root:?}/${targets[$i]}"
    (cd "$root" && npx --no-install buf generate "${protos[$i]}" --template "${protos[$i]}/buf.gen.yaml")
  done
}

if [[ ${1:-} == --check ]]; then
  scratch=$(mktemp -d -t tskubelet-gen-XXXXXX)
  trap 'rm -rf "$scratch"' EXIT
  for p in "${protos[@]}"; do
    mkdir -p "$scratch/$(dirname "$p")"
    cp -r "$p" "$scratch/$p"
  done
  ln -s "$PWD/node_modules" "$scratch/node_modules"
  generate "$scratch"
  status=0
  for t in "${targets[@]}"; do
    diff -r "$t" "$scratch/$t" >/dev/null || { echo "gen:cri: $t differs from what npm run gen:cri makes" >&2; diff -r "$t" "$scratch/$t" | head -20 >&2; status=1; }
  done
  ((status == 0)) && echo "gen:cri: generated code is up to date"
  exit $status
fi

generate .
