#!/usr/bin/env bash
# The test phase of `make test`, on two cores within its time budget: the Swift tests (beside a throwaway
# PostgreSQL, four at a time: they mostly wait on brokers, servers and child processes, and each blocking
# call runs on a thread of its own, see Tests/TestSupport/Subprocess.swift) while the deployment and
# interface checks and the operator console's browser test run beside them against the built binary. Each part's output is printed whole, the Swift
# tests' first; the status is non-zero when any part failed.
#   scripts/run-tests.sh [swift test arguments...]
set -uo pipefail
cd "$(dirname "$0")/.."

venv=.build/deploy-venv/bin/python
logs=.build/test-logs
mkdir -p "$logs"
width="${TEST_PARALLELISM:-4}"

started=$(date +%s)
( $venv scripts/validate-deploy.py > "$logs/validate-deploy.txt" 2>&1; echo $? > "$logs/validate-deploy.status"
  $venv scripts/check-interfaces.py > "$logs/check-interfaces.txt" 2>&1; echo $? > "$logs/check-interfaces.status"
  SE_OFFLINE=true $venv scripts/console-browser-test.py > "$logs/console-browser-test.txt" 2>&1; echo $? > "$logs/console-browser-test.status" ) &
checks=$!

if [ $# -gt 0 ]; then
  SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH="$width" scripts/with-postgres.sh swift test --skip-build --parallel "$@"
  swift_status=$?
else
  # Tests that count the whole process's threads run alone, after the others: beside them, the other
  # tests' Kafka clients start and stop threads of their own.
  alone="ClientLifetimeTests"
  SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH="$width" scripts/with-postgres.sh swift test --skip-build --parallel --skip "$alone"
  swift_status=$?
  swift test --skip-build --filter "$alone" || swift_status=1
fi
swift_done=$(date +%s)
wait "$checks"

status=$swift_status
for part in validate-deploy check-interfaces console-browser-test; do
  echo
  echo "== scripts/$part.py"
  cat "$logs/$part.txt"
  part_status=$(cat "$logs/$part.status" 2>/dev/null || echo 1)
  [ "$part_status" -eq 0 ] || status=1
done
echo
echo "run-tests: swift tests $((swift_done - started)) s (exit $swift_status), all parts $(( $(date +%s) - started )) s"
exit $status
