#!/bin/sh
# Runs inside the two-tier VM: make bench.  Reads a plan, one run a line:
#   <config> <workload> <rate_limit_mbps|-> <tierbench arguments...>
# and for each sets the configuration up, runs the workload and brackets
# its output with "B <config> <workload>" and "E <status>" lines, which the
# host parses (harness/kmmlib/bench/guest.py); "bench.sh: done" ends the
# plan.
#
# A configuration "kmmscand:knob=value[:knob=value...]" runs kmmscand at its
# defaults but for the knobs of /sys/kernel/mm/kmmscand it names.  Likewise
# "damon-paddr:ms=N[:bytes=N][:reset_interval_ms=N]" is damon-paddr with
# other values in its scheme's quotas/ directory.  A "#N"
# after a configuration marks its Nth run when the plan repeats it.
#
# The damon-* configurations promote with DAMON (DAMOS_MIGRATE_HOT),
# driven through its sysfs interface; after such a run a line
#   D damon_nr_tried=... damon_sz_tried=... damon_nr_applied=...
# gives the scheme's statistics.
#
# A workload whose arguments start with "memcached" is the server
# workload: bench.sh starts memcached and runs MCBENCH (the client,
# harness/workloads/mcbench.c) against it instead of tierbench.
#
# The environment may set KMM_FAST_NODE and KMM_SLOW_NODE (default 0 and
# 1, the VM's) and KMM_HOST=1: run on a host with a real slow tier
# (make bench HOST=1, harness/kmmlib/hostbench.py), where memory is not
# written once at the start and kswapd is not revived through a cgroup of
# our own (both only for the VM's sake, and both change the host).
#
# usage: bench.sh TIERBENCH PLAN_FILE [MCBENCH]
bin=$1
plan=$2
mcbench=$3
kmm=/sys/kernel/mm/kmmscand
rate=/proc/sys/kernel/numa_balancing_rate_limit_mbps
# A kernel without the series (make bench KERNEL=) has NUMA balancing's
# own name for the limit only.
[ -e $rate ] || rate=/proc/sys/kernel/numa_balancing_promote_rate_limit_MBps
lru_gen=/sys/kernel/mm/lru_gen/enabled
trace=/sys/kernel/tracing
# Two events per migrate_pages() call, about 44 bytes: NUMA balancing's
# hint faults migrate one page a call, up to 200,000 calls in a run of (b),
# about 18 MB in all; 16 MiB a CPU holds that with room.  An overrun is
# reported (copy_trace_lost), not hidden.
copy_trace_kb=16384
knobs="smart_scan pmd_young skip_idle_mm"
damon=/sys/kernel/mm/damon/admin/kdamonds
damon_ctx=$damon/0/contexts/0
damon_scheme=$damon_ctx/schemes/0
# The fast and the slow node: the workloads place their memory on the
# slow one, DAMON promotes from the slow one to the fast one.
fast_nid=${KMM_FAST_NODE:-0}
slow_nid=${KMM_SLOW_NODE:-1}
host=${KMM_HOST:-0}
# memcached's port for the server workload.
mc_port=${KMM_MC_PORT:-21987}
# The largest value DAMON's sysfs ranges take (unsigned long; the access
# frequency and age are unsigned int inside DAMON: the largest of those).
ulong_max=18446744073709551615
uint_max=4294967295
# The pid of the background job that turns DAMON on once the workers
# have placed their memory.
damon_attach=
# Where tierbench writes its workers' pids once they are placed (-r).
placed_file=/tmp/kmm-placed-$$
# Every knob but scan_enabled, which each configuration sets itself.
all_knobs=
if [ -d $kmm ]; then
	for f in "$kmm"/*; do
		[ -e "$f" ] && [ "${f##*/}" != scan_enabled ] &&
			all_knobs="$all_knobs ${f##*/}"
	done
fi

die() {
	echo "bench.sh: $*"
	exit 2
}

