# shellcheck shell=bash
# maglb-monitor on the nodes of cluster.sh, for tests/e2e/check_monitor.sh
# (suite monitor). Sources cluster.sh. As root:
#
#   . tests/e2e/monitor.sh
#   monitor_tls_setup "$dir/tls" 2            # a CA, a certificate per node
#   monitor_users "$dir/users" admin:PW:admin viewer:PW:viewer
#   monitor_config_add "$dir/n1.conf" 1 "$dir/tls" "$dir/users"
#   monitor_start "$P" 1 "$dir/n1.conf"
#   monitor_operator_setup "$P"               # namespace ${P}m on the ring
#   monitor_curl "$P" "$dir/tls" -u viewer:PW "$(monitor_url 1)/metrics"
#
# Functions (I: a node):
#   monitor_tls_setup DIR N       with certtool (gnutls-bin): DIR/ca.pem (a
#                                 test CA, its key DIR/ca.key) and, for
#                                 node 1..N, DIR/nI.pem and DIR/nI.key: a
#                                 server certificate naming the node's ring
#                                 address (IP SAN), ECDSA P-256, mode 0600;
#                                 its output in DIR/certtool.log
#   monitor_spki DIR I            base64 of the SHA-256 of node I's key's
#                                 SubjectPublicKeyInfo (openssl): what
#                                 Chromium's --ignore-certificate-errors-
#                                 spki-list takes
#   monitor_users FILE USER:PASSWORD:ROLE...
#                                 the users file (maglbctl monitor passwd,
#                                 the password on its stdin), mode 0600
#   monitor_config_add CONF I TLS_DIR USERS
#                                 append a monitor section to node I's
#                                 config: listening on its ring address,
#                                 MONITOR_PORT (9443), TLS with TLS_DIR's
#                                 nI.pem / nI.key, the users file USERS
#   monitor_start PREFIX I CONF   maglb-monitor -c CONF -f --www monitor/www
#                                 --name nI in node I with the node's
#                                 dataplane and syncd services; its stderr
#                                 in monitor-nI.err of the state folder, its
#                                 pid in monitor-nI.pid (so the teardown
#                                 ends it); returns once its port listens
#   monitor_stop PREFIX I / monitor_kill9 PREFIX I
#   monitor_pid PREFIX I          its pid (fails when not running)
#   monitor_log PREFIX I          the path of its stderr (it runs with -f)
#   monitor_url I                 https://RING_ADDR:MONITOR_PORT
#   monitor_operator_setup PREFIX namespace ${P}m ("the operator's
#                                 machine"): m0, a veth into the ring
#                                 bridge of ${P}sw, with MONITOR_OPERATOR_ADDR4
#                                 (198.18.30.100/24) and the extra
#                                 addresses MONITOR_OPERATOR_EXTRA (.101,
#                                 .102: clients of their own for the login
#                                 throttle, which counts failures by
#                                 address); deleted with the cluster's
#                                 namespaces (cluster_teardown and
#                                 _cluster_cleanup_stale delete every
#                                 namespace of the prefix)
#   monitor_curl PREFIX TLS_DIR CURL_ARGS...
#                                 curl in ${P}m trusting the test CA only
#                                 (--cacert), silent, 10 s at most
#
# Needs certtool, openssl, curl; maglb-monitor built (MAGLB_BUILD).

_monitor_here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=tests/e2e/cluster.sh
. "$_monitor_here/cluster.sh"

: "${MONITOR_PORT:=9443}"
MONITOR_OPERATOR_ADDR4=198.18.30.100
MONITOR_OPERATOR_EXTRA=(198.18.30.101 198.18.30.102)
MONITOR_WWW=$(cd "$_monitor_here/../../monitor/www" && pwd)

monitor_url() { printf 'https://%s:%s' "$(cluster_ring_addr4 "$1")" "$MONITOR_PORT"; }
monitor_log() { printf '%s/monitor-n%s.err' "$(topo_dir "$1")" "$2"; }
monitor_pid() { _cluster_pid "$1" "monitor-n$2"; }

