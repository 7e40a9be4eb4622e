# Shared by scripts/run, scripts/test and scripts/bench: install what a fresh Debian 12 machine
# lacks, build, and run a private MariaDB that touches no system service.
# shellcheck shell=bash

GIFTWALL_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"

# Debian 12 packages the build, the tests and the private database need.
GIFTWALL_PACKAGES=(
  cmake g++ make pkg-config
  protobuf-compiler protobuf-compiler-grpc libprotobuf-dev
  libgrpc++-dev libgrpc-dev grpc-proto
  libabsl-dev libgoogle-glog-dev libgtest-dev libgmock-dev libbenchmark-dev
  libmysqlcppconn-dev prometheus-cpp-dev libutf8proc-dev
  mariadb-server mariadb-client tzdata
)

# What the test suite needs besides: promtool (package prometheus) checks the alert rules, openssl
# makes the TLS tests' certificates, Go runs the payload's differential test, faketime runs a
# server with a skewed clock (DESIGN §2.9), and tests/deploy runs on Node.js (nodejs and npm,
# unless the machine has its own npm already).
GIFTWALL_TEST_PACKAGES=(prometheus openssl golang-go faketime)
command -v npm >/dev/null || GIFTWALL_TEST_PACKAGES+=(nodejs npm)
# What scripts/test --full needs on top: clang and libFuzzer fuzz the parsers (fuzz/run), and
# galera-4, mariadb-backup and socat run a Galera cluster (scripts/lib/galera.sh, galera_test).
GIFTWALL_FULL_TEST_PACKAGES=(clang libfuzzer-14-dev galera-4 mariadb-backup socat)

log() { printf '[%s] %s\n' "$(basename "$0")" "$*" >&2; }
die() { log "error: $*"; exit 1; }