[ -x "$bin" ] || die "no workload binary at $bin"
[ -r "$plan" ] || die "no plan at $plan"
# A kernel without kmmscand (the base, make bench KERNEL=) runs the
# configurations that need none of it: none, numab, oracle, damon-*.
[ -d $kmm ] || echo "bench.sh: this kernel has no kmmscand; its configurations cannot run"

# The defaults, to return to before every run.
for k in $all_knobs; do
	eval "default_$k=$(cat "$kmm/$k")"
done
default_rate=$(cat $rate)
# The multi-gen LRU as it was (off at the VM's boot; a host may run with
# it on): what reset_config returns to.
default_lru_gen=n
[ -r $lru_gen ] && default_lru_gen=$(cat $lru_gen)
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
if [ "$host" = 1 ]; then
	echo "bench.sh: on a host: kswapd is not revived before each run"
elif echo +memory >$cgroup/cgroup.subtree_control 2>/dev/null &&
   mkdir -p $revive_cg $revive_tmp &&
   mount -t tmpfs none $revive_tmp 2>/dev/null &&
   [ -e $revive_cg/memory.reclaim ]; then
	revive_ready=1
else
	echo "bench.sh: no cgroup memory.reclaim: a run may find kswapd given up by the one before"
fi

# The copy-time trace (copy_trace_start), in the VM only: on a host the
# tracing buffer may be someone else's.
copy_trace=
if [ "$host" = 1 ]; then
	echo "bench.sh: on a host: migrations are not traced (no copy times)"
elif { [ -d $trace/events ] || mount -t tracefs nodev $trace 2>/dev/null; } &&
     [ -w $trace/events/migrate/mm_migrate_pages_start/enable ]; then
	copy_trace=1
else
	echo "bench.sh: no migrate tracepoints: no copy times"
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

# Whether damon_setup has set DAMON up since the last damon_off: only
# then does damon_off touch it, as a host may run kdamonds of its own.
damon_mine=

# Stops DAMON and removes its kdamonds, so that the next run starts
# without them.  "off" returns once the kdamond has exited.
damon_off() {
	if [ -n "$damon_attach" ]; then
		kill "$damon_attach" 2>/dev/null
		wait "$damon_attach" 2>/dev/null
		damon_attach=
	fi
	[ -n "$damon_mine" ] && [ -d $damon ] || return 0
	damon_mine=
	for k in "$damon"/[0-9]*; do
		[ -d "$k" ] || continue
		[ "$(cat "$k/state")" = off ] || echo off >"$k/state" ||
			die "cannot turn DAMON's ${k##*/} off"
	done
	echo 0 >$damon/nr_kdamonds || die "cannot remove DAMON's kdamonds"
}

# One kdamond, one context with operations set $1 and one migrate_hot
# scheme to the fast node; "quota" as $2 limits it.  Following DAMON's
# design (Documentation/mm/damon/design.rst, "Operation Schemes") and its
# sysfs usage (Documentation/admin-guide/mm/damon/usage.rst): the default
# monitoring intervals (5 ms sampling, 100 ms aggregation) with the
# targets' regions updated every second, not every 60 s, so that a
# mapping made after the start is seen within the run; the scheme applies
# at every aggregation (apply_interval_us 0) to any region of a page or
# more that was seen accessed in at least one sample of the last
# aggregation interval, whatever its age: the quota, not the access
# pattern, bounds how much is migrated, and its prioritization picks the
# most often accessed regions first.  The quota is the one of the sysfs
# usage example and of DAMON_LRU_SORT's defaults: 10 ms of the action's
# time, at most 1 GiB, per second.
# shellcheck disable=SC2015 # "a && b || die": die if any step fails
damon_setup() {
	[ -d $damon ] || die "this kernel has no DAMON sysfs interface"
	damon_mine=1
	echo 1 >$damon/nr_kdamonds &&
	echo 1 >$damon/0/contexts/nr_contexts &&
	grep -qw "$1" $damon_ctx/avail_operations &&
	echo "$1" >$damon_ctx/operations &&
	echo 5000 >$damon_ctx/monitoring_attrs/intervals/sample_us &&
	echo 100000 >$damon_ctx/monitoring_attrs/intervals/aggr_us &&
	echo 1000000 >$damon_ctx/monitoring_attrs/intervals/update_us &&
	echo 1 >$damon_ctx/schemes/nr_schemes &&
	echo migrate_hot >$damon_scheme/action &&
	echo "$fast_nid" >$damon_scheme/target_nid &&
	echo 0 >$damon_scheme/apply_interval_us &&
	echo 4096 >$damon_scheme/access_pattern/sz/min &&
	echo $ulong_max >$damon_scheme/access_pattern/sz/max &&
	echo 1 >$damon_scheme/access_pattern/nr_accesses/min &&
	echo $uint_max >$damon_scheme/access_pattern/nr_accesses/max &&
	echo 0 >$damon_scheme/access_pattern/age/min &&
	echo $uint_max >$damon_scheme/access_pattern/age/max &&
	echo 1000 >$damon_scheme/quotas/weights/nr_accesses_permil ||
		die "cannot set DAMON up for $1"
	[ "$2" = quota ] || return 0
	echo 10 >$damon_scheme/quotas/ms &&
	echo $((1024 * 1024 * 1024)) >$damon_scheme/quotas/bytes &&
	echo 1000 >$damon_scheme/quotas/reset_interval_ms ||
		die "cannot set DAMON's quota"
}

