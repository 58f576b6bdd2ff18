#!/usr/bin/env bash
# `make bench`: the gateway under load, then the per-core micro-benchmarks, in one run.
#
#   1. release build of tollgate, tollgate-bench and tollgate-load;
#   2. `tollgate-load prepare` generates every sender's keys and the gateway's configuration;
#   3. the embedded broker (`tollgate broker`, acks=all) on CPU 0, `tollgate serve` pinned to CPU 1;
#   4. `tollgate-load run` (driving from CPU 0): raw ES256/RS256 verify rates on CPU 1 while the gateway
#      is idle, the client's ceiling on /healthz, then per sender a warm-up, the closed-loop maximum
#      and an open-loop run at half of it; writes bench/results/latest.json and prints the table;
#   5. the gateway stops; `tollgate-load cold-start` starts a fresh one and, the moment its /readyz answers
#      200, drives 16 connections of signed Apple deliveries for 1.5 s: the first seconds' latencies go
#      into latest.json as cold_start;
#   6. `tollgate work` pinned to the gateway's core, `tollgate-load purchases` drives POST /v1/purchases
#      with Apple signed transactions the same way (each a new purchase, answered once applied): into
#      latest.json as `purchases`, beside the raw ES256 rate; then the same against `tollgate dev` (its
#      embedded broker on the same core) as `purchases_dev`;
#   7. the broker stops; `tollgate-bench` micro-benchmarks (verifiers.json, projection.json, spool.json,
#      webhooks.json: signed deliveries per second on one core, then the time from a webhook's 2xx at a
#      `tollgate dev` to its delivery arriving, at half that rate), then merged into latest.json.
# Every process started here is stopped however the run ends. Exit status: 1 when the load run was
# invalid (non-2xx answers, lost connections), else that of the micro-benchmarks.
#
# `scripts/bench.sh soak` (`make bench-soak`) starts the same processes, then runs `tollgate-load soak`:
# every sender interleaved, open loop at BENCH_SOAK_RATE (500) req/s for BENCH_SOAK_SECONDS (300),
# the gateway's memory sampled every 5 s, into bench/results/soak.json (flat: under 0.5 MiB/min over the last minute).
#
# `scripts/bench.sh profile` (`make profile`) runs the load as `bench` does, `perf record`s the gateway during each
# sender's closed loop, and writes where its CPU goes, by layer, in microseconds per request (scripts/perf-layers.py)
# to bench/results/profile.json; latest.json is left alone.
#
# Environment: SWIFT (swift), BENCH_SOURCES (all five, comma-separated), BENCH_SECONDS (8, closed
# loop), BENCH_OPEN_SECONDS (8), BENCH_CONNECTIONS (64), BENCH_SKIP_MICRO=1 (load run only),
# BENCH_TOLLGATE (this tree's release build): another `tollgate` binary (its gateway, workers and embedded
# broker) to measure with this tree's load generator and configuration, so two builds compare under one
# harness (docs/performance.md).
set -euo pipefail
cd "$(dirname "$0")/.."

mode="${1:-bench}"
case "$mode" in bench|soak|profile) ;; *) echo "usage: $0 [bench|soak|profile]" >&2; exit 2 ;; esac

swift=${SWIFT:-swift}
gateway_cpu=1
client_cpu=0
results=bench/results

if [ "$(nproc)" -lt 2 ]; then
  echo "bench: needs two cores (the gateway on one, broker and load generator on the other)" >&2
  exit 1
fi

for product in tollgate tollgate-bench tollgate-load; do
  "$swift" build -c release --product "$product"
done
bin="$("$swift" build -c release --show-bin-path)"
tollgate="${BENCH_TOLLGATE:-$bin/tollgate}"

work="$(mktemp -d /tmp/tollgate-bench.XXXXXX)"
broker_pid=""
gateway_pid=""
workers_pid=""
stop() {
  local pid=$1
  [ -n "$pid" ] || return 0
  kill -TERM "$pid" 2>/dev/null || return 0
  for _ in $(seq 1 300); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.1; done
  kill -KILL "$pid" 2>/dev/null || true
}
cleanup() {
  [ -s "$work/cold-start.pid" ] && stop "$(cat "$work/cold-start.pid")"
  stop "$gateway_pid"
  stop "$workers_pid"
  stop "$broker_pid"
  rm -rf "$work"
}
trap cleanup EXIT
# The port a started process prints (`<name>: listening on http://127.0.0.1:<port>`), once it does;
# empty when it exits first or after 30 s.
listening_port() {
  local pid=$1 out=$2 name=$3 found=""
  for _ in $(seq 1 300); do
    found="$(sed -n "s|^$name: listening on http://127.0.0.1:\\([0-9]*\\)\\( .*\\)\\{0,1\\}\$|\\1|p" "$out")"
    [ -n "$found" ] && break
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  echo "$found"
}
trap 'exit 130' INT TERM

