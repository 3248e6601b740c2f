#!/usr/bin/env bash
# ddblocal.sh: install, start and stop DynamoDB Local for treeport's tests.
#
#   scripts/ddblocal.sh install   fetch DynamoDB Local into the cache (once)
#   scripts/ddblocal.sh start     install if needed, start it in memory on a free
#                                 loopback port, wait until it answers
#   scripts/ddblocal.sh stop      stop the copy this script started
#   scripts/ddblocal.sh status    say whether it runs (exit 0) or not (exit 1)
#   scripts/ddblocal.sh env       print `export TREEPORT_TEST_ENDPOINT=...`
#
# Typical use:
#   scripts/ddblocal.sh start && eval "$(scripts/ddblocal.sh env)" && go test ./...
#
# DynamoDB Local comes from the npm package amplify-dynamodb-simulator, which
# ships DynamoDBLocal.jar and its native libraries. It is installed outside the
# repository, in ${TREEPORT_CACHE:-$HOME/.cache/treeport}/ddblocal, together
# with the state file (pid and endpoint) and the server's log. Every command is
# idempotent: start reuses a running copy, stop on a stopped one is a no-op.
# Needs: bash, java (11 or later), npm (for install), curl.
set -euo pipefail

CACHE_ROOT="${TREEPORT_CACHE:-$HOME/.cache/treeport}"
DIR="$CACHE_ROOT/ddblocal"
PKG="amplify-dynamodb-simulator"
PKG_VERSION="${TREEPORT_DDBLOCAL_VERSION:-^2.9.30}"
EMULATOR="$DIR/node_modules/$PKG/emulator"
STATE="$DIR/state"
LOG="$DIR/ddblocal.log"
START_TIMEOUT="${TREEPORT_DDBLOCAL_TIMEOUT:-60}"

die() { echo "ddblocal: $*" >&2; exit 1; }
say() { echo "ddblocal: $*" >&2; }

need() {
	command -v "$1" >/dev/null 2>&1 || die "$1 is not installed; $2"
}

installed() { [[ -f "$EMULATOR/DynamoDBLocal.jar" && -d "$EMULATOR/DynamoDBLocal_lib" ]]; }

cmd_install() {
	if installed; then
		say "already installed in $EMULATOR"
		return 0
	fi
	need npm "install Node.js and npm, or put DynamoDBLocal.jar in $EMULATOR yourself"
	mkdir -p "$DIR"
	say "installing $PKG@$PKG_VERSION into $DIR (about 30 s)"
	# --prefix keeps node_modules in the cache; the repository stays clean.
	if ! npm install --prefix "$DIR" --no-audit --no-fund --loglevel=error \
		"$PKG@$PKG_VERSION" >"$DIR/npm.log" 2>&1; then
		cat "$DIR/npm.log" >&2
		die "npm install failed (log above, also in $DIR/npm.log)"
	fi
	installed || die "$PKG installed but $EMULATOR/DynamoDBLocal.jar is missing; the package layout changed"
	say "installed in $EMULATOR"
}

# read_state sets PID and ENDPOINT from the state file, or clears them.
read_state() {
	PID="" ENDPOINT=""
	[[ -f "$STATE" ]] || return 1
	PID="$(sed -n 's/^pid=//p' "$STATE")"
	ENDPOINT="$(sed -n 's/^endpoint=//p' "$STATE")"
	[[ -n "$PID" && -n "$ENDPOINT" ]]
}

alive() { [[ -n "${PID:-}" ]] && kill -0 "$PID" 2>/dev/null; }

# answers succeeds when the endpoint serves a real DynamoDB ListTables call.
# DynamoDB Local accepts any signature but wants the Authorization header to
# name an access key and a region.
answers() {
	local body
	body="$(curl -s --max-time 2 -X POST "$1" \
		-H 'Content-Type: application/x-amz-json-1.0' \
		-H 'X-Amz-Target: DynamoDB_20120810.ListTables' \
		-H 'Authorization: AWS4-HMAC-SHA256 Credential=treeport/20240101/us-east-1/dynamodb/aws4_request, SignedHeaders=host, Signature=00' \
		-d '{}' 2>/dev/null)" || return 1
	[[ "$body" == *TableNames* ]]
}

running() { read_state && alive && answers "$ENDPOINT"; }

free_port() {
	if command -v python3 >/dev/null 2>&1; then
		python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
		return
	fi
	# Without python: probe random high ports until one refuses a connection.
	local p i
	for i in $(seq 1 100); do
		p=$((20000 + RANDOM % 40000))
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
			echo "$p"
			return
		fi
	done
	die "no free port found"
}

cmd_start() {
	if running; then
		say "already running at $ENDPOINT (pid $PID)"
		return 0
	fi
	if read_state && alive; then
		# A process that does not answer is not ours to trust; stop it first.
		say "pid $PID does not answer at $ENDPOINT; stopping it"
		cmd_stop
	fi
	cmd_install
	need java "install a Java runtime (11 or later)"
	need curl "install curl"
	local port
	port="$(free_port)"
	# -sharedDb: one database whatever the credentials and region, so the AWS
	# CLI and the tests see the same tables. -disableTelemetry: no outbound calls.
	(
		cd "$EMULATOR"
		exec 9>&- # the lock must not live as long as the server
		exec nohup java -Djava.library.path=DynamoDBLocal_lib -jar DynamoDBLocal.jar \
			-inMemory -sharedDb -disableTelemetry -port "$port" >"$LOG" 2>&1 </dev/null
	) &
	PID=$!
	ENDPOINT="http://127.0.0.1:$port"
	printf 'pid=%s\nendpoint=%s\n' "$PID" "$ENDPOINT" >"$STATE.tmp"
	mv "$STATE.tmp" "$STATE"
	local deadline=$((SECONDS + START_TIMEOUT))
	until answers "$ENDPOINT"; do
		if ! alive; then
			rm -f "$STATE"
			cat "$LOG" >&2 || true
			die "DynamoDB Local exited during start-up (log above, also in $LOG)"
		fi
		if ((SECONDS >= deadline)); then
			cmd_stop
			die "DynamoDB Local did not answer at $ENDPOINT within ${START_TIMEOUT}s; see $LOG"
		fi
		sleep 0.3
	done
	say "running at $ENDPOINT (pid $PID)"
}

cmd_stop() {
	if ! read_state; then
		say "not running"
		return 0
	fi
	if alive; then
		kill "$PID" 2>/dev/null || true
		local i
		for i in $(seq 1 50); do
			alive || break
			sleep 0.1
		done
		if alive; then
			kill -9 "$PID" 2>/dev/null || true
		fi
		say "stopped pid $PID"
	else
		say "not running (stale state removed)"
	fi
	rm -f "$STATE"
}

cmd_status() {
	if running; then
		echo "running at $ENDPOINT (pid $PID)"
		return 0
	fi
	echo "not running"
	return 1
}

cmd_env() {
	running || die "not running; run: $0 start"
	echo "export TREEPORT_TEST_ENDPOINT=$ENDPOINT"
}

# with_lock runs a command under an exclusive lock, so two concurrent starts
# do not launch two servers.
with_lock() {
	mkdir -p "$DIR"
	if command -v flock >/dev/null 2>&1; then
		exec 9>"$DIR/.lock"
		flock 9
	fi
	"$@"
}

case "${1:-}" in
install) with_lock cmd_install ;;
start) with_lock cmd_start ;;
stop) with_lock cmd_stop ;;
status) cmd_status ;;
env) cmd_env ;;
*)
	echo "usage: $0 install|start|stop|status|env" >&2
	exit 2
	;;
esac
