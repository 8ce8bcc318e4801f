#!/bin/sh
# Runs inside the two-tier VM: make bench.  Reads a plan, one run a line:
#   <config> <workload> <rate_limit_mbps|-> <tierbench arguments...>
# and for each sets the configuration up, runs the workload and brackets
# its output with "B <config> <workload>" and "E <status>" lines, which the
# host parses (harness/kmmlib/bench.py); "bench.sh: done" ends the plan.
#
# A configuration "kmmscand:knob=value[:knob=value...]" runs kmmscand at its
# defaults but for the knobs of /sys/kernel/mm/kmmscand it names.  A "#N"
# after a configuration marks its Nth run when the plan repeats it.
#
# usage: bench.sh TIERBENCH PLAN_FILE
bin=$1
plan=$2
kmm=/sys/kernel/mm/kmmscand
rate=/proc/sys/kernel/numa_balancing_rate_limit_mbps
lru_gen=/sys/kernel/mm/lru_gen/enabled
knobs="smart_scan pmd_young skip_idle_mm"
# Every knob but scan_enabled, which each configuration sets itself.
all_knobs=$(cd $kmm && ls | grep -vx scan_enabled)

die() {
	echo "bench.sh: $*"
	exit 2
}

[ -x "$bin" ] || die "no workload binary at $bin"
[ -r "$plan" ] || die "no plan at $plan"
[ -d $kmm ] || die "this kernel has no kmmscand (CONFIG_KMMSCAND=n?)"

# The defaults, to return to before every run.
for k in $all_knobs; do
	eval "default_$k=$(cat $kmm/$k)"
done
default_rate=$(cat $rate)
# Tiering as administrators run it: demotion on, so promotion into a full
# fast node can make room by demoting cold pages.
echo 1 >/sys/kernel/mm/numa/demotion_enabled || die "cannot enable demotion"

# kswapd gives a node up after MAX_RECLAIM_RETRIES runs in a row that
# reclaim nothing (a fast node full of locked memory: workload k), and only
# reclaim that makes progress on the node wakes it again: the runs after
# would find it asleep.  Before each run, a cgroup of our own puts a few
# MiB of tmpfs on the fast node (the CPUs' node) and reclaims them with
# memory.reclaim; demoting them is progress, and kswapd is back.
cgroup=/sys/fs/cgroup
revive_cg=$cgroup/kmm-revive-kswapd
revive_tmp=/tmp/kmm-revive-kswapd
# Enough pages to reclaim to count as progress, too few to matter.
revive_mib=4
revive_ready=
if echo +memory >$cgroup/cgroup.subtree_control 2>/dev/null &&
   mkdir -p $revive_cg $revive_tmp &&
   mount -t tmpfs none $revive_tmp 2>/dev/null &&
   [ -e $revive_cg/memory.reclaim ]; then
	revive_ready=1
else
	echo "bench.sh: no cgroup memory.reclaim: a run may find kswapd given up by the one before"
fi

revive_kswapd() {
	[ -n "$revive_ready" ] || return 0
	sh -c "echo \$\$ >$revive_cg/cgroup.procs &&
	       dd if=/dev/zero of=$revive_tmp/fill bs=1M count=$revive_mib" \
		2>/dev/null
	# It fails when it cannot reclaim all it was asked: no matter.
	echo ${revive_mib}M >$revive_cg/memory.reclaim 2>/dev/null
	rm -f $revive_tmp/fill
	return 0
}

reset_config() {
	sysctl -qw kernel.numa_balancing=0
	[ -w $lru_gen ] && echo n >$lru_gen
	echo 0 >$kmm/scan_enabled
	# Ranges refuse a min above the current max and the like: a few
	# passes put any order of changes back.
	for pass in 1 2 3; do
		for k in $all_knobs; do
			eval "echo \$default_$k" >$kmm/$k 2>/dev/null
		done
	done
	for k in $all_knobs; do
		[ "$(cat $kmm/$k)" = "$(eval "echo \$default_$k")" ] ||
			die "cannot put $k back to its default"
	done
	echo "$default_rate" >$rate
}