"$bin/tollgate-load" prepare --dir "$work" >/dev/null

taskset -c "$client_cpu" "$tollgate" broker --config "$work/tollgate.yaml" --port-file "$work/bootstrap" >"$work/broker.log" 2>&1 &
broker_pid=$!
for _ in $(seq 1 200); do [ -s "$work/bootstrap" ] && break; sleep 0.1; done
[ -s "$work/bootstrap" ] || { echo "bench: the broker did not start:" >&2; cat "$work/broker.log" >&2; exit 1; }

TOLLGATE_KAFKA_BROKERS="$(cat "$work/bootstrap")" taskset -c "$gateway_cpu" \
  "$tollgate" serve --config "$work/tollgate.yaml" >"$work/gateway.out" 2>"$work/gateway.log" &
gateway_pid=$!
port="$(listening_port "$gateway_pid" "$work/gateway.out" gateway)"
[ -n "$port" ] || { echo "bench: the gateway did not start:" >&2; tail -20 "$work/gateway.log" >&2; exit 1; }

commit="$(git rev-parse HEAD)"
dirty=()
# The results files are rewritten by this run; any other change means the code measured is not HEAD's.
git diff --quiet HEAD -- . ":(exclude)$results" || dirty=(--dirty)
sources=()
[ -n "${BENCH_SOURCES:-}" ] && sources=(--sources "$BENCH_SOURCES")

load_status=0
if [ "$mode" = soak ]; then
  "$bin/tollgate-load" soak --dir "$work" --port "$port" --gateway-pid "$gateway_pid" \
    --gateway-cpu "$gateway_cpu" --client-cpu "$client_cpu" --commit "$commit" "${sources[@]}" \
    --rate "${BENCH_SOAK_RATE:-500}" --seconds "${BENCH_SOAK_SECONDS:-300}" --json "$results/soak.json" || load_status=$?
  kill -0 "$gateway_pid" 2>/dev/null || { echo "bench: the gateway exited during the soak:" >&2; tail -20 "$work/gateway.log" >&2; exit 1; }
  exit "$load_status"
