#!/usr/bin/env bash
# Regenerates the TypeScript of the protos (npm run gen:cri): CRI runtime.v1 into src/cri/generated,
# containerd's events API into src/cri/containerd-events/generated, the one call of containerd's
# content API that pull progress reads into src/cri/containerd-content/generated, the device plugin
# API into src/cm/devicemanager/generated and the pod resources API into src/podresources/generated.
# Uses buf and
# ts-proto from node_modules (no protoc). With --check, regenerates into a scratch copy and fails
# when the committed output differs (CI runs this from npm run lint).
set -euo pipefail
cd "$(dirname "$0")/.."

targets=(src/cri/generated src/cri/containerd-events/generated src/cri/containerd-content/generated
  src/cm/devicemanager/generated src/podresources/generated)

generate() {
  local root=$1
  rm -rf "$root/src/cri/generated" "$root/src/cri/containerd-events/generated" \
    "$root/src/cri/containerd-content/generated" "$root/src/cm/devicemanager/generated" \
    "$root/src/podresources/generated"
  (cd "$root" && npx --no-install buf generate src/cri/proto --template src/cri/proto/buf.gen.yaml)
  (cd "$root" && npx --no-install buf generate src/cri/containerd-events/proto \
    --template src/cri/containerd-events/proto/buf.gen.yaml)
  (cd "$root" && npx --no-install buf generate src/cri/containerd-content/proto \
    --template src/cri/containerd-content/proto/buf.gen.yaml)
  (cd "$root" && npx --no-install buf generate src/cm/devicemanager/proto \
    --template src/cm/devicemanager/proto/buf.gen.yaml)
  (cd "$root" && npx --no-install buf generate src/podresources/proto --template src/podresources/proto/buf.gen.yaml)
}

if [[ ${1:-} == --check ]]; then
  scratch=$(mktemp -d -t tskubelet-gen-XXXXXX)
  trap 'rm -rf "$scratch"' EXIT
  mkdir -p "$scratch/src/cri" "$scratch/src/cri/containerd-events" "$scratch/src/cri/containerd-content" \
    "$scratch/src/cm/devicemanager" "$scratch/src/podresources"
  cp -r src/cri/proto "$scratch/src/cri/proto"
  cp -r src/cri/containerd-events/proto "$scratch/src/cri/containerd-events/proto"
  cp -r src/cri/containerd-content/proto "$scratch/src/cri/containerd-content/proto"
  cp -r src/cm/devicemanager/proto "$scratch/src/cm/devicemanager/proto"
  cp -r src/podresources/proto "$scratch/src/podresources/proto"
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
