#!/usr/bin/env bash
# The whole test suite: type-check and build, unit tests, then integration tests against a private
# containerd that this script starts and stops (scripts/runtime-stack.sh).
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/runtime-stack.sh install
bash scripts/runtime-stack.sh images
npm run --silent build

# test/fuzz runs in its short form here (a few hundred cases); `npm run fuzz` is the long one.
mapfile -t unit < <(find test/unit test/fuzz -name '*.test.ts' 2>/dev/null | sort)
mapfile -t integration < <(find test/integration -name '*.test.ts' | sort)
# The chaos suite's short form (30 pods, 3 kills of each, a 20 s outage); `npm run chaos` is the long one.
integration+=(test/chaos/chaos.test.ts)

status=0
if [ ${#unit[@]} -gt 0 ]; then
  echo "== unit tests (${#unit[@]} files)"
  node --import tsx --test --test-reporter=spec "${unit[@]}" || status=1
fi

if [ ${#integration[@]} -gt 0 ] && [ "${SKIP_INTEGRATION:-}" != 1 ]; then
  echo "== integration tests (${#integration[@]} files) against a private containerd"
  # Leave the stack as we found it: a developer's running containerd stays up, CI's is stopped.
  if ! bash scripts/runtime-stack.sh status >/dev/null 2>&1; then
    trap 'bash scripts/runtime-stack.sh down' EXIT
  fi
  bash scripts/runtime-stack.sh up
  set -a # export the stack's endpoint, pod CIDR and folders to the tests
  eval "$(bash scripts/runtime-stack.sh env)"
  set +a
  # One file at a time: they share one containerd, and each test cleans up the pods it started.
  node --import tsx --test --test-concurrency=1 --test-timeout=600000 --test-reporter=spec "${integration[@]}" || status=1
fi
exit $status
