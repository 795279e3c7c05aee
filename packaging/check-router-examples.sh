#!/usr/bin/env bash
# check-router-examples: the router configs of packaging/router/ stay valid
# (meson test router_examples, suite unit).
#
#   bird2-*.conf   "bird -p -c FILE" (parse only: no daemon, no socket);
#   frr-*.conf     "vtysh --dryrun -f FILE" (no daemon either). FRR older
#                  than 8.5 has no "bfd" after a static route (staticd's
#                  BFD monitoring is new in 8.5): there each "ip route" and
#                  "ipv6 route" line is checked with its "bfd ..." cut
#                  off, and the file whole once FRR is 8.5 or later.
#
# Exits 1 when a file is refused, else 77 (skipped) when bird is not
# installed, else 0. bird2 is in ./dev's PACKAGES; FRR is not (its files
# are checked where it is installed: apt-get install frr), and without
# vtysh they are skipped with a line that says so.
set -euo pipefail

dir=$(cd "$(dirname "$0")/router" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
checked=0
failed=0

ok() { checked=$((checked + 1)); printf 'ok    %s\n' "$*"; }
bad() { checked=$((checked + 1)); failed=$((failed + 1)); printf 'FAIL  %s\n' "$*"; }

# bird -p prints nothing and exits 0 on a good file, "bird: FILE:LINE:COL
# reason" and 1 otherwise.
have_bird=no
if command -v bird >/dev/null; then
	have_bird=yes
	for f in "$dir"/bird2-*.conf; do
		if out=$(bird -p -c "$f" 2>&1); then
			ok "bird -p -c $(basename "$f")"
		else
			bad "bird -p -c $(basename "$f"): $out"
		fi
	done
else
	printf 'bird not installed (apt-get install bird2): BIRD examples skipped\n'
fi

# vtysh --dryrun exits non-zero and names the line of each refused command.
# vtysh has no --version: its --help says "Integrated shell for FRR
# (version 8.4.4)."
if command -v vtysh >/dev/null; then
	version=$( (vtysh --help 2>&1 || true) |
		sed -n 's/.*(version \([0-9]*\)\.\([0-9]*\).*/\1 \2/p' | head -n 1)
	read -r major minor <<<"${version:-0 0}"
	for f in "$dir"/frr-*.conf; do
		name=$(basename "$f")
		if [ "$major" -gt 8 ] || { [ "$major" -eq 8 ] && [ "$minor" -ge 5 ]; }; then
			what="vtysh --dryrun -f $name"
			check=$f
		else
			what="vtysh --dryrun -f $name, FRR $major.$minor: the static routes without bfd"
			check=$tmp/$name
			sed -E 's/^((ip|ipv6) route .*) bfd( .*)?$/\1/' "$f" >"$check"
		fi
		if out=$(vtysh --dryrun -f "$check" 2>&1); then
			ok "$what"
		else
			bad "$what: $out"
		fi
	done
else
	printf 'vtysh not installed (apt-get install frr): FRR examples skipped\n'
fi

printf '%d checked, %d failed\n' "$checked" "$failed"
[ "$failed" -eq 0 ] || exit 1
if [ $have_bird = no ]; then
	printf 'skipped: the BIRD examples need bird\n'
	exit 77
fi
