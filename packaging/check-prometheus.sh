#!/usr/bin/env bash
# check-prometheus: the Prometheus files of packaging/prometheus/ stay valid
# (meson test prometheus_examples, suite unit).
#
#   prometheus.yml.example   "promtool check config" on a copy whose
#                            /etc/prometheus/ paths (the alert rules, the
#                            CA, the password file) point into a
#                            temporary folder holding those files;
#   maglb-alerts.yml         "promtool check rules";
#   maglb-alerts.test.yml    "promtool test rules", and once more for each
#                            alert with that alert renamed in a copy of the
#                            rules: the test must then fail, or no test
#                            expects that alert to fire.
#
# Exits 1 when a check fails, 77 (skipped) when promtool is not installed
# (apt-get install prometheus), else 0.
set -euo pipefail

dir=$(cd "$(dirname "$0")/prometheus" && pwd)
checked=0
failed=0

ok() { checked=$((checked + 1)); printf 'ok    %s\n' "$*"; }
bad() { checked=$((checked + 1)); failed=$((failed + 1)); printf 'FAIL  %s\n' "$*"; }

if ! command -v promtool >/dev/null; then
	printf 'skipped: promtool not installed (apt-get install prometheus)\n'
	exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# The example's files, where a Prometheus host would have them.
cp "$dir/maglb-alerts.yml" "$tmp/maglb-alerts.yml"
printf 'not a certificate: promtool only looks for the file\n' >"$tmp/maglb-ca.pem"
printf 'secret\n' >"$tmp/maglb-monitor.password"
sed "s|/etc/prometheus/|$tmp/|g" "$dir/prometheus.yml.example" >"$tmp/prometheus.yml"
if out=$(promtool check config "$tmp/prometheus.yml" 2>&1); then
	ok "promtool check config prometheus.yml.example"
else
	bad "promtool check config prometheus.yml.example: $out"
fi

# What the alerts and the README count on: every target has a node label,
# the job is maglb, scraped over HTTPS with basic auth from a file.
ex=$dir/prometheus.yml.example
targets=$(grep -c "^ *- targets: \['[^']*:[0-9]*'\]$" "$ex" || true)
nodes=$(grep -c '^ *node: ' "$ex" || true)
if [ "$targets" -gt 0 ] && [ "$targets" = "$nodes" ] &&
	grep -q '^ *- job_name: maglb$' "$ex" && grep -q '^ *scheme: https$' "$ex" &&
	grep -q '^ *ca_file: /etc/prometheus/' "$ex" &&
	grep -q '^ *password_file: /etc/prometheus/' "$ex"; then
	ok "prometheus.yml.example: job maglb, HTTPS, basic auth, a node label on each of $targets targets"
else
	bad "prometheus.yml.example: want job maglb, scheme https, ca_file, password_file and one node label a target ($targets targets, $nodes node labels)"
fi

if out=$(promtool check rules "$dir/maglb-alerts.yml" 2>&1); then
	ok "promtool check rules maglb-alerts.yml: $(sed -n 's/^ *SUCCESS: //p' <<<"$out")"
else
	bad "promtool check rules maglb-alerts.yml: $out"
fi

if out=$(promtool test rules "$dir/maglb-alerts.test.yml" 2>&1); then
	ok "promtool test rules maglb-alerts.test.yml"
else
	bad "promtool test rules maglb-alerts.test.yml: $out"
fi

# Renamed, an alert no longer fires under its name: a test that expects it
# to fails. One that passes has no test firing that alert.
cp "$dir/maglb-alerts.test.yml" "$tmp/maglb-alerts.test.yml"
alerts=$(sed -n 's/^ *- alert: //p' "$dir/maglb-alerts.yml")
untested=
for alert in $alerts; do
	sed "s/^\( *- alert: \)$alert\$/\1${alert}Renamed/" "$dir/maglb-alerts.yml" \
		>"$tmp/maglb-alerts.yml"
	if promtool test rules "$tmp/maglb-alerts.test.yml" >/dev/null 2>&1; then
		untested="$untested $alert"
	fi
done
if [ -z "$untested" ]; then
	ok "every alert ($(wc -w <<<"$alerts")) has a test that expects it to fire"
else
	bad "no test expects these alerts to fire:$untested"
fi

printf '%d checked, %d failed\n' "$checked" "$failed"
[ "$failed" -eq 0 ]
