#!/usr/bin/env bash
# Runs CMD beside a throwaway PostgreSQL server: a fresh cluster in a temp dir on a free loopback
# port, with database `tollgate_test`, whose URL is exported as TEST_POSTGRES_URL. The
# (The name does not start with TOLLGATE_: tollgate refuses unknown TOLLGATE_ variables, and the
# tests start tollgate binaries that inherit the environment.)
# server is stopped and its dir removed however CMD ends; the exit status is CMD's.
#   scripts/with-postgres.sh swift test --skip-build --filter StoreTests
set -euo pipefail

if [ $# -eq 0 ]; then
  echo "usage: $0 CMD [ARGS...]" >&2
  exit 2
fi

bindir="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)"
if [ -z "$bindir" ] || [ ! -x "$bindir/initdb" ]; then
  echo "with-postgres: no PostgreSQL server under /usr/lib/postgresql/*/bin (install the postgresql package, e.g. make deps)" >&2
  exit 1
fi

# initdb refuses to run as root: the cluster then belongs to the `postgres` OS user. /tmp, not
# TMPDIR, because that user must be able to reach the dir.
if [ "$(id -u)" -eq 0 ]; then
  dir="$(mktemp -d /tmp/tollgate-pg.XXXXXX)"
  chown postgres: "$dir"
  as_owner() {
    if command -v runuser >/dev/null; then runuser -u postgres -- "$@"
    else su postgres -s /bin/sh -c "$(printf '%q ' "$@")"; fi
  }
else
  dir="$(mktemp -d "${TMPDIR:-/tmp}/tollgate-pg.XXXXXX")"
  as_owner() { "$@"; }
fi
data="$dir/data"

cleanup() {
  local status=$?
  if [ -f "$data/postmaster.pid" ]; then
    as_owner "$bindir/pg_ctl" -D "$data" -m fast -w stop >/dev/null 2>&1 || true
  fi
  rm -rf "$dir"
  exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

if ! as_owner "$bindir/initdb" -D "$data" --auth=trust --username=postgres --encoding=UTF8 --locale=C --no-sync \
    >"$dir/initdb.log" 2>&1; then
  echo "with-postgres: initdb failed:" >&2
  cat "$dir/initdb.log" >&2
  exit 1
fi
cat >>"$data/postgresql.conf" <<CONF
listen_addresses = '127.0.0.1'
unix_socket_directories = '$dir'
max_connections = 200
# Throwaway data: durability is not worth the time.
fsync = off
synchronous_commit = off
full_page_writes = off
CONF

# A port may be taken between choosing and binding (another run of this script, say): try
# others. Below the kernel's ephemeral range, so it does not collide with tests' freePort().
started=""
for _ in $(seq 1 20); do
  port=$((20000 + RANDOM % 12000))
  echo "port = $port" >>"$data/postgresql.conf"
  if as_owner "$bindir/pg_ctl" -D "$data" -l "$dir/server.log" -w -t 30 start >/dev/null 2>&1; then
    started=yes
    break
  fi
done
if [ -z "$started" ]; then
  echo "with-postgres: the server did not start:" >&2
  tail -n 20 "$dir/server.log" >&2 || true
  exit 1
fi

for _ in $(seq 1 50); do
  "$bindir/pg_isready" -q -h 127.0.0.1 -p "$port" -t 1 && break
  sleep 0.2
done
"$bindir/createdb" -h 127.0.0.1 -p "$port" -U postgres tollgate_test

export TEST_POSTGRES_URL="postgres://postgres@127.0.0.1:$port/tollgate_test"
echo "with-postgres: PostgreSQL $("$bindir/postgres" --version | awk '{print $3}') at $TEST_POSTGRES_URL" >&2
set +e
"$@"
status=$?
set -e
exit "$status"