# damon-paddr: the slow node's memory blocks, each a region of its own
# (16 of 128 MiB for the VM's 2 GiB), then on.  DAMON adapts its regions
# at each aggregation interval, starting from the ones it is given, and
# its quota holds from the first reset interval only: given the node as
# one region, its first aggregation found it accessed and migrated all
# of it, the 576 MiB of (a) that are never accessed with the hot set.
# The vaddr set divides its targets into the minimum number of regions
# (10) itself.
# shellcheck disable=SC2015 # "a && b || die": die if any step fails
damon_paddr_on() {
	block=$((0x$(cat /sys/devices/system/memory/block_size_bytes)))
	ranges=$(printf '%s\n' /sys/devices/system/node/node"$slow_nid"/memory[0-9]* |
		sed 's/.*memory//' | sort -n |
		awk -v bs=$block '{ printf "%.0f %.0f\n", $1 * bs, ($1 + 1) * bs }')
	[ -n "$ranges" ] || die "node $slow_nid has no memory blocks"
	echo 1 >$damon_ctx/targets/nr_targets &&
	echo "$ranges" | wc -l >$damon_ctx/targets/0/regions/nr_regions ||
		die "cannot give DAMON its targets"
	i=0
	echo "$ranges" | while read -r start end; do
		echo "$start" >$damon_ctx/targets/0/regions/$i/start &&
		echo "$end" >$damon_ctx/targets/0/regions/$i/end ||
			die "cannot give DAMON the range $start-$end"
		i=$((i + 1))
	done || exit 2
	echo on >$damon/0/state || die "cannot turn DAMON on"
}

# In the background, for every damon-* configuration: waits for
# tierbench ($1) to have placed its workers' memory on the slow node and
# to have written their pids to $2 (its -r), then turns DAMON on.  On
# from before the placement, DAMON promoted pages as tierbench wrote
# them, whichever were written first (the hot set of the uniform
# workloads): a boot's luck, not the hot set found while the run goes.
# tierbench says when, rather than this script polling every worker's
# RSS: with 64 busy workers on two CPUs, such a poll (a pgrep and an awk
# for each) took longer than the run, and DAMON never started.
# vaddr: each worker is a target (the memory is the workers'; tierbench
# itself only samples), and so is bench.sh itself: DAMON stops a kdamond
# whose targets have all exited, and this one must live until the run's
# end for tierbench to read its CPU time and for damon_report to read
# the scheme's statistics.
damon_start_when_placed() {
	while [ ! -e "$2" ]; do
		kill -0 "$1" 2>/dev/null || return 0
		sleep 0.1
	done
	# shellcheck disable=SC2046 # one pid a line, split on purpose
	damon_on $(cat "$2")
}

