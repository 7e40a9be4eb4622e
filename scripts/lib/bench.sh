# Helpers of scripts/bench only: durations, and the raw database measurement with sysbench.
# shellcheck shell=bash

# duration_seconds DURATION: 10s, 1.5s, 500ms, 2m -> seconds, as a decimal number.
duration_seconds() {
  awk -v d="$1" 'BEGIN {
    if (match(d, /^[0-9]+(\.[0-9]+)?/) == 0) exit 1
    n = substr(d, 1, RLENGTH); u = substr(d, RLENGTH + 1)
    if (u == "ms") n /= 1000; else if (u == "m") n *= 60; else if (u == "h") n *= 3600;
    else if (u != "s") exit 1
    if (n <= 0) exit 1
    print n
  }' || die "not a duration: $1 (e.g. 10s, 500ms, 1m)"
}

# sysbench_oltp_insert DB_PORT: sets SYSBENCH to sysbench's oltp_insert (single-row autocommit
# inserts) against the database on DB_PORT, into one table, as the projection's tables are one
# set that every call shares.
sysbench_oltp_insert() {
  SYSBENCH=(sysbench oltp_insert --db-driver=mysql --mysql-host=127.0.0.1 --mysql-port="$1"
    --mysql-user=root --mysql-db=sbtest --tables=1 --table-size=10000)
}

sysbench_prepare() {
  local port=$1
  mariadb --no-defaults -h127.0.0.1 -P"$port" -uroot -e 'CREATE DATABASE sbtest'
  sysbench_oltp_insert "$port"
  "${SYSBENCH[@]}" prepare >/dev/null || die "sysbench prepare failed"
}

# sysbench_raw DB_PORT STREAMS SECONDS DB_PID: oltp_insert at STREAMS connections for SECONDS
# (rounded up: sysbench takes whole seconds); prints one RESULT line in load_bench's format,
# with the CPU sysbench and the database used.
sysbench_raw() {
  local port=$1 streams=$2 seconds=$3 db_pid=$4
  local whole
  whole=$(awk -v s="$seconds" 'BEGIN { w = int(s); if (w < s) w++; print w }')
  sysbench_oltp_insert "$port"
  python3 "$GIFTWALL_ROOT/bench/report.py" sysbench --streams="$streams" --db_pid="$db_pid" -- \
    "${SYSBENCH[@]}" --threads="$streams" --time="$whole" --histogram=on --percentile=99 run
}
