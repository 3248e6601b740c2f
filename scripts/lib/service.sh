# service.sh: the install/start/stop/status/env machinery that
# scripts/ddblocal.sh and scripts/s3rver.sh share. It is sourced, never run.
#
# The sourcing script sets, before it calls service_main "$@":
#   SVC          short name, the prefix of every message (ddblocal, s3rver)
#   SVC_TITLE    the server's name in error messages (DynamoDB Local)
#   DIR          the cache directory: node_modules, state file, log, lock
#   PKG PKG_VERSION      the npm package to install
#   SVC_HOME     where the installed server lives (said after install)
#   SVC_FILE     the file install must leave behind (named when it is missing)
#   SVC_NPM_HINT what to do when npm is missing
#   SVC_INSTALL_NOTE     said after "installing ..." (may be empty)
#   SVC_ENV_VAR  the variable `env` exports the endpoint as
#   START_TIMEOUT POLL     seconds to wait for the first answer; between tries
#   STATE LOG    the state file (pid=, endpoint=, then the script's own lines)
#                and the server's log
# and defines:
#   installed          succeeds when the server is installed in the cache
#   answers URL        succeeds when URL serves a real call of the server
#   svc_need           checks the tools start needs (with need)
#   svc_prepare        run before the launch, in this shell: may set SVC_EXTRA
#                      (lines added to the state file) and SVC_NOTE (added to
#                      "running at ...")
#   svc_launch PORT    runs in a subshell: execs the server on PORT, output to $LOG
#   svc_read_extra     sets the script's own variables from the state file
#                      (state_value KEY), or clears them when it is missing
#   svc_after_stop     cleans up after the server is gone
# Every command is idempotent: start reuses a running copy, stop on a stopped
# one is a no-op.

die() { echo "$SVC: $*" >&2; exit 1; }
say() { echo "$SVC: $*" >&2; }

need() {
	command -v "$1" >/dev/null 2>&1 || die "$1 is not installed; $2"
}

cmd_install() {
	if installed; then
		say "already installed in $SVC_HOME"
		return 0
	fi
	need npm "$SVC_NPM_HINT"
	mkdir -p "$DIR"
	say "installing $PKG@$PKG_VERSION into $DIR$SVC_INSTALL_NOTE"
	# --prefix keeps node_modules in the cache; the repository stays clean.
	if ! npm install --prefix "$DIR" --no-audit --no-fund --loglevel=error \
		"$PKG@$PKG_VERSION" >"$DIR/npm.log" 2>&1; then
		cat "$DIR/npm.log" >&2
		die "npm install failed (log above, also in $DIR/npm.log)"
	fi
	installed || die "$PKG installed but $SVC_FILE is missing; the package layout changed"
	say "installed in $SVC_HOME"
}

# read_state sets PID and ENDPOINT (and, through svc_read_extra, the script's
# own variables) from the state file, or clears them.
read_state() {
	PID="" ENDPOINT=""
	svc_read_extra
	[[ -f "$STATE" ]] || return 1
	PID="$(state_value pid)"
	ENDPOINT="$(state_value endpoint)"
	[[ -n "$PID" && -n "$ENDPOINT" ]]
}

# state_value prints the value of KEY= in the state file.
state_value() { sed -n "s/^$1=//p" "$STATE"; }

alive() { [[ -n "${PID:-}" ]] && kill -0 "$PID" 2>/dev/null; }

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
	svc_need
	need curl "install curl"
	local port
	port="$(free_port)"
	SVC_EXTRA="" SVC_NOTE=""
	svc_prepare
	(
		exec 9>&- # the lock must not live as long as the server
		svc_launch "$port"
	) &
	PID=$!
	ENDPOINT="http://127.0.0.1:$port"
	printf 'pid=%s\nendpoint=%s\n%s' "$PID" "$ENDPOINT" "$SVC_EXTRA" >"$STATE.tmp"
	mv "$STATE.tmp" "$STATE"
	local deadline=$((SECONDS + START_TIMEOUT))
	until answers "$ENDPOINT"; do
		if ! alive; then
			rm -f "$STATE"
			cat "$LOG" >&2 || true
			die "$SVC_TITLE exited during start-up (log above, also in $LOG)"
		fi
		if ((SECONDS >= deadline)); then
			cmd_stop
			die "$SVC_TITLE did not answer at $ENDPOINT within ${START_TIMEOUT}s; see $LOG"
		fi
		sleep "$POLL"
	done
	say "running at $ENDPOINT (pid $PID$SVC_NOTE)"
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
	svc_after_stop
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
	echo "export $SVC_ENV_VAR=$ENDPOINT"
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

service_main() {
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
}
