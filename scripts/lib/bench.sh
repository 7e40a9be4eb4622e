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

# fill_outbox DB_PORT DATABASE APP_CODE ROWS: the scan's backlog, as seedbench -mode scan fills
# its own: ROWS WalletGiftDebited events in DATABASE's wallet_outbox under APP_CODE, of
# gift_count 1 each over 1,000 walls, 20 gifts and 100 senders at random, with distinct
# created_at_ms over a minute ago.
fill_outbox() {
  local port=$1 db=$2 app=$3 rows=$4
  mariadb --no-defaults -h127.0.0.1 -P"$port" -uroot "$db" -e "
    SET @base = CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED) - $rows - 60000;
    INSERT INTO wallet_outbox (app_code, event_id, event_type, transaction_id, command_id,
                               payload, created_at_ms)
    SELECT '$app', CONCAT('$app-', seq), 'WalletGiftDebited', CONCAT('tx-$app-', seq),
           CONCAT('cmd-$app-', seq),
           CONCAT('{\"target_user_id\":', 1 + FLOOR(RAND() * 1000), ',\"gift_id\":\"g',
                  FLOOR(RAND() * 20), '\",\"gift_count\":1,\"sender_user_id\":',
                  1 + FLOOR(RAND() * 100), ',\"coin_amount\":10}'),
           @base + seq
    FROM seq_1_to_$rows" || die "cannot fill the outbox of $app"
}

# scan_counts DB_PORT DATABASE APP_CODE: "exact=yes|no left=N" after a scan of APP_CODE's backlog
# that reported EVENTS (the 4th argument) projected: exact when the ledger's done rows and the
# wall's SUM(gift_count) both equal EVENTS (every event has gift_count 1; the app starts empty);
# left counts the outbox rows without a done or dead ledger row. As seedbench checks its own.
scan_counts() {
  local port=$1 db=$2 app=$3 events=$4
  local ledger_done wall_sum left
  read -r ledger_done wall_sum left < <(mariadb --no-defaults -h127.0.0.1 -P"$port" -uroot -N "$db" -e "
    SELECT (SELECT COUNT(*) FROM wallet_projection_events WHERE app_code = '$app'
              AND status = 'done'),
           (SELECT COALESCE(SUM(gift_count), 0) FROM user_gift_wall WHERE app_code = '$app'),
           (SELECT COUNT(*) FROM wallet_outbox wo LEFT JOIN wallet_projection_events pe
              ON pe.app_code = wo.app_code AND pe.event_id = wo.event_id
              AND pe.status IN ('done', 'dead')
            WHERE wo.app_code = '$app' AND pe.event_id IS NULL)") ||
    die "cannot count the scan's results for $app"
  local exact=no
  [ "$ledger_done" = "$events" ] && [ "$wall_sum" = "$events" ] && exact=yes
  echo "exact=$exact left=$left"
}

# seed_rows DB_PORT DB_PID SECONDS SCAN_ROWS OUT_DIR STREAMS...: the peer, the seed's own Go code
# (GIFTWALL_SEEDGO, default ../shared/seedgo beside the repository), built by its build.sh into
# OUT_DIR and run as a child process against the same MariaDB, on a database and schema of its
# own (giftwall_seed): its ProjectGiftWallMessage per new event (RESULT mode=seed) and its
# ProjectPendingGiftWallEvents over SCAN_ROWS outbox rows (mode=seedscan) at each stream count,
# as RESULT lines on stdout. Sets SEED_NOTE to why it ran no rows (absent, or not built), or
# leaves it empty. Call it without a subshell (seed_rows ... >>FILE) to see SEED_NOTE.
# shellcheck disable=SC2034  # SEED_NOTE is the caller's to read
seed_rows() {
  local port=$1 db_pid=$2 seconds=$3 rows=$4 out=$5
  shift 5
  local seedgo=${GIFTWALL_SEEDGO:-$GIFTWALL_ROOT/../shared/seedgo}
  local shown=${seedgo#"$GIFTWALL_ROOT"/}
  SEED_NOTE=
  if [ ! -d "$seedgo" ]; then
    SEED_NOTE="skipped: $shown not found"
    return 0
  fi
  if [ ! -f "$seedgo/build.sh" ]; then
    SEED_NOTE="skipped: $shown has no build.sh"
    return 0
  fi
  log "seed: building $shown (its build.sh, Go offline) into ${out#"$GIFTWALL_ROOT"/}"
  mkdir -p "$out"
  local seedbench
  if ! seedbench=$(SEEDGO_OUT=$out bash "$seedgo/build.sh" 2>"$out/build.log" | tail -1) ||
    [ ! -x "$seedbench" ]; then
    tail -5 "$out/build.log" >&2
    SEED_NOTE="skipped: $shown did not build (Go; see ${out#"$GIFTWALL_ROOT"/}/build.log)"
    return 0
  fi
  mariadb --no-defaults -h127.0.0.1 -P"$port" -uroot -e \
    'CREATE DATABASE IF NOT EXISTS giftwall_seed CHARACTER SET utf8mb4 COLLATE utf8mb4_bin' ||
    die "cannot create database giftwall_seed"
  local dsn="root@tcp(127.0.0.1:$port)/giftwall_seed"
  if ! "$seedbench" -dsn "$dsn" -prepare >&2; then
    SEED_NOTE="skipped: seedbench -prepare failed"
    return 0
  fi
  # Message events spread as project's (1,000 walls, 20 gifts, 5,000 senders); the scan's backlog
  # as fill_outbox's (100 senders).
  local mode s flags result
  for mode in message scan; do
    flags=(-senders 5000)
    [ "$mode" = scan ] && flags=(-rows "$rows")
    for s in "$@"; do
      log "seed: $mode, $s streams"
      # Not tee /dev/stderr: that would reopen, and truncate, a log file that stderr goes to.
      if result=$(python3 "$GIFTWALL_ROOT/bench/report.py" seed --db_pid="$db_pid" -- \
        "$seedbench" -dsn "$dsn" -mode "$mode" -streams "$s" -seconds "$seconds" "${flags[@]}"); then
        echo "$result"
        echo "$result" >&2
      else
        log "seed: $mode at $s streams gave no result"
      fi
    done
  done
}