fi
if [ "$mode" = profile ]; then
  command -v perf >/dev/null || { echo "bench: perf is missing (Debian's linux-perf; make profile installs it)" >&2; exit 1; }
  mkdir -p "$work/perf"
  "$bin/tollgate-load" run --dir "$work" --port "$port" --gateway-pid "$gateway_pid" \
    --gateway-cpu "$gateway_cpu" --client-cpu "$client_cpu" --broker-cpu "$client_cpu" \
    --connections "${BENCH_CONNECTIONS:-64}" --seconds "${BENCH_SECONDS:-8}" --open-seconds "${BENCH_OPEN_SECONDS:-4}" \
    --commit "$commit" "${dirty[@]}" "${sources[@]}" --perf-dir "$work/perf" --json "$work/profile-run.json" || load_status=$?
  recorded=()
  for data in "$work"/perf/*.data; do recorded+=("$(basename "$data" .data)=$data"); done
  python3 scripts/perf-layers.py --results "$work/profile-run.json" --json "$results/profile.json" "${recorded[@]}" || load_status=1
  exit "$load_status"
fi
"$bin/tollgate-load" run --dir "$work" --port "$port" --gateway-pid "$gateway_pid" \
  --gateway-cpu "$gateway_cpu" --client-cpu "$client_cpu" --broker-cpu "$client_cpu" \
  --connections "${BENCH_CONNECTIONS:-64}" --seconds "${BENCH_SECONDS:-8}" --open-seconds "${BENCH_OPEN_SECONDS:-8}" \
  --commit "$commit" "${dirty[@]}" "${sources[@]}" --json "$results/latest.json" || load_status=$?
if ! kill -0 "$gateway_pid" 2>/dev/null; then
  echo "bench: the gateway exited during the run:" >&2
  tail -20 "$work/gateway.log" >&2
  load_status=1
fi
stop "$gateway_pid"; gateway_pid=""
[ -s "$results/latest.json" ] || exit 1
# The first seconds of a fresh gateway: started by the load generator once its deliveries are signed,
# driven the moment /readyz answers 200 (it writes the gateway's pid for the cleanup above).
"$bin/tollgate-load" cold-start --dir "$work" --tollgate "$tollgate" --brokers "$(cat "$work/bootstrap")" \
  --gateway-cpu "$gateway_cpu" --client-cpu "$client_cpu" --pid-file "$work/cold-start.pid" --json "$results/latest.json" || load_status=1
# POST /v1/purchases with Apple signed transactions: `tollgate work` (its own API port, a SQLite store)
# pinned to the gateway's core, each request verified, published and applied before it is answered.
TOLLGATE_KAFKA_BROKERS="$(cat "$work/bootstrap")" taskset -c "$gateway_cpu" \
  "$tollgate" work --config "$work/workers.yaml" >"$work/workers.out" 2>"$work/workers.log" &
workers_pid=$!
workers_port="$(listening_port "$workers_pid" "$work/workers.out" workers)"
if [ -n "$workers_port" ]; then
  "$bin/tollgate-load" purchases --dir "$work" --port "$workers_port" --gateway-pid "$workers_pid" \
    --gateway-cpu "$gateway_cpu" --client-cpu "$client_cpu" --connections "${BENCH_CONNECTIONS:-64}" \
    --seconds "${BENCH_SECONDS:-8}" --open-seconds "${BENCH_OPEN_SECONDS:-8}" --json "$results/latest.json" || load_status=1
else
  echo "bench: tollgate work did not start:" >&2; tail -20 "$work/workers.log" >&2; load_status=1
fi
stop "$workers_pid"; workers_pid=""
stop "$broker_pid"; broker_pid=""
# The same against `tollgate dev` as it ships (gateway, workers and its embedded broker in one process on
# the gateway's core): into latest.json as `purchases_dev`.
taskset -c "$gateway_cpu" "$tollgate" dev --config "$work/dev.yaml" >"$work/dev.out" 2>"$work/dev.log" &
workers_pid=$!
dev_port="$(listening_port "$workers_pid" "$work/dev.out" gateway)"
if [ -n "$dev_port" ]; then
  "$bin/tollgate-load" purchases --dir "$work" --port "$dev_port" --gateway-pid "$workers_pid" --as purchases_dev \
    --gateway-cpu "$gateway_cpu" --client-cpu "$client_cpu" --connections "${BENCH_CONNECTIONS:-64}" \
    --seconds "${BENCH_SECONDS:-8}" --open-seconds "${BENCH_OPEN_SECONDS:-8}" --json "$results/latest.json" || load_status=1
else
  echo "bench: tollgate dev did not start:" >&2; tail -20 "$work/dev.log" >&2; load_status=1
fi
stop "$workers_pid"; workers_pid=""

if [ "${BENCH_SKIP_MICRO:-0}" != 1 ]; then
  echo
  taskset -c "$gateway_cpu" "$bin/tollgate-bench" --rounds 5 --json "$results/verifiers.json"
  echo
  scripts/with-postgres.sh bash -c "BENCH_POSTGRES_URL=\"\$TEST_POSTGRES_URL\" '$bin/tollgate-bench' --projection --json '$results/projection.json'"
  echo
  "$bin/tollgate-bench" --spool --json "$results/spool.json"
  echo
  # Outbound webhooks: the dispatcher on the gateway's core, its HTTPS receiver on the other; then a
  # `tollgate dev` on the gateway's core, driven and received from the other, at half that rate.
  taskset -c "$gateway_cpu" "$bin/tollgate-bench" --webhooks --receiver-cpu "$client_cpu" --json "$results/webhooks.json"
  taskset -c "$client_cpu" "$bin/tollgate-bench" --webhook-latency --tollgate "$tollgate" --dev-cpu "$gateway_cpu" \
    --json "$results/webhooks.json"
  "$bin/tollgate-load" report --json "$results/latest.json" \
    --verifiers "$results/verifiers.json" --projection "$results/projection.json" --webhooks "$results/webhooks.json"
fi
exit "$load_status"
