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

# CPU seconds the kmmscand thread used so far; 0 while it does not run.
kmmscand_cpu() {
	pid=$(pgrep -x kmmscand | head -n 1)
	if [ -z "$pid" ]; then
		echo 0
		return
	fi
	awk -v hz="$(getconf CLK_TCK)" '{ print ($14 + $15) / hz }' /proc/"$pid"/stat
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
		eval "before_$c=$(vmstat_get "$c")"
	done
	kcpu0=$(kmmscand_cpu)
	# The subshell's "times": its children's user and system time.
	( "$bin" -s 256 -H 64 -n 1 -t "$secs" -i 1000 || exit 1
	  times >/tmp/kmm-demo-times ) || exit 1
	tail -n 1 /tmp/kmm-demo-times | sed 's/[ms]/ /g' |
		awk '{ printf "app_user=%.2f app_sys=%.2f\n", $1 * 60 + $2, $3 * 60 + $4 }'
	echo "kmmscand_cpu=$(echo "$kcpu0 $(kmmscand_cpu)" |
		awk '{ printf "%.2f", $2 - $1 }')"
	echo "-- /proc/vmstat changes during the run:"
	for c in $counters; do
		a=$(vmstat_get "$c")
		b=$(eval "echo \$before_$c")
		[ "$a" = "-" ] && continue
		printf "   %-28s %10d\n" "$c" $((a - b))
	done
done
sysctl -qw kernel.numa_balancing=0