# Turns DAMON on: paddr watches the slow node; vaddr the processes $@, and
# bench.sh itself (see damon_start_when_placed).
damon_on() {
	if [ "$(cat $damon_ctx/operations)" = paddr ]; then
		damon_paddr_on
		return
	fi
	echo $(($# + 1)) >$damon_ctx/targets/nr_targets ||
		die "cannot give DAMON $(($# + 1)) targets"
	i=0
	for pid in $$ "$@"; do
		echo "$pid" >$damon_ctx/targets/$i/pid_target ||
			die "cannot make $pid a DAMON target"
		i=$((i + 1))
	done
	echo on >$damon/0/state || die "cannot turn DAMON on"
}

# The value of tierbench's option $1 in arguments $3... ($2 without it).
tierbench_arg() {
	flag=$1
	v=$2
	shift 2
	while [ $# -gt 0 ]; do
		[ "$1" = "$flag" ] && v=$2
		shift
	done
	echo "$v"
}

# The scheme's statistics after a damon-* run, as a "D" line.
damon_report() {
	[ -d $damon/0 ] || return 0
	[ "$(cat $damon/0/state)" = on ] &&
		echo update_schemes_stats >$damon/0/state
	line=D
	for f in nr_tried sz_tried nr_applied sz_applied qt_exceeds; do
		line="$line damon_$f=$(cat $damon_scheme/stats/$f)"
	done
	echo "$line"
}

# How long each migrate_pages() call of the run took, from the migrate
# tracepoints, summed per kind of caller: the kmmscand thread, the
# workload's own threads (NUMA balancing's hint faults), kdamond, kswapd
# (demotion).  Copying is most of the CPU that promotion costs, and the
# same pages cost the same to copy with or without room on the fast node;
# what a mechanism spends besides copying is its own choice.  A single
# call that takes seconds is a copy the emulator stalled (a 2 MiB batch
# copies in milliseconds on any machine), and names the run as disturbed
# (stalled_runs() in harness/kmmlib/bench/model.py).
copy_trace_start() {
	[ -n "$copy_trace" ] || return 0
	echo 0 >$trace/tracing_on
	echo mono >$trace/trace_clock
	echo "$copy_trace_kb" >$trace/buffer_size_kb
	echo >$trace/trace
	echo 1 >$trace/events/migrate/mm_migrate_pages_start/enable
	echo 1 >$trace/events/migrate/mm_migrate_pages/enable
	copy_jobs_trace 1
	echo 1 >$trace/tracing_on
}

# kmmscand's migration workers (a kernel with the workqueue "kmmscand"):
# the jobs queued to them and when each began and ended, so that the "M"
# line says how long a job's folios waited isolated before their
# migration call, and how long they were held in all.  The start and end
# events are filtered to the job's function, whose address kallsyms gives.
copy_jobs_trace() {	# 1|0
	wq=$trace/events/workqueue
	fn=$(awk '$3 == "kmmscand_copy_work" { print $1; exit }' /proc/kallsyms)
	[ -n "$fn" ] && [ -w $wq/workqueue_queue_work/enable ] || return 0
	if [ "$1" = 1 ]; then
		echo 'workqueue == "kmmscand"' >$wq/workqueue_queue_work/filter
		echo "function == 0x$fn" >$wq/workqueue_execute_start/filter
		echo "function == 0x$fn" >$wq/workqueue_execute_end/filter
	fi
	for e in workqueue_queue_work workqueue_execute_start \
		 workqueue_execute_end; do
		echo "$1" >$wq/$e/enable
	done
}

# The "M" line of the run: calls, pages moved, seconds, and the longest
# call's seconds and pages, per kind of caller; and the events lost.
copy_trace_report() {
	[ -n "$copy_trace" ] || return 0
	echo 0 >$trace/events/migrate/mm_migrate_pages_start/enable
	echo 0 >$trace/events/migrate/mm_migrate_pages/enable
	copy_jobs_trace 0
	awk '
	function kind(task) {
		if (task ~ /^kmmscand-/) return "kmmscand"
		# Promotions by a kworker are those of kmmscand'"'"'s workers
		if (task ~ /^kworker\//) return "kmmscand"
		if (task ~ /^kdamond/) return "kdamond"
		if (task ~ /^kswapd/) return "kswapd"
		return "app"
	}
	/^#/ { next }
	# A worker job: queued, begun, ended, keyed by its work struct
	{
		for (i = 2; i <= NF; i++)
			if ($i ~ /^workqueue_(queue_work|execute_(start|end)):$/)
				break
	}
	i <= NF {
		t = $(i - 1); sub(/:$/, "", t)
		# "work struct=P function=..." and "work struct P: function ..."
		w = $(i + 2) == "struct" ? $(i + 3) : $(i + 2)
		sub(/^struct=/, "", w); sub(/:$/, "", w)
		if ($i == "workqueue_queue_work:") {
			queued[w] = t
		} else if ($i == "workqueue_execute_start:" && (w in queued)) {
			d = t - queued[w]; begun[w] = queued[w]
			jobs++; wait += d
			if (d > wait_max) wait_max = d
			delete queued[w]
		} else if ($i == "workqueue_execute_end:" && (w in begun)) {
			d = t - begun[w]
			if (d > held_max) held_max = d
			delete begun[w]
		}
		next
	}
	{
		for (i = 2; i <= NF; i++)
			if ($i ~ /^mm_migrate_pages/) break
		if (i > NF) next
		t = $(i - 1); sub(/:$/, "", t)
	}
	# Promotion and demotion only: not the oracle'"'"'s move_pages()
	$i == "mm_migrate_pages_start:" {
		if ($0 ~ /reason=(numa_misplaced|damon|demotion)/) {
			start[$1] = t
			promo[$1] = $0 !~ /reason=demotion/
		}
		next
	}
	$i == "mm_migrate_pages:" && ($1 in start) {
		k = kind($1); d = t - start[$1]
		n = $(i + 1); sub(/^nr_succeeded=/, "", n)
		calls[k]++; pages[k] += n; secs[k] += d
		if (d > most[k]) { most[k] = d; most_pages[k] = n }
		# From the first promotion call begun to the last one ended
		if (promo[$1] && n > 0) {
			if (first == "" || start[$1] < first) first = start[$1]
			if (t > last) last = t
			promoted += n
		}
		delete start[$1]
	}
	END {
		line = sprintf("M promote_span_s=%.3f promote_span_pages=%d",
			       first == "" ? 0 : last - first, promoted)
		split("kmmscand app kdamond kswapd", kinds, " ")
		for (j = 1; j <= 4; j++) {
			k = kinds[j]
			line = sprintf("%s %s_copy_calls=%d %s_copy_pages=%d %s_copy_s=%.3f %s_copy_max_s=%.3f %s_copy_max_pages=%d",
				       line, k, calls[k], k, pages[k], k, secs[k],
				       k, most[k], k, most_pages[k])
		}
		line = sprintf("%s kmmscand_jobs=%d kmmscand_job_wait_s=%.3f kmmscand_job_wait_max_s=%.3f kmmscand_job_held_max_s=%.3f",
			       line, jobs, wait, wait_max, held_max)
		print line
	}' $trace/trace | tr -d '\n'
	# Events the ring buffer overwrote: the figures miss calls
	echo " copy_trace_lost=$(cat $trace/per_cpu/cpu*/stats |
		awk '$1 == "overrun:" { n += $2 } END { print n + 0 }')"
	echo >$trace/trace
}

reset_config() {
	damon_off
	sysctl -qw kernel.numa_balancing=0
	[ -w $lru_gen ] && echo "$default_lru_gen" >$lru_gen
	[ -d $kmm ] && echo 0 >$kmm/scan_enabled
	# Ranges refuse a min above the current max and the like: a few
	# passes put any order of changes back.
	for pass in 1 2 3; do
		for k in $all_knobs; do
			eval "echo \$default_$k" >"$kmm/$k" 2>/dev/null
		done
	done
	for k in $all_knobs; do
		[ "$(cat "$kmm/$k")" = "$(eval "echo \$default_$k")" ] ||
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
	# Turned on by run_memcached once the server's memory is placed.
	numab-late) ;;
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
			echo 0 >"$kmm/$k"
		done
		echo 1 >$kmm/scan_enabled ;;
	kmmscand:*)
		for kv in $(echo "${1#kmmscand:}" | tr : ' '); do
			echo "${kv#*=}" >"$kmm/${kv%%=*}" ||
				die "$1: cannot set ${kv%%=*} to ${kv#*=}"
		done
		echo 1 >$kmm/scan_enabled ;;
	# Each turned on by damon_start_when_placed.
	damon-paddr) damon_setup paddr quota ;;
	damon-paddr-noquota) damon_setup paddr noquota ;;
	damon-paddr:*)
		damon_setup paddr quota
		for kv in $(echo "${1#damon-paddr:}" | tr : ' '); do
			echo "${kv#*=}" >"$damon_scheme/quotas/${kv%%=*}" ||
				die "$1: cannot set DAMON's quota ${kv%%=*}"
		done ;;
	damon-vaddr) damon_setup vaddr quota ;;
	*) die "unknown configuration $1" ;;
	esac
}