monitor_tls_setup() {
	local d=$1 n=$2 i addr
	mkdir -p "$d" && chmod 0700 "$d" || return 1
	cat >"$d/ca.tmpl" <<-'EOF'
		cn = "maglb e2e test CA"
		organization = "maglb e2e"
		serial = 1
		expiration_days = 2
		ca
		cert_signing_key
		crl_signing_key
	EOF
	{
		certtool --generate-privkey --key-type=ecdsa --curve=secp256r1 --outfile "$d/ca.key" &&
			certtool --generate-self-signed --load-privkey "$d/ca.key" \
				--template "$d/ca.tmpl" --outfile "$d/ca.pem" || return 1
		for ((i = 1; i <= n; i++)); do
			addr=$(cluster_ring_addr4 "$i")
			cat >"$d/n$i.tmpl" <<-EOF
				cn = "$addr"
				organization = "maglb e2e"
				serial = $((i + 1))
				expiration_days = 2
				ip_address = "$addr"
				tls_www_server
				signing_key
			EOF
			certtool --generate-privkey --key-type=ecdsa --curve=secp256r1 \
				--outfile "$d/n$i.key" &&
				certtool --generate-certificate --load-privkey "$d/n$i.key" \
					--load-ca-certificate "$d/ca.pem" --load-ca-privkey "$d/ca.key" \
					--template "$d/n$i.tmpl" --outfile "$d/n$i.pem" || return 1
		done
	} >"$d/certtool.log" 2>&1 || {
		log "monitor_tls_setup: certtool failed:"
		tail -n 20 "$d/certtool.log" >&2
		return 1
	}
	chmod 0600 "$d"/*.key
}

monitor_spki() {
	openssl pkey -in "$1/n$2.key" -pubout -outform der 2>/dev/null |
		openssl dgst -sha256 -binary | base64
}

monitor_users() {
	local file=$1 entry user pw role
	shift
	rm -f "$file"
	for entry in "$@"; do
		IFS=: read -r user pw role <<<"$entry"
		printf '%s\n' "$pw" |
			"$MAGLB_BUILD/ctl/maglbctl" monitor passwd "$user" --role "$role" --file "$file" \
				>/dev/null || { log "monitor_users: maglbctl monitor passwd $user failed"; return 1; }
	done
	chmod 0600 "$file"
}

monitor_config_add() {
	local conf=$1 i=$2 tls=$3 users=$4
	cat >>"$conf" <<-EOF
		monitor = {
		  listen = ( "$(cluster_ring_addr4 "$i"):$MONITOR_PORT" );
		  tls_cert = "$tls/n$i.pem";
		  tls_key = "$tls/n$i.key";
		  users_file = "$users";
		};
	EOF
}

# Up once its port listens on the node's ring address.
_monitor_up() {
	cluster_run "$1" "$2" ss -Hltn "sport = :$MONITOR_PORT" 2>/dev/null |
		grep -qF "$(cluster_ring_addr4 "$2"):$MONITOR_PORT"
}

monitor_start() {
	local p=$1 i=$2 conf=$3 bin=$MAGLB_BUILD/monitor/maglb-monitor
	if [ ! -x "$bin" ]; then
		log "monitor_start: $bin is missing: maglb-monitor is not built in $MAGLB_BUILD"
		return 1
	fi
	_cluster_daemon_start "$p" "$i" monitor _monitor_up \
		"$bin" -c "$conf" -f --www "$MONITOR_WWW" --name "n$i" \
		--dataplane-service "$(cluster_service "$p" "$i")" \
		--syncd-service "$(cluster_syncd_service "$p" "$i")"
}

monitor_stop() { _cluster_daemon_stop "$1" "monitor-n$2" TERM; }
monitor_kill9() { _cluster_daemon_stop "$1" "monitor-n$2" KILL; }

monitor_operator_setup() {
	local p=$1 m=${1}m a
	_ns_new "$m" || return 1
	_veth "${p}sw" km "$m" m0 || return 1
	_link_up "${p}sw" km 02:00:00:00:31:64 1500 "" "" &&
		ip -n "${p}sw" link set dev km master ring &&
		_link_up "$m" m0 02:00:00:00:30:64 1500 "$MONITOR_OPERATOR_ADDR4/24" "" || return 1
	for a in "${MONITOR_OPERATOR_EXTRA[@]}"; do
		ip -n "$m" addr add "$a/24" dev m0 || return 1
	done
	await_cond 10 _link_ready "${p}sw" km && await_cond 10 _link_ready "$m" m0
}

monitor_curl() {
	local p=$1 tls=$2
	shift 2
	ip netns exec "${p}m" curl -sS --max-time 10 --cacert "$tls/ca.pem" "$@"
}
