#!/bin/sh
# Runs inside the two-tier VM: the make run demo. For each mode given, puts
# a hot set on the slow node 1, runs it, and prints how much of it reached
# the fast node 0 over time and what the promotion counters did.
#
# usage: demo.sh HOTSET_BINARY SECONDS MODE...
# MODE: numab (kernel.numa_balancing=2), kmmscand (numa_balancing=0,
# kmmscand on) or none (no promotion at all).
bin=$1
secs=$2
shift 2
kmm=/sys/kernel/mm/kmmscand
counters="pgpromote_success pgpromote_candidate numa_hint_faults numa_pte_updates kmmscand_mm_scans kmmscand_pte_scanned kmmscand_slowtier_accessed kmmscand_migrated kmmscand_migrate_failed"

vmstat_get() {
	awk -v k="$1" '$1 == k { print $2; f = 1 } END { if (!f) print "-" }' /proc/vmstat
}

echo "memory tiers:"
for t in /sys/devices/virtual/memory_tiering/memory_tier*; do
	echo "  $(basename "$t"): nodes $(cat "$t/nodelist")"
done

for mode in "$@"; do
	case $mode in
	numab)
		sysctl -qw kernel.numa_balancing=2
		[ -d $kmm ] && echo 0 >$kmm/scan_enabled ;;
	kmmscand)
		if [ ! -d $kmm ]; then
			echo "== $mode: this kernel has no kmmscand; skipped"
			continue
		fi
		sysctl -qw kernel.numa_balancing=0
		echo 1 >$kmm/scan_enabled ;;
	none)
		sysctl -qw kernel.numa_balancing=0
		[ -d $kmm ] && echo 0 >$kmm/scan_enabled ;;
	*)
		echo "unknown mode $mode"
		exit 2 ;;
	esac
	echo
	echo "== $mode: numa_balancing=$(cat /proc/sys/kernel/numa_balancing)" \
		"kmmscand=$(cat $kmm/scan_enabled 2>/dev/null || echo absent)"
	for c in $counters; do
		eval "before_$c=$(vmstat_get $c)"
	done
	"$bin" -s 256 -H 64 -n 1 -t "$secs" -i 1000 || exit 1
	echo "-- /proc/vmstat changes during the run:"
	for c in $counters; do
		a=$(vmstat_get $c)
		eval "b=\$before_$c"
		[ "$a" = "-" ] && continue
		printf "   %-28s %10d\n" "$c" $((a - b))
	done
done
sysctl -qw kernel.numa_balancing=0
