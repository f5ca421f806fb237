#!/usr/bin/env bash
# The README's first command as a new user runs it: `go run ./examples/customers`
# with empty Go caches, on 127.0.0.1:8080, from the repository's root.
#
#   bash .ci/readme-first-run.sh
#
# 1. Times it from start to the line saying it serves, and fails when that
#    took more than twice the longest time the README says it takes.
# 2. Checks what the README says of stopping it: killing `go run` alone
#    leaves the example serving (its child, named customers, is then stopped
#    by its own PID); Ctrl-C (SIGINT to the process group, as a terminal
#    sends it) stops both; and a built program run in the background stops
#    with `kill $!`.
# Prints "PASS <what>" or "FAIL <what>: <why>" per check, and the closing
# line "N passed, N failed"; exit status 1 when anything failed.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1

work=$(mktemp -d "${TMPDIR:-/tmp}/readme-first-run.XXXXXX")
# The machine's own settings, and a module cache go clean can remove.
goflags="$(go env GOFLAGS) -modcacherw"
passed=0 failed=0
pass() { echo "PASS $1"; passed=$((passed + 1)); }
fail() { echo "FAIL $1: $2"; failed=$((failed + 1)); }
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill -KILL -- "-$p" 2>/dev/null; kill -KILL "$p" 2>/dev/null; done
	GOMODCACHE=$work/mod go clean -modcache 2>/dev/null
	rm -rf "$work"
}
trap cleanup EXIT

# serving: 0 when 127.0.0.1:8080 answers GET /healthz with 200.
serving() {
	local status
	exec 3<>/dev/tcp/127.0.0.1/8080 || return 1
	printf 'GET /healthz HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n' >&3
	read -r -t 2 _ status _ <&3
	exec 3<&-
	[ "$status" = 200 ]
}
# gone: 0 when nothing accepts on 127.0.0.1:8080 within 10 s.
gone() {
	for _ in $(seq 100); do
		(exec 3<>/dev/tcp/127.0.0.1/8080) 2>/dev/null || return 0
		sleep 0.1
	done
	return 1
}
# wait_serving LOG PID SECONDS: 0 once LOG says it serves and /healthz answers.
wait_serving() {
	local deadline=$((SECONDS + $3))
	while [ $SECONDS -lt "$deadline" ] && kill -0 "$2" 2>/dev/null; do
		grep -q 'serving MCP over Streamable HTTP' "$1" && serving 2>/dev/null && return 0
		sleep 0.2
	done
	return 1
}

if ! gone; then
	fail "127.0.0.1:8080 is free" "something listens there already"
	echo "$passed passed, $failed failed"
	exit 1
fi

stated=$(tr '\n' ' ' <README.md | grep -oP 'With empty Go +caches it took between \d+ s \([^)]*\) and \K\d+(?= s)' | head -n1)
if [ -z "$stated" ]; then
	fail "README.md says how long the first run takes" "no \"With empty Go caches it took between N s (…) and N s\""
	stated=0
fi

# 1. The first run, with empty caches.
: >"$work/first.log"
start=$SECONDS
GOMODCACHE=$work/mod GOCACHE=$work/build GOFLAGS="$goflags" setsid go run ./examples/customers >"$work/first.log" 2>&1 &
gorun=$!
pids+=("$gorun")
if wait_serving "$work/first.log" "$gorun" 600; then
	took=$((SECONDS - start))
	echo "go run ./examples/customers with empty caches: serving after $took s, $(grep -c 'go: downloading' "$work/first.log") modules downloaded (README.md: up to ${stated} s; load $(cut -d' ' -f1-3 /proc/loadavg))"
	if [ "$stated" -gt 0 ] && [ "$took" -le $((2 * stated)) ]; then
		pass "the first run takes what README.md says (${took} s; it says up to ${stated} s)"
	else
		fail "the first run takes what README.md says" "${took} s, more than twice the ${stated} s it says"
	fi
else
	fail "go run ./examples/customers serves with empty caches within 600 s" "$(tail -c 600 "$work/first.log" | tr '\n' ' ')"
	echo "$passed passed, $failed failed"
	exit 1
fi

# 2a. Killing go run alone leaves the example serving.
child=$(cat /proc/"$gorun"/task/*/children 2>/dev/null | tr ' ' '\n' | grep -m1 .)
name=$(cat /proc/"$child"/comm 2>/dev/null)
kill -TERM "$gorun"
wait "$gorun" 2>/dev/null
if [ "$name" = customers ] && serving; then
	pass "killing go run's PID leaves the example (customers, PID $child) serving"
else
	fail "killing go run's PID leaves the example serving" "child ${child:-none} named ${name:-nothing}; serving: $(serving && echo yes || echo no)"
fi
kill -INT "$child" 2>/dev/null
if gone; then
	pass "the example stops on SIGINT to its own PID"
else
	fail "the example stops on SIGINT to its own PID" "127.0.0.1:8080 still accepts"
fi

# 2b. Ctrl-C: SIGINT to the process group stops go run and the example.
GOMODCACHE=$work/mod GOCACHE=$work/build GOFLAGS="$goflags" setsid go run ./examples/customers >"$work/second.log" 2>&1 &
gorun=$!
pids+=("$gorun")
if wait_serving "$work/second.log" "$gorun" 120; then
	kill -INT -- "-$gorun"
	for _ in $(seq 100); do kill -0 "$gorun" 2>/dev/null || break; sleep 0.1; done
	if ! kill -0 "$gorun" 2>/dev/null && gone; then
		pass "Ctrl-C (SIGINT to the process group) stops go run and the example"
	else
		fail "Ctrl-C stops go run and the example" "still running or serving"
	fi
else
	fail "go run ./examples/customers serves again" "$(tail -c 600 "$work/second.log" | tr '\n' ' ')"
fi

# 2c. Built and run in the background, kill $! stops it.
GOMODCACHE=$work/mod GOCACHE=$work/build GOFLAGS="$goflags" go build -o "$work/customers" ./examples/customers
"$work/customers" >"$work/third.log" 2>&1 &
server=$!
pids+=("$server")
if wait_serving "$work/third.log" "$server" 60 && kill "$server" && gone; then
	pass "a built example run in the background stops with kill \$!"
else
	fail "a built example run in the background stops with kill \$!" "$(tail -c 600 "$work/third.log" | tr '\n' ' ')"
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
