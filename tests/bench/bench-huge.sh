# SPDX-License-Identifier: BSD-3-Clause
# Sourced by the benchmarks that run DPDK programs on hugepages: find or make
# the pages a run needs and give them back afterwards, and stop a process
# the benchmark started. The caller defines log() and die().

HUGE_ORIG=
HUGE_MOUNTED=
HUGE_MKDIR=

# 2 MiB pages needed for a run holding n mbufs of b bytes each, plus 1 GiB
# for everything else (rings, the synced table, testpmd's own pools).
pages_for() {
	echo $(( ($1 * $2 + (1 << 30)) / (2 << 20) + 1 ))
}

hugepages_ensure() {
	local need=$1 free total

	[ "$(cat /sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages 2>/dev/null || echo x)" != x ] ||
		die "no 2 MiB hugepages on this kernel"
	if ! grep -q '^[^ ]* [^ ]* hugetlbfs' /proc/mounts; then
		[ -d /dev/hugepages ] || { mkdir /dev/hugepages; HUGE_MKDIR=1; }
		mount -t hugetlbfs none /dev/hugepages
		HUGE_MOUNTED=/dev/hugepages
		log "hugepages: mounted hugetlbfs on /dev/hugepages (unmounted on exit)"
	fi
	total=$(cat /proc/sys/vm/nr_hugepages)
	# Other processes may take pages meanwhile: raise by the deficit, thrice.
	for _ in 1 2 3; do
		free=$(awk '/^HugePages_Free:/ { print $2 }' /proc/meminfo)
		[ "$free" -lt "$need" ] || break
		[ -n "$HUGE_ORIG" ] || HUGE_ORIG=$(cat /proc/sys/vm/nr_hugepages)
		echo $(( $(cat /proc/sys/vm/nr_hugepages) + need - free )) \
			> /proc/sys/vm/nr_hugepages
	done
	free=$(awk '/^HugePages_Free:/ { print $2 }' /proc/meminfo)
	[ "$total" = "$(cat /proc/sys/vm/nr_hugepages)" ] ||
		log "hugepages: vm.nr_hugepages $total -> $(cat /proc/sys/vm/nr_hugepages)" \
		    "($free free, $need wanted; restored on exit)"
	[ "$free" -ge "$need" ] ||
		die "only $free free 2 MiB hugepages, $need wanted (memory too fragmented or short?)"
}

# Undo what hugepages_ensure did. A DPDK process killed by stop_pid's SIGKILL
# leaves its hugepage files (PREFIXmap_N), which would keep their pages past
# the restore: those of file prefix $1 go first.
hugepages_restore() {
	local dir

	for dir in $(awk '$3 == "hugetlbfs" { print $2 }' /proc/mounts); do
		rm -f "$dir/$1-"*
	done
	if [ -n "$HUGE_ORIG" ]; then
		echo "$HUGE_ORIG" > /proc/sys/vm/nr_hugepages || true
		log "hugepages: vm.nr_hugepages back to $HUGE_ORIG"
	fi
	if [ -n "$HUGE_MOUNTED" ]; then
		umount "$HUGE_MOUNTED" || true
		[ -z "$HUGE_MKDIR" ] || rmdir "$HUGE_MOUNTED" || true
		log "hugepages: unmounted $HUGE_MOUNTED"
	fi
}

# Stop one process we started: SIGINT (both print and clean up), then KILL.
stop_pid() {
	local pid=$1

	kill -0 "$pid" 2>/dev/null || return 0
	kill -INT "$pid" 2>/dev/null || true
	for _ in $(seq 1 100); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	kill -KILL "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
}
