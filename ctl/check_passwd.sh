#!/usr/bin/env bash
# maglbctl monitor passwd, as an operator runs it (suite unit): a new users
# file (mode 0640, one line a user), a user's password and role replaced in
# place with the other lines kept, and each bad input refused with its
# message and exit code (2 bad arguments, 1 nothing written), the file
# unchanged. Usage: check_passwd.sh MAGLBCTL
set -uo pipefail
ctl=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
users=$dir/users
failed=0 n=0

ok() { n=$((n + 1)); echo "ok $n - $1"; }
not_ok() { n=$((n + 1)); echo "not ok $n - $1"; failed=1; }
check() { local what=$1; shift; if "$@"; then ok "$what"; else not_ok "$what"; fi; }

# passwd PASSWORD ARGS...: runs it with PASSWORD on stdin; $out, $rc.
passwd() {
	local pw=$1
	shift
	out=$(printf '%s\n' "$pw" | "$ctl" monitor passwd "$@" 2>&1)
	rc=$?
}

passwd 'first password' alice --role admin --file "$users"
check "a new user: exit 0, said so" test "$rc" -eq 0 -a "$out" = "monitor user alice (admin) written to $users"
check "the new file has mode 0640" test "$(stat -c %a "$users")" = 640
check "its line is alice:\$y\$...:admin" grep -qE '^alice:\$y\$[^:]+:admin$' "$users"
printf '# the operators\n' >>"$users"
passwd 'second' bob --file "$users"
passwd 'third' alice --file "$users"
check "alice replaced in place (now a viewer), bob and the comment kept" \
	test "$(cut -d: -f1,3 "$users" | tr '\n' ' ')" = "alice:viewer # the operators bob:viewer "
check "three lines, no duplicate" test "$(wc -l <"$users")" -eq 3
cp "$users" "$dir/before"

refused() {   # WHAT RC MESSAGE PASSWORD ARGS...
	local what=$1 want_rc=$2 want=$3
	shift 3
	passwd "$@"
	if [ "$rc" -eq "$want_rc" ] && grep -qF -- "$want" <<<"$out" && cmp -s "$users" "$dir/before"; then
		ok "$what: exit $want_rc, '$want', the file unchanged"
	else
		not_ok "$what: exit $rc (want $want_rc), said: $(head -n 1 <<<"$out")"
	fi
}
refused "a bad role" 2 "--role wants admin or viewer" pw carol --role root --file "$users"
refused "a bad user name" 2 "bad user name 'c:d'" pw 'c:d' --file "$users"
refused "no user" 2 "monitor passwd wants a USER" pw --file "$users"
refused "an empty password" 1 "empty password refused" '' carol --file "$users"
long=$(head -c 1100 /dev/zero | tr '\0' x)
refused "a password over 1024 bytes" 1 "maglbctl:" "$long" carol --file "$users"
printf 'x:$1$abc$def:admin\n' >"$dir/weak"
chmod 0600 "$dir/weak"
passwd pw carol --file "$dir/weak"
check "a file with an MD5 hash is refused (exit 1, file:line), not rewritten" \
	eval '[ "$rc" -eq 1 ] && grep -qF "$dir/weak:1: user '"'"'x'"'"': hash is not yescrypt" <<<"$out" &&
	[ "$(cat "$dir/weak")" = "x:\$1\$abc\$def:admin" ]'
exit "$failed"
