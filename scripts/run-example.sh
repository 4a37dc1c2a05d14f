#!/usr/bin/env bash
# The README's first command: everything a fresh machine needs but Node.js 20 and npm, then
# tskubelet in the foreground with the pods in examples/. Extra arguments go to tskubelet (e.g. --v=4).
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v node >/dev/null || ! command -v npm >/dev/null ||
  [ "$(node -p 'process.versions.node.split(".")[0]')" -lt 20 ]; then
  echo "run-example.sh: tskubelet needs Node.js 20 or newer and npm on PATH (Debian 12 ships 18: use NodeSource or nvm)" >&2
  exit 1
fi

bash scripts/runtime-stack.sh install
[ -d node_modules ] || npm ci --no-audit --no-fund
npm run --silent build
bash scripts/runtime-stack.sh images
bash scripts/runtime-stack.sh up
eval "$(bash scripts/runtime-stack.sh env)"

# The stack's endpoint goes in a drop-in: as a flag it would open the run with upstream's deprecation warning.
mkdir -p .stack/example-config.d
printf 'apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\ncontainerRuntimeEndpoint: %s\n' \
  "$CONTAINER_RUNTIME_ENDPOINT" > .stack/example-config.d/10-runtime.conf

echo "tskubelet: pods from examples/; bin/tskubelet get pods -A to list them, /healthz on http://127.0.0.1:10248 (Ctrl-C to stop)"
exec bin/tskubelet \
  --config="$PWD/scripts/example-kubelet-config.yaml" \
  --config-dir="$PWD/.stack/example-config.d" \
  --root-dir="$PWD/.stack/kubelet" \
  "$@"
