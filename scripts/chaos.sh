#!/usr/bin/env bash
# The chaos suite's long form: 100 static pods, the kubelet killed 10 times and
# containerd 6 times, a restart among hostile manifests, then a 5-minute API server outage in cluster
# mode, against the built kubelet and a private containerd (scripts/runtime-stack.sh). CI runs the
# short form of the same file through scripts/test.sh. CHAOS_PODS, CHAOS_KUBELET_KILLS,
# CHAOS_CONTAINERD_KILLS and CHAOS_OUTAGE_S override the form.
set -euo pipefail
cd "$(dirname "$0")/.."

export CHAOS_PODS=${CHAOS_PODS:-100}
export CHAOS_KUBELET_KILLS=${CHAOS_KUBELET_KILLS:-10}
export CHAOS_CONTAINERD_KILLS=${CHAOS_CONTAINERD_KILLS:-6}
export CHAOS_OUTAGE_S=${CHAOS_OUTAGE_S:-300}

bash scripts/runtime-stack.sh install
bash scripts/runtime-stack.sh images
npm run --silent build

# Leave the stack as we found it: a developer's running containerd stays up.
if ! bash scripts/runtime-stack.sh status >/dev/null 2>&1; then
  trap 'bash scripts/runtime-stack.sh down' EXIT
fi
bash scripts/runtime-stack.sh up
set -a
eval "$(bash scripts/runtime-stack.sh env)"
set +a
echo "== chaos: $CHAOS_PODS pods, $CHAOS_KUBELET_KILLS kubelet kills, $CHAOS_CONTAINERD_KILLS containerd kills, ${CHAOS_OUTAGE_S} s API server outage"
node --import tsx --test --test-concurrency=1 --test-timeout=7200000 --test-reporter=spec test/chaos/chaos.test.ts