# Sets configuration $1 up; prints the tierbench flags it adds.  "+mglru"
# after a configuration turns the multi-gen LRU on for it.
set_config() {
	case $1 in
	*+mglru)
		[ -w $lru_gen ] || die "$1: this kernel has no multi-gen LRU"
		echo y >$lru_gen || die "$1: cannot turn the multi-gen LRU on"
		set_config "${1%+mglru}"
		return ;;
	none|oracle) ;;
	numab) sysctl -qw kernel.numa_balancing=2 ;;
	kmmscand) echo 1 >$kmm/scan_enabled ;;
	kmm-no-smart-scan)
		echo 0 >$kmm/smart_scan
		echo 1 >$kmm/scan_enabled ;;
	kmm-no-pmd-young)
		echo 0 >$kmm/pmd_young
		echo 1 >$kmm/scan_enabled ;;
	kmm-no-idle-skip)
		echo 0 >$kmm/skip_idle_mm
		echo 1 >$kmm/scan_enabled ;;
	kmm-all-off)
		for k in $knobs; do
			echo 0 >$kmm/$k
		done
		echo 1 >$kmm/scan_enabled ;;
	kmmscand:*)
		for kv in $(echo "${1#kmmscand:}" | tr : ' '); do
			echo "${kv#*=}" >"$kmm/${kv%%=*}" ||
				die "$1: cannot set ${kv%%=*} to ${kv#*=}"
		done
		echo 1 >$kmm/scan_enabled ;;
	*) die "unknown configuration $1" ;;
	esac
}

# The guest's memory is backed lazily: the first write to a guest page in
# a boot makes QEMU, and the host under it, fault the page in.  Runs that
# promote into never-written fast-node memory were charged for that, up
# to ten times the copy cost (the first run of a boot, whichever its
# configuration), and the application stalled on the pages being copied.
# Write all the memory the runs can use once, first, with tmpfs pages
# bound to each node in turn, and free it.
warm_memory() {
	warm=/tmp/kmm-warm
	mkdir -p $warm && mount -t tmpfs -o size=100% none $warm || return 0
	for dir in /sys/devices/system/node/node[0-9]*; do
		node=${dir##*node}
		free_kb=$(awk '/MemFree/{print $4}' $dir/meminfo)
		# Leave what the node's kernel allocations need meanwhile.
		mib=$((free_kb / 1024 - 160))
		[ $mib -gt 0 ] || continue
		numactl --membind="$node" dd if=/dev/zero of=$warm/$node \
			bs=1M count=$mib 2>/dev/null
		rm -f $warm/$node
	done
	umount $warm
}
t0=$(date +%s)
warm_memory
echo "bench.sh: memory written once in $(($(date +%s) - t0)) s"

echo "tiers: $(for t in /sys/devices/virtual/memory_tiering/memory_tier*; do
	printf '%s=%s ' "${t##*/}" "$(cat "$t/nodelist")"; done)"
while read -r config workload limit args; do
	case $config in ''|'#'*) continue ;; esac
	reset_config
	# Let the previous run's memory be freed and the node settle.
	sync
	revive_kswapd
	echo 3 >/proc/sys/vm/drop_caches
	set_config "${config%%#*}"
	[ "$limit" = "-" ] || echo "$limit" >$rate
	flags=
	[ "${config%%#*}" = oracle ] && flags=-o
	echo "B $config $workload"
	# shellcheck disable=SC2086 # the arguments are split on purpose
	"$bin" $args $flags </dev/null
	echo "E $?"
done <"$plan"
reset_config
# The host takes this for the end of the plan (bench.py DONE_LINE): the
# VM's own exit status line can be lost when it powers off.
echo "bench.sh: done"
