#!/bin/sh
# Runs inside the two-tier VM: each kselftest program with its timeout,
# its TAP output and exit status written to OUTDIR, then a kmemleak scan
# so that leaks show in the kernel log the harness checks.
#
# usage: run-tests.sh OUTDIR PROGRAM:TIMEOUT...
out=$1
shift
mkdir -p "$out"
rm -f "$out"/*.tap "$out"/*.rc
# The rig is meant to have two tiers: a missing one fails, not skips.
export NUMA_TIERING_REQUIRE_TIERS=1
# Likewise its kernel has /proc/<pid>/kmmscand and memory.kmmscand, and
# the guest a cgroup v2 memory controller: a missing one fails.
export KMMSCAND_REQUIRE_PROC=1
export KMMSCAND_REQUIRE_CGROUP=1
mountpoint -q /sys/kernel/debug || mount -t debugfs none /sys/kernel/debug

# A test killed by its timeout cannot disarm the fault injection it armed;
# left armed, it would fail allocations in every later test and in this
# script.  Probability first: the task filter still spares this shell.
disarm_fault_injection() {
	for d in /sys/kernel/debug/failslab /sys/kernel/debug/fail_page_alloc; do
		[ -w "$d/probability" ] || continue
		echo 0 >"$d/probability"
		echo 0 >"$d/times"
		echo N >"$d/task-filter"
	done
}

for spec in "$@"; do
	prog=${spec%:*}
	secs=${spec##*:}
	name=$(basename "$prog")
	echo "KMM-TEST-START $name"
	# The whole TAP goes to the file; the plan and result lines go out as
	# they come, for the host to show progress.  stdbuf: a test writing
	# to a pipe would otherwise hold its lines back until it exits.
	{
		timeout -s KILL "$secs" stdbuf -oL "$prog" 2>&1
		echo "$?" >"$out/$name.rc"
	} | tee "$out/$name.tap" | grep --line-buffered -E '^((not )?ok [0-9]+ |1\.\.[0-9]+$)'
	rc=$(cat "$out/$name.rc")
	echo "KMM-TEST-END $name $rc"
	disarm_fault_injection
done

if [ -w /sys/kernel/debug/kmemleak ]; then
	# Objects younger than kmemleak's minimum age are not reported; the
	# second scan catches what the tests freed (or leaked) at the end.
	echo scan >/sys/kernel/debug/kmemleak
	sleep 6
	echo scan >/sys/kernel/debug/kmemleak
	cat /sys/kernel/debug/kmemleak >"$out/kmemleak.txt"
fi
exit 0
