#!/usr/bin/env bash
# s3rver.sh: install, start and stop s3rver, a local S3 server, for treeport's
# tests of `import --out s3://...` and `export --in s3://...`.
#
#   scripts/s3rver.sh install   fetch s3rver into the cache (once)
#   scripts/s3rver.sh start     install if needed, start it on a free loopback
#                               port with a fresh data directory, wait until it
#                               answers
#   scripts/s3rver.sh stop      stop the copy this script started (its data
#                               directory goes with it)
#   scripts/s3rver.sh status    say whether it runs (exit 0) or not (exit 1)
#   scripts/s3rver.sh env       print `export TREEPORT_TEST_S3_ENDPOINT=...`
#
# Typical use:
#   scripts/s3rver.sh start && eval "$(scripts/s3rver.sh env)" && go test ./importer/ ./exporter/
#
# s3rver comes from the npm package of that name. It is installed outside the
# repository, in ${TREEPORT_CACHE:-$HOME/.cache/treeport}/s3rver, together
# with the state file (pid, endpoint, data directory) and the server's log.
# It accepts one key pair, access key S3RVER with secret S3RVER
# (AWS_ACCESS_KEY_ID=S3RVER AWS_SECRET_ACCESS_KEY=S3RVER), and wants
# path-style addressing (http://127.0.0.1:PORT/bucket/key), which treeport
# uses for any --s3-endpoint-url. Tests create their own buckets. Every command is
# idempotent: start reuses a running copy, stop on a stopped one is a no-op.
# Needs: bash, node and npm, curl.
set -euo pipefail

CACHE_ROOT="${TREEPORT_CACHE:-$HOME/.cache/treeport}"
DIR="$CACHE_ROOT/s3rver"
PKG="s3rver"
PKG_VERSION="${TREEPORT_S3RVER_VERSION:-3.7.1}"
BIN="$DIR/node_modules/$PKG/bin/s3rver.js"
STATE="$DIR/state"
LOG="$DIR/s3rver.log"
START_TIMEOUT="${TREEPORT_S3RVER_TIMEOUT:-30}"

die() { echo "s3rver: $*" >&2; exit 1; }
say() { echo "s3rver: $*" >&2; }

need() {
	command -v "$1" >/dev/null 2>&1 || die "$1 is not installed; $2"
}

installed() { [[ -f "$BIN" ]]; }

cmd_install() {
	if installed; then
		say "already installed in $DIR"
		return 0
	fi
	need npm "install Node.js and npm"
	mkdir -p "$DIR"
	say "installing $PKG@$PKG_VERSION into $DIR"
	# --prefix keeps node_modules in the cache; the repository stays clean.
	if ! npm install --prefix "$DIR" --no-audit --no-fund --loglevel=error \
		"$PKG@$PKG_VERSION" >"$DIR/npm.log" 2>&1; then
		cat "$DIR/npm.log" >&2
		die "npm install failed (log above, also in $DIR/npm.log)"
	fi
	installed || die "$PKG installed but $BIN is missing; the package layout changed"
	say "installed in $DIR"
}

# read_state sets PID, ENDPOINT and DATA from the state file, or clears them.
read_state() {
	PID="" ENDPOINT="" DATA=""
	[[ -f "$STATE" ]] || return 1
	PID="$(sed -n 's/^pid=//p' "$STATE")"
	ENDPOINT="$(sed -n 's/^endpoint=//p' "$STATE")"
	DATA="$(sed -n 's/^data=//p' "$STATE")"
	[[ -n "$PID" && -n "$ENDPOINT" ]]
}

alive() { [[ -n "${PID:-}" ]] && kill -0 "$PID" 2>/dev/null; }

# answers succeeds when the endpoint serves a real S3 ListBuckets call.
answers() {
	local body
	body="$(curl -s --max-time 2 "$1/" 2>/dev/null)" || return 1
	[[ "$body" == *ListAllMyBucketsResult* ]]
}

running() { read_state && alive && answers "$ENDPOINT"; }

free_port() {
	if command -v python3 >/dev/null 2>&1; then
		python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
		return
	fi
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
		say "pid $PID does not answer at $ENDPOINT; stopping it"
		cmd_stop
	fi
	cmd_install
	need node "install Node.js"
	need curl "install curl"
	local port data
	port="$(free_port)"
	data="$(mktemp -d "$DIR/data.XXXXXX")"
	(
		exec 9>&- # the lock must not live as long as the server
		exec nohup node "$BIN" --silent --address 127.0.0.1 --port "$port" \
			--directory "$data" >"$LOG" 2>&1 </dev/null
	) &
	PID=$!
	ENDPOINT="http://127.0.0.1:$port"
	printf 'pid=%s\nendpoint=%s\ndata=%s\n' "$PID" "$ENDPOINT" "$data" >"$STATE.tmp"
	mv "$STATE.tmp" "$STATE"
	local deadline=$((SECONDS + START_TIMEOUT))
	until answers "$ENDPOINT"; do
		if ! alive; then
			rm -f "$STATE"
			cat "$LOG" >&2 || true
			die "s3rver exited during start-up (log above, also in $LOG)"
		fi
		if ((SECONDS >= deadline)); then
			cmd_stop
			die "s3rver did not answer at $ENDPOINT within ${START_TIMEOUT}s; see $LOG"
		fi
		sleep 0.2
	done
	say "running at $ENDPOINT (pid $PID, data in $data)"
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
	# Only a data directory this script made, inside the cache, is removed.
	if [[ -n "$DATA" && "$DATA" == "$DIR"/data.* && -d "$DATA" ]]; then
		rm -rf "$DATA"
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
	echo "export TREEPORT_TEST_S3_ENDPOINT=$ENDPOINT"
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