# install_packages [PKG...]: apt-get installs whichever of them (default: GIFTWALL_PACKAGES) is
# missing.
install_packages() {
  local wanted=("$@")
  [ ${#wanted[@]} -eq 0 ] && wanted=("${GIFTWALL_PACKAGES[@]}")
  local missing=()
  local pkg
  for pkg in "${wanted[@]}"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  log "installing: ${missing[*]}"
  local sudo=()
  [ "$(id -u)" -eq 0 ] || sudo=(sudo)
  export DEBIAN_FRONTEND=noninteractive
  "${sudo[@]}" apt-get update -qq || die "apt-get update failed"
  # Installing mariadb-server must not start the system service: a policy-rc.d denies it.
  local policy=/usr/sbin/policy-rc.d created_policy=0
  if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\nexit 101\n' | "${sudo[@]}" tee "$policy" >/dev/null
    "${sudo[@]}" chmod +x "$policy"
    created_policy=1
  fi
  "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  local rc=$?
  [ "$created_policy" -eq 1 ] && "${sudo[@]}" rm -f "$policy"
  [ $rc -eq 0 ] || die "apt-get install failed"
}

# build BUILD_DIR [cmake args...]
build() {
  local dir=$1
  shift
  cmake -S "$GIFTWALL_ROOT" -B "$dir" -DCMAKE_BUILD_TYPE="${CMAKE_BUILD_TYPE:-RelWithDebInfo}" "$@" >/dev/null ||
    die "cmake configure failed"
  cmake --build "$dir" -j "$(nproc)" || die "build failed"
}

# A TCP port on 127.0.0.1 that nothing listens on (nothing answers a connect).
free_port() {
  local port
  for _ in $(seq 1 100); do
    port=$((20000 + RANDOM % 20000))
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
      echo "$port"
      return 0
    fi
  done
  die "no free port found"
}

# mariadb_start DATADIR PORT: a private MariaDB on 127.0.0.1:PORT, root without a password.
# Started with --no-defaults on purpose: its latin1, case-insensitive defaults are the ones
# that would merge identifiers if a table forgot to declare its charset and collation.
mariadb_start() {
  local datadir=$1 port=$2
  # Its own tmpdir: a shared /tmp lets other processes' clean-ups reach its temporary tables.
  mkdir -p "$datadir" "$datadir.tmp"
  if [ ! -d "$datadir/mysql" ]; then
    mariadb-install-db --no-defaults --datadir="$datadir" --tmpdir="$datadir.tmp" --user="$(id -un)" \
      --auth-root-authentication-method=normal --skip-test-db >"$datadir.install.log" 2>&1 ||
      { cat "$datadir.install.log" >&2; die "mariadb-install-db failed"; }
  fi
  local extra=()
  [ "$(id -u)" -eq 0 ] && extra+=(--user=root)
  # Its own session: a Ctrl-C meant for the server must not reach the database first.
  setsid mariadbd --no-defaults --datadir="$datadir" --port="$port" --bind-address=127.0.0.1 \
    --socket="$datadir/mariadb.sock" --pid-file="$datadir/mariadb.pid" --tmpdir="$datadir.tmp" \
    --log-error="$datadir/error.log" --skip-log-bin --innodb-buffer-pool-size=256M \
    --max-connections=500 ${MARIADB_EXTRA_ARGS[@]+"${MARIADB_EXTRA_ARGS[@]}"} "${extra[@]}" >/dev/null 2>&1 &
  MARIADB_PID=$!
  for _ in $(seq 1 120); do
    if mariadb --no-defaults -h127.0.0.1 -P"$port" -uroot -e 'SELECT 1' >/dev/null 2>&1; then
      return 0
    fi
    kill -0 "$MARIADB_PID" 2>/dev/null || { tail -20 "$datadir/error.log" >&2; die "mariadbd exited"; }
    sleep 0.5
  done
  tail -20 "$datadir/error.log" >&2
  die "mariadbd did not answer on port $port"
}

# mariadb_tls_files DIR: a CA and a server certificate it signs, for 127.0.0.1 and localhost,
# made with openssl into DIR (ca.crt, server.crt, server.key); prints the mariadbd flags that
# serve them. The certificates live as long as DIR.
mariadb_tls_files() {
  local dir=$1
  mkdir -p "$dir"
  openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=giftwall-test-db-ca" \
    -keyout "$dir/ca.key" -out "$dir/ca.crt" >/dev/null 2>&1 || die "openssl: no test CA"
  openssl req -newkey rsa:2048 -nodes -subj "/CN=localhost" \
    -keyout "$dir/server.key" -out "$dir/server.csr" >/dev/null 2>&1 || die "openssl: no test key"
  printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\n' >"$dir/server.ext"
  openssl x509 -req -in "$dir/server.csr" -CA "$dir/ca.crt" -CAkey "$dir/ca.key" \
    -CAcreateserial -days 2 -extfile "$dir/server.ext" -out "$dir/server.crt" >/dev/null 2>&1 ||
    die "openssl: no test server certificate"
  printf '%s\n' "--ssl-ca=$dir/ca.crt" "--ssl-cert=$dir/server.crt" "--ssl-key=$dir/server.key"
}

# test_database_start DIR: the throwaway MariaDB of a test run, in DIR on a free port: TLS with a
# certificate made here (as production databases serve), durability off (not under test).
# Exports GIFTWALL_TEST_MYSQL_URL (sessions run over TLS: ssl-mode PREFERRED, the default) and
# GIFTWALL_TEST_MYSQL_CA (the deploy tests verify the certificate against it).
test_database_start() {
  local dir=$1 port tls_args
  port=$(free_port)
  tls_args=$(mariadb_tls_files "$dir/db-tls")
  mapfile -t MARIADB_EXTRA_ARGS <<<"$tls_args"
  MARIADB_EXTRA_ARGS+=(--innodb-flush-log-at-trx-commit=2)
  mariadb_start "$dir/db" "$port"
  log "throwaway MariaDB on 127.0.0.1:$port, with TLS"
  export GIFTWALL_TEST_MYSQL_URL="mysql://root@127.0.0.1:$port/mysql"
  export GIFTWALL_TEST_MYSQL_CA="$dir/db-tls/ca.crt"
}

mariadb_stop() {
  [ -n "${MARIADB_PID:-}" ] || return 0
  kill "$MARIADB_PID" 2>/dev/null || true
  for _ in $(seq 1 60); do
    kill -0 "$MARIADB_PID" 2>/dev/null || { MARIADB_PID=; return 0; }
    sleep 0.5
  done
  kill -9 "$MARIADB_PID" 2>/dev/null || true
  MARIADB_PID=
}

# npm_install DIR: installs DIR's package-lock.json into DIR/node_modules, unless that lock file
# was installed there already.
npm_install() {
  local dir=$1
  local stamp=$dir/node_modules/.installed-package-lock.json
  cmp -s "$dir/package-lock.json" "$stamp" && return 0
  log "npm ci in ${dir#"$GIFTWALL_ROOT"/}"
  (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error) || die "npm ci in $dir failed"
  cp "$dir/package-lock.json" "$stamp"
}
