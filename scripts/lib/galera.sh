#!/usr/bin/env bash
# A 3-node MariaDB Galera cluster on loopback, for tests (galera_test) and by hand; each node in a
# directory of its own with its own defaults file, so that nothing reads /etc/mysql, and
# mariabackup state transfers (rsync's drops to nobody when run as root).
#   galera.sh start DIR BASE   install and start the nodes, the first bootstrapping; returns
#                              once all three are Synced
#   galera.sh kill DIR N       SIGKILL node N (1..3)
#   galera.sh rejoin DIR N     start node N again; returns once it is Synced
#   galera.sh stop DIR         stop every node
# Node N serves SQL on 127.0.0.1:BASE+N, as root without a password; it talks Galera on
# BASE+10N, takes incremental transfers on BASE+10N+1 and state transfers on BASE+10N+2.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

node_port() { echo $(($(cat "$1/base") + $2)); }

sql() {
  local dir=$1 n=$2
  shift 2
  mariadb --no-defaults -h127.0.0.1 -P"$(node_port "$dir" "$n")" -uroot -N "$@"
}

write_config() {
  local dir=$1 n=$2 base
  base=$(cat "$dir/base")
  local galera=$((base + 10 * n))
  cat >"$dir/node$n.cnf" <<CNF
[mysqld]
datadir=$dir/node$n/data
port=$((base + n))
socket=$dir/node$n/mariadb.sock
pid-file=$dir/node$n/mariadb.pid
log-error=$dir/node$n/error.log
tmpdir=$dir/node$n/tmp
bind-address=127.0.0.1
$([ "$(id -u)" -eq 0 ] && echo "user=root")
innodb-buffer-pool-size=64M
innodb-flush-log-at-trx-commit=2
max-connections=300
binlog-format=ROW
innodb-autoinc-lock-mode=2
wsrep-on=ON
wsrep-provider=/usr/lib/galera/libgalera_smm.so
wsrep-cluster-name=giftwall-test
wsrep-cluster-address=gcomm://127.0.0.1:$((base + 10)),127.0.0.1:$((base + 20)),127.0.0.1:$((base + 30))
wsrep-node-address=127.0.0.1:$galera
wsrep-node-name=node$n
wsrep-provider-options="gmcast.listen_addr=tcp://127.0.0.1:$galera;ist.recv_addr=127.0.0.1:$((galera + 1));gcache.size=64M"
wsrep-sst-method=mariabackup
wsrep-sst-auth=root:
wsrep-sst-receive-address=127.0.0.1:$((galera + 2))
CNF
}

# start_node DIR N [--wsrep-new-cluster]: starts node N and waits until it is Synced.
start_node() {
  local dir=$1 n=$2 state=""
  shift 2
  setsid mariadbd --defaults-file="$dir/node$n.cnf" "$@" >/dev/null 2>&1 &
  echo $! >"$dir/node$n.pid"
  for _ in $(seq 1 360); do
    state=$(sql "$dir" "$n" -e "SHOW STATUS LIKE 'wsrep_local_state_comment'" 2>/dev/null |
      cut -f2 || true)
    [ "$state" = Synced ] && return 0
    kill -0 "$(cat "$dir/node$n.pid")" 2>/dev/null || break
    sleep 0.5
  done
  tail -30 "$dir/node$n/error.log" >&2
  die "galera node $n did not reach Synced (last state: ${state:-none})"
}

case ${1:-} in
  start)
    dir=$2
    mkdir -p "$dir"
    echo "$3" >"$dir/base"
    for n in 1 2 3; do
      mkdir -p "$dir/node$n/tmp"
      write_config "$dir" "$n"
      mariadb-install-db --no-defaults --datadir="$dir/node$n/data" --user="$(id -un)" \
        --tmpdir="$dir/node$n/tmp" \
        --auth-root-authentication-method=normal --skip-test-db >"$dir/node$n/install.log" 2>&1 ||
        { cat "$dir/node$n/install.log" >&2; die "mariadb-install-db failed"; }
    done
    start_node "$dir" 1 --wsrep-new-cluster
    start_node "$dir" 2
    start_node "$dir" 3
    ;;
  kill) kill -9 "$(cat "$2/node$3.pid")" ;;
  rejoin) start_node "$2" "$3" ;;
  stop)
    for n in 1 2 3; do
      [ -f "$2/node$n.pid" ] && kill "$(cat "$2/node$n.pid")" 2>/dev/null || true
    done
    for n in 1 2 3; do
      pid=$(cat "$2/node$n.pid" 2>/dev/null || true)
      for _ in $(seq 1 60); do
        [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || break
        sleep 0.5
      done
      [ -n "$pid" ] && kill -9 "$pid" 2>/dev/null || true
    done
    ;;
  *)
    sed -n '2,11p' "$0" >&2
    exit 2
    ;;
esac