# The fast node's free memory and the promotion watermarks of its zones,
# in MiB: NUMA balancing's tiering mode skips its hot threshold test while
# a zone has 1 GiB (or a 16th of the node) free above that watermark
# (pgdat_free_space_enough()), so this says which test it was making.
fast_free() {
	awk -v nid="$fast_nid" -v when="$1" '
		$1 == "Node" { on = ($2 == nid ",") ; zone = $4 }
		on && $1 == "pages" && $2 == "free" { free[zone] = $3 }
		on && $1 == "promo" { promo[zone] = $2 }
		END {
			line = "bench.sh: fast node " when ":"
			for (z in free)
				line = line sprintf(" %s free %d promo %d", z,
					free[z] / 256, promo[z] / 256)
			print line " MiB"
		}' /proc/zoneinfo
}

# What memcached's threads were doing when the client gave up on it: each
# thread's state, kernel wait channel and CPU time, twice a second apart
# (a thread that gained CPU time is slow, not stuck), the NUMA balancing
# and promotion counters over that second, and the kernel's list of
# blocked tasks (sysrq w), so that a failed run says whether the server
# hung or crawled.
server_postmortem() {
	echo "bench.sh: memcached ($1) post-mortem:"
	for pass in 1 2; do
		for task in /proc/"$1"/task/*; do
			# comm, state, and utime + stime in clock ticks
			stat=$(awk '{print $2, $3, "cpu_ticks", $14 + $15}' \
				"$task/stat" 2>/dev/null) || continue
			echo "bench.sh:   pass $pass: ${task##*/} $stat" \
				"wchan $(cat "$task/wchan" 2>/dev/null)"
		done
		grep -E '^(numa_hint_faults|pgpromote_success|pgmigrate_fail) ' \
			/proc/vmstat | sed "s/^/bench.sh:   pass $pass: /"
		[ $pass = 2 ] || sleep 1
	done
	echo w > /proc/sysrq-trigger 2>/dev/null &&
		dmesg | tail -n 60 | sed 's/^/bench.sh:   dmesg: /'
}

