#!/usr/bin/env bash
# The status differential's full form: every scenario of test/differential (pod
# statuses and events against upstream v1.30's) at once on one kubelet, through the test API server
# and a private containerd (scripts/runtime-stack.sh). `npm test` runs the short form, a third of
# them (test/integration/differential-short.test.ts). DIFFERENTIAL_ONLY=<regexp> selects scenarios.
set -euo pipefail
cd "$(dirname "$0")/.."

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
node --import tsx --test --test-concurrency=1 --test-timeout=900000 --test-reporter=spec test/differential/differential.test.ts
