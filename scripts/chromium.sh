#!/usr/bin/env bash
# chromium.sh: make sure a headless Chromium is there for the tests that
# render treeport's HTML reports (treeport bench --out report.html).
#
#   scripts/chromium.sh install   install Debian's chromium with apt-get when missing
#   scripts/chromium.sh path      print the browser's path (exit 1 when missing)
#   scripts/chromium.sh status    say whether it is installed (exit 0) or not (exit 1)
#   scripts/chromium.sh env       print `export TREEPORT_TEST_CHROMIUM=...`
#
# Typical use:
#   scripts/chromium.sh install && eval "$(scripts/chromium.sh env)" && go test ./...
#
# Every command is idempotent: install does nothing when a browser is found.
# TREEPORT_CHROMIUM names a browser to use instead of searching the PATH.
# Installing needs root (or sudo) and apt-get; it is Debian's own package, the
# same the CI image installs.
set -euo pipefail

die() { echo "chromium: $*" >&2; exit 1; }
say() { echo "chromium: $*" >&2; }

# find_browser prints the first browser found, or fails.
find_browser() {
	if [[ -n "${TREEPORT_CHROMIUM:-}" ]]; then
		[[ -x "$TREEPORT_CHROMIUM" ]] || die "TREEPORT_CHROMIUM=$TREEPORT_CHROMIUM is not an executable"
		echo "$TREEPORT_CHROMIUM"
		return 0
	fi
	local name
	for name in chromium chromium-browser; do
		if command -v "$name" >/dev/null 2>&1; then
			command -v "$name"
			return 0
		fi
	done
	return 1
}

cmd_install() {
	local path
	if path="$(find_browser)"; then
		say "already installed: $path"
		echo "$path"
		return 0
	fi
	command -v apt-get >/dev/null 2>&1 || die "apt-get not found: install Chromium with your package manager, or set TREEPORT_CHROMIUM"
	local sudo=()
	if [[ "$(id -u)" != 0 ]]; then
		command -v sudo >/dev/null 2>&1 || die "installing needs root: run as root, or install chromium yourself"
		sudo=(sudo)
	fi
	say "installing Debian's chromium with apt-get (about 100 MB)"
	export DEBIAN_FRONTEND=noninteractive
	# The package lists may be missing (a slim image) or stale.
	"${sudo[@]}" apt-get update -qq >&2
	"${sudo[@]}" apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core >&2
	path="$(find_browser)" || die "apt-get installed chromium, but it is not on the PATH"
	say "installed: $path ($("$path" --version 2>/dev/null || echo 'version unknown'))"
	echo "$path"
}

cmd_path() {
	find_browser || die "not installed; run: $0 install"
}

cmd_status() {
	local path
	if path="$(find_browser)"; then
		echo "installed: $path"
		return 0
	fi
	echo "not installed"
	return 1
}

cmd_env() {
	local path
	path="$(find_browser)" || die "not installed; run: $0 install"
	echo "export TREEPORT_TEST_CHROMIUM=$path"
}

case "${1:-}" in
install) cmd_install ;;
path) cmd_path ;;
status) cmd_status ;;
env) cmd_env ;;
*)
	echo "usage: $0 install|path|status|env" >&2
	exit 2
	;;
esac