# The server workload: memcached with room (-m) for mcbench's keys, driven
# by mcbench (arguments $@), which loads the keys, pushes the server's
# memory to the slow node with migratepages and runs.  memcached's hash
# table is sized for the keys up front (hashpower 20: a million buckets),
# so that it does not grow while they are loaded.  -Q among the arguments
# (bench.sh's, not passed on) starts memcached without its LRU crawler and
# LRU maintainer threads, which read items in the background.  A damon-*
# configuration is turned on once mcbench has placed the memory (its -R
# handshake), and so is NUMA balancing for numab-late.
# Returns mcbench's status.
run_memcached() {
	[ -x "$mcbench" ] || die "no mcbench binary (bench.sh's third argument)"
	command -v memcached >/dev/null || die "no memcached (apt install memcached)"
	mc_opts=hashpower=20
	for arg; do
		shift
		if [ "$arg" = -Q ]; then
			mc_opts=$mc_opts,no_lru_crawler,no_lru_maintainer
		else
			set -- "$@" "$arg"
		fi
	done
	mc_mib=$(tierbench_arg -M 1024 "$@")
	memcached -u nobody -l 127.0.0.1 -p "$mc_port" -U 0 -t 2 \
		-m "$mc_mib" -o "$mc_opts" </dev/null &
	mc=$!
	mc_flags=
	[ "${config%%#*}" = oracle ] && mc_flags=-o
	case $config in damon-*|numab-late*)
		rv=/tmp/kmm-mcbench-$$
		rm -f $rv.placed $rv.go
		mc_flags="$mc_flags -R $rv"
		(
			while [ ! -e $rv.placed ]; do
				kill -0 $mc 2>/dev/null || exit 0
				sleep 0.1
			done
			fast_free "when the memory was placed"
			case $config in
			numab-late*) sysctl -qw kernel.numa_balancing=2 ;;
			*) damon_on $mc ;;
			esac
			touch $rv.go
		) &
		damon_attach=$!
	esac
	# shellcheck disable=SC2086 # the flags are split on purpose
	"$mcbench" run -p $mc -P "$mc_port" -f "$fast_nid" -n "$slow_nid" \
		$mc_flags "$@" </dev/null
	mc_status=$?
	[ $mc_status -eq 0 ] || server_postmortem $mc
	fast_free "at the end"
	kill $mc 2>/dev/null
	wait $mc 2>/dev/null
	case $config in damon-*|numab-late*) rm -f "$rv.placed" "$rv.go" ;; esac
	return $mc_status
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
		free_kb=$(awk '/MemFree/{print $4}' "$dir/meminfo")
		# Leave what the node's kernel allocations need meanwhile.
		mib=$((free_kb / 1024 - 160))
		[ $mib -gt 0 ] || continue
		numactl --membind="$node" dd if=/dev/zero of="$warm/$node" \
			bs=1M count=$mib 2>/dev/null
		rm -f "$warm/$node"
	done
	umount $warm
}
if [ "$host" != 1 ]; then
	t0=$(date +%s)
	warm_memory
	echo "bench.sh: memory written once in $(($(date +%s) - t0)) s"
fi

# TCG's slowdown on a PTE walk, for the cost model: ptecal beside
# tierbench, in the VM only (on a host the costs are native already).
ptecal=$(dirname "$bin")/ptecal
if [ "$host" != 1 ] && [ -x "$ptecal" ]; then
	"$ptecal" || echo "bench.sh: ptecal failed"
fi

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
	case $args in
	memcached\ *)
		copy_trace_start
		# shellcheck disable=SC2086 # the arguments are split on purpose
		run_memcached ${args#memcached }
		status=$?
		copy_trace_report ;;
	*)
		copy_trace_start
		case $config in damon-*)
			rm -f "$placed_file"
			flags="$flags -r $placed_file"
		esac
		# shellcheck disable=SC2086 # the arguments are split on purpose
		"$bin" $args $flags -f "$fast_nid" -n "$slow_nid" </dev/null &
		bench=$!
		case $config in damon-*)
			damon_start_when_placed $bench "$placed_file" &
			damon_attach=$!
		esac
		wait $bench
		status=$?
		rm -f "$placed_file"
		copy_trace_report ;;
	esac
	case $config in damon-*) damon_report ;; esac
	echo "E $status"
done <"$plan"
reset_config
# The host takes this for the end of the plan (DONE_LINE in
# harness/kmmlib/bench/guest.py): the VM's own exit status line can be lost
# when it powers off.
echo "bench.sh: done"
