// SPDX-License-Identifier: GPL-2.0
/*
 * kmmscand selftests: the daemon that scans page tables for accessed pages
 * on lower memory tiers and promotes them. Run on a machine with a top
 * memory tier and a lower one, as root, with kernel.numa_balancing=0 so
 * that every promotion is kmmscand's.
 *
 * hot_set_promoted:         a hot set on the slow node reaches the top node;
 *                           the counters move
 * cold_set_stays:           an untouched set stays while a hot one moves
 * mbind_respected:          memory bound to the slow node with MPOL_BIND
 *                           stays, while default-policy memory moves
 * shared_subrange_policy:   of shared mappings, the half that another
 *                           process binds to the slow node with MPOL_BIND
 *                           stays, first or second, while the other moves
 * knobs_reject_bad_input:   every knob refuses bad values with EINVAL and
 *                           keeps its value, and takes good ones
 * disabled_stops_promotion: scan_enabled=0 stops promotion, 1 resumes it
 * thp_promoted_whole:       a THP hot set is promoted as THPs
 * thp_scan_resumes_mid_pmd: THPs read by scans and steps that end inside
 *                           them are promoted as THPs, and each is read
 *                           once per scan
 * contents_intact:          page contents survive promotion, including
 *                           writes made while pages move
 * first_scan_after_delay:   a new process is first scanned scan_delay_ms
 *                           after its fork, not a first period later
 * rescan_after_bound_start: a process that starts under a task MPOL_BIND
 *                           and then drops it is scanned again within the
 *                           shortest period, not a lengthened one later
 * cold_region_turns_hot:    a region passed over for being cold is
 *                           promoted within smart_scan_max_skips + 2 scan
 *                           periods of turning hot
 * cold_region_recalled:     with pmd_young, such a region is promoted
 *                           within 3 periods even in a run of the longest
 *                           skips (smart_scan_max_skips at its limit, 32)
 * scan_cost_knobs:          the knobs that turn the scan-cost features on
 *                           and off, and bound them, refuse bad input with
 *                           EINVAL and keep their value
 * idle_mapping_skipped:     an untouched mapping makes the region and PMD
 *                           skip counters grow, and a sleeping process
 *                           the idle mm one; skip_idle_mm=0 stops that
 * mixed_cgroups_accounted:  a batch that holds the pages of two memory
 *                           cgroups counts each page's promotion in the
 *                           memory.stat of its own cgroup
 * full_node_backs_off:      with no room on the top node, kmmscand backs
 *                           off: few back-off windows, few PTEs read while
 *                           they last, the node never below its min
 *                           watermarks; once there is room, the hot set moves
 * knob_write_ends_wait:     knob writes that shorten the thread's sleep, a
 *                           delay or the periods take effect at once, not
 *                           after the waits the old values started
 * many_processes_promoted:  128 processes, each with a small hot set on the
 *                           slow node, all have it on the top node, and
 *                           promotion never stalls for longer than a
 *                           window computed from the knobs
 * idle_mm_beside_hot:       a small hot set beside a large mm that sleeps
 *                           reaches the top node while the large mm's
 *                           first scan is still under way
 * bound_mm_not_walked:      a running process whose task policy binds all
 *                           its memory to the slow node has its due scans
 *                           passed over (kmmscand_mm_unchanged); it
 *                           skips on a kernel whose configuration says it
 *                           has no per-VMA locks
 * exec_while_promoted:      processes whose threads read slow-tier memory
 *                           exec() over and over while kmmscand promotes
 *                           it: every generation finds its memory intact
 * workers_share_the_copy:   with migrate_threads=1 no worker migrates a
 *                           batch, with 2 (on two CPUs or more) workers
 *                           migrate some, and the hot set is promoted both
 *                           ways
 * thread_does_the_work:     with every CPU busy, the hot set of a process
 *                           is promoted by the kmmscand thread alone: no
 *                           promotion is traced from a thread of the
 *                           process, and a thread of it blocked in read()
 *                           is not switched to meanwhile
 * proc_figures:             /proc/self/kmmscand counts the pages promoted
 *                           for the test and the PTEs its scans read, no
 *                           more than the global counters over the same
 *                           window, and its CPU figure grows
 * exit_while_scanning:      processes that exit or are killed while being
 *                           scanned and migrated all go away, many of them
 *                           seen scanned first (their /proc/<pid>/kmmscand),
 *                           and the daemon promotes a hot set afterwards
 * unmapped_history_forgotten: a buffer mapped where an unmapped one was
 *                           scanned, written once and left on the slow
 *                           node, stays there although kmmscand reads it
 * prctl_opt_out:            a process started by a launcher that opted
 *                           out with prctl keeps the mode across fork and
 *                           exec, and is neither scanned nor promoted while
 *                           its sibling's hot set is
 * prctl_opt_in:             with scan_by_default=0, a process is left alone
 *                           unless its launcher opted in
 * cgroup_off:               the processes of a memory cgroup whose parent
 *                           has memory.kmmscand=0 are not scanned, though
 *                           the child has 1, while a sibling cgroup's are
 *                           promoted; the memory.stat of each counts
 *                           exactly what /proc/<pid>/kmmscand of its
 *                           process does; one moved to the allowed cgroup
 *                           is then promoted
 * min_heat_holds_back_one_read: with min_heat at its highest, a page read
 *                           once stays on the slow node while a hot set
 *                           next to it moves
 * hot_set_moves_on:         once its hot set is on the top node, a process
 *                           that goes on running is scanned at about its
 *                           short period, not at the period of an idle one
 *
 * Every test skips without /sys/kernel/mm/kmmscand or two memory tiers.
 * The tests that read /proc/<pid>/kmmscand skip without it, unless
 * KMMSCAND_REQUIRE_PROC=1 in the environment makes that a failure (for a
 * rig whose kernel is meant to have it).
 * The tests that make memory cgroups skip without a cgroup v2 memory
 * controller (cgroup_off also without memory.kmmscand), unless
 * KMMSCAND_REQUIRE_CGROUP=1 does.
 * Each restores the knobs, kernel.numa_balancing and demotion_enabled it
 * changed.
 */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <numaif.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../kselftest_harness.h"
#include "tiering_util.h"
#include "vm_util.h"

#define KMM_DIR			"/sys/kernel/mm/kmmscand"
#define THP_ENABLED		"/sys/kernel/mm/transparent_hugepage/enabled"
#define COMPACT_NODE		"/sys/devices/system/node/node%d/compact"
#define DEMOTION_ENABLED	"/sys/kernel/mm/numa/demotion_enabled"
#define DROP_CACHES		"/proc/sys/vm/drop_caches"

#define MIB			(1024 * 1024UL)

/*
 * Hot and cold set sizes: thousands of pages, so that a share is a
 * meaningful figure, yet small enough for the slow debug kernel under TCG
 * to promote in seconds.
 */
#define HOT_SIZE		(32 * MIB)
#define COLD_SIZE		(32 * MIB)
/* THPs in the THP hot set: several, to see each promoted whole. */
#define THP_COUNT		4

/*
 * thp_scan_resumes_mid_pmd: a THP hot set of MID_PMD_SIZE, read by scans
 * of MID_PMD_SCAN_MB and steps of MID_PMD_PAGES, neither a multiple of the
 * PMD size, so that walks end inside THPs and the next ones start there.
 * MID_PMD_SCANS scans at least are watched for the PTEs they read.
 */
#define MID_PMD_SIZE		(256 * MIB)
#define MID_PMD_SCAN_MB		63
#define MID_PMD_PAGES		700
#define MID_PMD_SCANS		8

/*
 * How long a promotion may take. The fast knobs below rescan an mm every
 * second at most, and a scan finds the whole hot set. On a debug kernel
 * under TCG, kmmscand promotes such a set in 2 to 30 s: this leaves room
 * for a slower or busier host.
 */
#define PROMOTE_TIMEOUT_MS	(120 * 1000)
/* Share of a hot set that must reach the top tier. */
#define PROMOTE_PERCENT		90
/*
 * Share of a never-touched set that must stay: its Accessed bits are
 * cleared before scanning starts, so only a scan that was already walking
 * the range while it was placed could have seen them set.
 */
#define COLD_STAY_PERCENT	99
/*
 * Full mm scans to wait for after a promotion before judging what did not
 * move: the scan that promoted may have stopped before the other range.
 */
#define SETTLE_SCANS		2
/* Deadline for those scans, with the fast knobs a few seconds' work. */
#define SETTLE_TIMEOUT_MS	(60 * 1000)
/*
 * How long scan_enabled=0 must hold a hot set on the slow node: several
 * times the longest scan period the fast knobs allow.
 */
#define DISABLED_OBSERVE_MS	(10 * 1000)
/*
 * The daemon is idle when its counters stand still this long: far longer
 * than the pause between two mm scans (scan_sleep_ms, 20 ms by default).
 */
#define IDLE_QUIET_MS		1000
#define IDLE_TIMEOUT_MS		(30 * 1000)

/*
 * exit_while_scanning: rounds of children alive together, each with a
 * small hot set, living a random time of up to CHILD_MAX_LIFE_MS (several
 * scan periods) unless killed first. Every other child is SIGKILLed at a
 * random moment, which may fall in its placement, scan or migration.
 */
#define EXIT_ROUNDS		3
#define EXIT_CHILDREN		8
#define CHILD_SIZE		(8 * MIB)
#define CHILD_MAX_LIFE_MS	3000
/*
 * The children are scanned from their fork (scan_delay_ms=0): at least
 * this many of all of them, a quarter, must be seen scanned
 * (/proc/<pid>/kmmscand) before they end, one SIGKILLed among them, or
 * the exits did not race kmmscand's work.  A child's life is uniform up to
 * CHILD_MAX_LIFE_MS, and one fast scan period is 200 ms.
 */
#define EXIT_SCANNED_MIN	(EXIT_ROUNDS * EXIT_CHILDREN / 4)
/* A child that is not gone this long after its end is stuck in exit. */
#define REAP_TIMEOUT_MS		(60 * 1000)
#define REAP_POLL_US		10000
#define CHILD_ALLOC_FAILED	2

/*
 * contents_intact checks the promotion this often between write passes:
 * as tier_wait() does, a fraction of a second.
 */
#define WRITE_POLL_MS		200

/*
 * Fast knobs, so that the daemon reacts within about a second: rescan an
 * mm every 100 ms to 1 s and treat a single accessed page as worth acting
 * on. Best effort: a kernel with tighter bounds keeps its own values.
 */
#define FAST_PERIOD_MIN_MS	100
#define FAST_PERIOD_MS		200
#define FAST_PERIOD_MAX_MS	1000
#define FAST_MIN_ACCESSED	1

/*
 * min_heat: from 1, any page found accessed, to the heat of one found
 * accessed at three reads in a row (KMMSCAND_HEAT_MAX).  A page of
 * ONCE_SIZE that is read once is found accessed at one read: at least
 * ONCE_SEEN_PERCENT of them must be counted as not hot enough.
 */
#define HEAT_MAX		3
/* The most CPUs migrate_threads takes, as the kernel's limit */
#define MIGRATE_THREADS_MAX	8
#define ONCE_SIZE		(8 * MIB)
#define ONCE_SEEN_PERCENT	90

/* Harness timeouts: the deadlines above, placement, census and margin. */
#define PROMOTE_TEST_TIMEOUT_S	300
#define EXIT_TEST_TIMEOUT_S	300
#define KNOB_TEST_TIMEOUT_S	60

/*
 * cold_region_turns_hot pins every mm's scan period to SMART_PERIOD_MS, so
 * that time counts visits: long enough that a scan of the test's small mm,
 * and the promotion of the region, even on the debug kernel under TCG, are
 * a small part of it.
 */
#define SMART_PERIOD_MS		2000
/* The smart_scan_max_skips it runs with: the default, KSM's. */
#define SMART_MAX_SKIPS		8
/*
 * Visits that take a cold region to its longest run of skips: after its
 * first visit primes it, it is read at ages 0, 1, 2, 3, 5, 8 and 13, and
 * from then on passed over SMART_MAX_SKIPS visits at a time. Two more for
 * the scans that may run late.
 */
#define SMART_AGING_VISITS	18
/*
 * cold_region_recalled runs with the largest smart_scan_max_skips, so that
 * without the recall by a young PMD entry a cold region is read once in
 * 33 visits.  Visits that take it to runs of 32 skips: read at ages 0, 1,
 * 2, 3, 5, 8, 13, 22 and 39, plus two for the scans that may run late.
 */
#define RECALL_MAX_SKIPS	32
#define RECALL_AGING_VISITS	41
/*
 * Periods within which a recalled region must be promoted: the next visit
 * reads it, and two more allow for scans that run late.
 */
#define RECALL_DEADLINE_PERIODS	3
#define RECALL_TEST_TIMEOUT_S	240
/* The region that goes cold then hot: one PMD-sized region or two. */
#define SMART_REGION_SIZE	(2 * MIB)
#define SMART_TEST_TIMEOUT_S	180
/*
 * How often the test wakes up while the region cools down: an mm none of
 * whose tasks runs is passed over whole, and its regions would not age.
 */
#define AWAKE_POLL_US		(100 * 1000)

/*
 * first_scan_after_delay forks a process with scan_delay_ms at DELAY_MS and
 * every scan period pinned to DELAY_PERIOD_MS.  Its first scan, which only
 * primes the hot set, comes DELAY_MS after the fork and the promoting one a
 * period later; were the first scan a period after the fork, as before
 * scan_delay_ms, the hot set could not move before two periods.  The
 * deadline lies between, with seconds to spare both ways for the scan and
 * the promotion on the debug kernel under TCG (10.6 s there, of 13 s).
 */
#define DELAY_MS		1000
#define DELAY_PERIOD_MS		8000
#define DELAY_DEADLINE_MS	(DELAY_MS + DELAY_PERIOD_MS + 4000)
/* Its hot set: small, so that it is placed well within DELAY_MS. */
#define DELAY_HOT_SIZE		(8 * MIB)
#define DELAY_TEST_TIMEOUT_S	60
/* scan_delay_ms and the periods: at most an hour. */
#define DELAY_LIMIT_MS		(60 * 60 * 1000L)
/* Exit codes of that process, beyond CHILD_ALLOC_FAILED */
#define CHILD_PLACED_LATE	3
#define CHILD_NOT_PROMOTED	4

/*
 * knob_write_ends_wait: the thread sleeps WAIT_LONG_MS between passes, a
 * new mm waits as long for its first scan and then as long between scans.
 * Once the child has placed its hot set, the knobs go back to fast values,
 * and the set must be on the top node within WAIT_DEADLINE_MS of that:
 * if the writes did not end the waits the old values started, no scan
 * could come before WAIT_LONG_MS, four times the deadline.  The deadline
 * leaves room for a priming scan and the scan that promotes, at the fast
 * periods, on the debug kernel under TCG.
 */
#define WAIT_LONG_MS		60000
/* The sleep set back: the default, the thread's wake-up 50 times a second */
#define WAIT_SLEEP_MS		20
#define WAIT_DEADLINE_MS	15000
#define WAIT_TEST_TIMEOUT_S	120

/*
 * rescan_after_bound_start forks a process that binds its task policy to
 * the slow node, places its hot set there and keeps using it for
 * RETRY_BIND_MS, then drops the policy.  Its first scan, RETRY_DELAY_MS
 * after the fork, can walk no VMA.  With the periods from RETRY_MIN_MS up
 * to RETRY_PERIOD_MS, that scan must leave the period alone and the scans
 * come every RETRY_MIN_MS: the first one after the drop primes the hot
 * set, and the next, an eighth of the period later (activity appeared),
 * promotes it, about 3 s after the fork.  Had the empty scan counted as
 * an idle one, the next scan would come RETRY_PERIOD_MS after it and the
 * hot set could not move before 13 s.  The deadline lies between.
 */
#define RETRY_DELAY_MS		300
#define RETRY_MIN_MS		500
#define RETRY_PERIOD_MS		12000
#define RETRY_BIND_MS		1500
#define RETRY_DEADLINE_MS	8000
#define RETRY_TEST_TIMEOUT_S	60

/*
 * idle_mapping_skipped: an untouched mapping of many regions, so that the
 * skip counters move by many; and how long they may take to, with the fast
 * knobs (periods of at most a second) well past the first skips.
 */
#define IDLE_MAP_SIZE		(64 * MIB)
#define SKIP_GROW_TIMEOUT_MS	(60 * 1000)
/* Idle skips to wait for, and how long skip_idle_mm=0 must stop them. */
#define IDLE_SKIPS		3
/* bound_mm_not_walked: scans of the bound process passed over */
#define UNCHANGED_SKIPS		3
#define IDLE_OFF_OBSERVE_MS	(3 * 1000)

/* A node number that is not online on the machines these tests run on. */
#define ABSENT_NODE		63
/* A node number beyond MAX_NUMNODES (1 << NODES_SHIFT, at most 1024). */
#define IMPOSSIBLE_NODE		"4096"

/*
 * The counters of the back-off from a full node: windows started, and base
 * pages of candidates refused for lack of room. Read by the test that
 * needs them only, so that the others still run on a kernel without them.
 */
#define NODE_FULL_STAT		"kmmscand_node_full"
#define NO_ROOM_STAT		"kmmscand_no_room"

/*
 * full_node_backs_off keeps the top node without room: a filler process
 * takes in mlocked memory, which neither reclaim nor demotion can take
 * back, whatever the node has above its zones' high watermarks and lowmem
 * reserves, and half the gap down to the low watermarks more, so that a
 * few freed pages make no room while ordinary allocations still do not
 * wake kswapd. It looks every FILL_POLL_MS, well within the shortest
 * back-off window (100 ms): what kswapd frees when a window starts is gone
 * before the window ends. FILL_CHUNK at most at a time, as THPs while the
 * room is at least that: 2 GiB in few faults, which TCG makes slow.
 */
#define FILL_CHUNK		(64 * MIB)
#define FILL_POLL_MS		20
/* The node counts as full once it has had no room for this long. */
#define FILL_QUIET_MS		1000
/* Filling 2 GiB on the debug kernel under TCG, with room to spare. */
#define FILL_TIMEOUT_MS		(180 * 1000)
/* Exit codes of the filler */
#define FILL_NO_MLOCK		2
#define FILL_NO_MAP		3
#define FILL_ERROR		4
/*
 * The hot set kmmscand cannot promote while the node is full: many batches
 * of candidates, so that it always has some to offer.
 */
#define FULL_HOT_SIZE		(64 * MIB)
/*
 * The scan size every mm is pinned to, with the period pinned to
 * FAST_PERIOD_MIN_MS: a scan reads at most FULL_SCAN_MB of address space,
 * over as many steps as it takes.
 */
#define FULL_SCAN_MB		16
/*
 * How long the full node is watched, from the start of the first back-off
 * window. Windows of 100, 200, 400, 800, 1600 and 3200 ms, then 5000 ms,
 * start at most 7 times in that time, 6 after the first; FULL_WINDOWS_MAX
 * is that with a margin. A promotion to the node, of a few pages that
 * kswapd or an exiting process freed, starts the doubling over:
 * FULL_RESET_WINDOWS more windows for each that the test sees.
 */
#define FULL_OBSERVE_MS		8000
#define FULL_WINDOWS_MAX	10
#define FULL_RESET_WINDOWS	7
/*
 * The PTEs kmmscand may read while watching, as a share of what it would
 * read without the back-off: a scan of the test's mm every
 * FAST_PERIOD_MIN_MS, each reading all of FULL_SCAN_MB since a hot set
 * that cannot move lies everywhere in it, or FULL_OBSERVE_MS /
 * FAST_PERIOD_MIN_MS scans of FULL_SCAN_MB: 80 scans, 20 hot sets.
 * Backing off, kmmscand walks the mm only from the end of a window to the
 * next refusal, a step or two, for at most FULL_WINDOWS_MAX windows.
 * A quarter of the former, 5 hot sets, leaves room for that and for the
 * scans of the other, small, processes.
 */
#define FULL_PTE_SHARE		4
/* Until the first window: a scan that primes the hot set, then one more. */
#define FULL_START_TIMEOUT_MS	(60 * 1000)
/* How often the free pages of the top node are sampled meanwhile. */
#define FULL_SAMPLE_MS		50
/* Filling, first window, watching, promotion, and margin. */
#define FULL_TEST_TIMEOUT_S	420

/*
 * shared_subrange_policy: shared anonymous mappings with several PMD
 * regions in each half. Two: one with its second half bound, which a
 * policy checked at the start of the mapping would promote whole, and one
 * with its first half bound, which it would leave whole. And how many of
 * the longest scan periods, beyond SETTLE_SCANS mm scans, the bound
 * halves are watched once the others moved.
 */
#define SHARED_SIZE		(32 * MIB)
#define SHARED_MAPS		2
#define SHARED_WATCH_PERIODS	3

/* proc_figures: what kmmscand did for the test process */
#define PROC_KMMSCAND		"/proc/self/kmmscand"
#define REQUIRE_PROC_ENV	"KMMSCAND_REQUIRE_PROC"

enum knob {
	SCAN_ENABLED,
	SCAN_SLEEP_MS,
	MMS_TO_SCAN,
	PAGES_TO_SCAN,
	SCAN_DELAY_MS,
	MM_SCAN_PERIOD_MS,
	SCAN_PERIOD_MIN_MS,
	SCAN_PERIOD_MAX_MS,
	SCAN_SIZE_MB,
	SCAN_SIZE_MIN_MB,
	SCAN_SIZE_MAX_MB,
	MIN_ACCESSED_PAGES,
	TARGET_NODE,
	SMART_SCAN,
	SMART_SCAN_MAX_SKIPS,
	PMD_YOUNG,
	SKIP_IDLE_MM,
	NICE,
	SCAN_BY_DEFAULT,
	MIN_HEAT,
	MIGRATE_THREADS,
	NR_KNOBS
};

static const char * const knob_name[NR_KNOBS] = {
	[SCAN_ENABLED]		= "scan_enabled",
	[SCAN_SLEEP_MS]		= "scan_sleep_ms",
	[MMS_TO_SCAN]		= "mms_to_scan",
	[PAGES_TO_SCAN]		= "pages_to_scan",
	[SCAN_DELAY_MS]		= "scan_delay_ms",
	[MM_SCAN_PERIOD_MS]	= "mm_scan_period_ms",
	[SCAN_PERIOD_MIN_MS]	= "scan_period_min_ms",
	[SCAN_PERIOD_MAX_MS]	= "scan_period_max_ms",
	[SCAN_SIZE_MB]		= "scan_size_mb",
	[SCAN_SIZE_MIN_MB]	= "scan_size_min_mb",
	[SCAN_SIZE_MAX_MB]	= "scan_size_max_mb",
	[MIN_ACCESSED_PAGES]	= "min_accessed_pages",
	[TARGET_NODE]		= "target_node",
	[SMART_SCAN]		= "smart_scan",
	[SMART_SCAN_MAX_SKIPS]	= "smart_scan_max_skips",
	[PMD_YOUNG]		= "pmd_young",
	[SKIP_IDLE_MM]		= "skip_idle_mm",
	[NICE]			= "nice",
	[SCAN_BY_DEFAULT]	= "scan_by_default",
	[MIN_HEAT]		= "min_heat",
	[MIGRATE_THREADS]	= "migrate_threads",
};

/* An initial value and the range it is clamped to. */
struct knob_range {
	enum knob init, min, max;
};

static const struct knob_range knob_ranges[] = {
	{ MM_SCAN_PERIOD_MS, SCAN_PERIOD_MIN_MS, SCAN_PERIOD_MAX_MS },
	{ SCAN_SIZE_MB, SCAN_SIZE_MIN_MB, SCAN_SIZE_MAX_MB },
};

/* Knobs whose only stated bound is that they are not negative. */
static const enum knob unbounded_knobs[] = {
	SCAN_SLEEP_MS, MMS_TO_SCAN, MIN_ACCESSED_PAGES,
};

enum kmm_stat {
	MM_SCANS,
	VMA_SCANS,
	PTE_SCANNED,
	SLOWTIER_ACCESSED,
	MIGRATED,
	MIGRATE_FAILED,
	PGPROMOTE_SUCCESS,
	REGION_SKIPPED,
	PMD_SKIPPED,
	MM_IDLE_SKIPPED,
	MM_UNCHANGED,
	NR_STATS
};

static const char * const stat_name[NR_STATS] = {
	[MM_SCANS]		= "kmmscand_mm_scans",
	[VMA_SCANS]		= "kmmscand_vma_scans",
	[PTE_SCANNED]		= "kmmscand_pte_scanned",
	[SLOWTIER_ACCESSED]	= "kmmscand_slowtier_accessed",
	[MIGRATED]		= "kmmscand_migrated",
	[MIGRATE_FAILED]	= "kmmscand_migrate_failed",
	[PGPROMOTE_SUCCESS]	= "pgpromote_success",
	[REGION_SKIPPED]	= "kmmscand_region_skipped",
	[PMD_SKIPPED]		= "kmmscand_pmd_skipped",
	[MM_IDLE_SKIPPED]	= "kmmscand_mm_idle_skipped",
	[MM_UNCHANGED]		= "kmmscand_mm_unchanged",
};

struct stats {
	unsigned long v[NR_STATS];
};

static void knob_path(enum knob knob, char *buf, size_t len)
{
	snprintf(buf, len, "%s/%s", KMM_DIR, knob_name[knob]);
}

static int knob_read(enum knob knob, char *buf, size_t len)
{
	char path[128];

	knob_path(knob, path, sizeof(path));
	return tier_read_str(path, buf, len);
}

static int knob_read_long(enum knob knob, long *value)
{
	char path[128];

	knob_path(knob, path, sizeof(path));
	return tier_read_long(path, value);
}

static int knob_write(enum knob knob, const char *value)
{
	char path[128];

	knob_path(knob, path, sizeof(path));
	return tier_write_str(path, value);
}

static int knob_write_long(enum knob knob, long value)
{
	char path[128];

	knob_path(knob, path, sizeof(path));
	return tier_write_long(path, value);
}

static int stats_read(struct stats *stats)
{
	int i, ret;

	/* pgpromote_success is a node counter: fold it first. */
	tier_vmstat_refresh();
	for (i = 0; i < NR_STATS; i++) {
		ret = tier_vmstat(stat_name[i], &stats->v[i]);
		if (ret)
			return ret;
	}
	return 0;
}

static unsigned long stat_delta(const struct stats *before,
				const struct stats *after, enum kmm_stat stat)
{
	return after->v[stat] - before->v[stat];
}

static void stats_log(struct __test_metadata *_metadata,
		      const struct stats *before, const struct stats *after)
{
	int i;

	for (i = 0; i < NR_STATS; i++)
		TH_LOG("%s +%lu", stat_name[i], stat_delta(before, after, i));
}

/* The counters a scan that promotes moves. */
static const enum kmm_stat scan_stats[] = {
	MM_SCANS, VMA_SCANS, PTE_SCANNED, SLOWTIER_ACCESSED, MIGRATED,
};

/* Condition for tier_wait(): each of scan_stats grew since @before. */
struct growth_cond {
	struct stats before;
	struct stats now;
};

static bool stats_grew(void *arg)
{
	struct growth_cond *growth = arg;
	size_t i;

	if (stats_read(&growth->now))
		return false;
	for (i = 0; i < ARRAY_SIZE(scan_stats); i++) {
		if (!stat_delta(&growth->before, &growth->now, scan_stats[i]))
			return false;
	}
	return true;
}

/*
 * Wait until pgpromote_success, read as @before, counts at least @pages
 * more promotions: it is a node counter, which /proc/vmstat shows late.
 */
static bool promotions_counted(struct __test_metadata *_metadata,
			       unsigned long before, unsigned long pages)
{
	struct tier_counter promoted = {
		.name = stat_name[PGPROMOTE_SUCCESS],
		.min = before + pages,
	};
	bool counted;

	counted = tier_wait(NULL, 0, tier_counter_reached, &promoted,
			    TIER_VMSTAT_LAG_MS);
	TH_LOG("pgpromote_success +%lu for %lu pages promoted",
	       promoted.last - before, pages);
	return counted;
}

/* Condition for tier_wait(): the daemon's counters stood still a while. */
struct idle_cond {
	unsigned long last;
	double since;
};

static bool daemon_idle(void *arg)
{
	struct idle_cond *idle = arg;
	unsigned long sum;
	struct stats now;

	if (stats_read(&now))
		return false;
	sum = now.v[MM_SCANS] + now.v[VMA_SCANS] + now.v[PTE_SCANNED] +
	      now.v[MIGRATED] + now.v[MIGRATE_FAILED];
	if (sum != idle->last) {
		idle->last = sum;
		idle->since = tier_now();
		return false;
	}
	return tier_now() - idle->since >= IDLE_QUIET_MS / 1000.0;
}

/*
 * Stop the daemon and wait until it is idle, so that memory placed next is
 * not seen by a scan that was already running.
 */
static int daemon_pause(void)
{
	struct idle_cond idle = { .last = 0, .since = tier_now() };
	int ret;

	ret = knob_write(SCAN_ENABLED, "0");
	if (ret)
		return ret;
	return tier_wait(NULL, 0, daemon_idle, &idle, IDLE_TIMEOUT_MS) ?
	       0 : -ETIMEDOUT;
}

/*
 * Clear the Accessed bits that placing memory set, and flush the TLB
 * entries of the @nr @regions the test will touch, then let the daemon
 * scan: from now on only the test's own accesses make pages candidates.
 */
static int daemon_resume(const struct tier_region *regions, int nr)
{
	int ret;

	ret = tier_clear_refs(regions, nr);
	if (ret)
		return ret;
	return knob_write(SCAN_ENABLED, "1");
}

/* Condition for tier_wait(): the daemon completed some more mm scans. */
struct scans_cond {
	unsigned long target;
};

static bool scans_done(void *arg)
{
	struct scans_cond *scans = arg;
	unsigned long now;

	if (tier_vmstat(stat_name[MM_SCANS], &now))
		return false;
	return now >= scans->target;
}

/*
 * Keep @hot hot while the daemon completes SETTLE_SCANS more mm scans and
 * at least one more of its longest scan periods passes, so that every mm,
 * this one included, has been rescanned since the last check.
 */
static bool settle(const struct tier_region *hot, int nr_hot)
{
	struct scans_cond scans;
	long period_max;
	double until;

	if (tier_vmstat(stat_name[MM_SCANS], &scans.target) ||
	    knob_read_long(SCAN_PERIOD_MAX_MS, &period_max))
		return false;
	scans.target += SETTLE_SCANS;
	until = tier_now() + period_max / 1000.0;
	if (!tier_wait(hot, nr_hot, scans_done, &scans, SETTLE_TIMEOUT_MS))
		return false;
	while (tier_now() < until)
		tier_touch(hot, nr_hot);
	return true;
}

static bool all_on_node(const struct tier_region *region, int node)
{
	return tier_pages_on_node(region, node) == (long)tier_nr_pages(region);
}

/*
 * Wait until @percent of @region is on @node, keeping @nr_hot regions of
 * @hot hot. Logs how far it got.
 */
static bool wait_promoted(struct __test_metadata *_metadata,
			  const struct tier_region *region, int node,
			  unsigned int percent, const struct tier_region *hot,
			  int nr_hot)
{
	struct tier_share share;
	double start = tier_now();
	bool done;

	tier_share_init(&share, region, node, percent);
	done = tier_wait(hot, nr_hot, tier_share_reached, &share,
			 PROMOTE_TIMEOUT_MS);
	TH_LOG("%lu of %lu pages on node %d after %.1f s", share.last_pages,
	       tier_nr_pages(region), node, tier_now() - start);
	return done;
}

FIXTURE(kmmscand)
{
	int top;
	int slow;
	char saved[NR_KNOBS][TIER_VALUE_LEN];
	char numab[TIER_VALUE_LEN];
	bool has_numab;
	char demotion[TIER_VALUE_LEN];
	bool has_demotion;
	int setup_err;
};

/* Tune the daemon to react fast; see FAST_*. Failures are not errors. */
static void tune_fast(struct __test_metadata *_metadata)
{
	long min, init;

	knob_write_long(MIN_ACCESSED_PAGES, FAST_MIN_ACCESSED);
	/* Lower the floor first, then the initial period, then the ceiling. */
	knob_write_long(SCAN_PERIOD_MIN_MS, FAST_PERIOD_MIN_MS);
	if (knob_read_long(SCAN_PERIOD_MIN_MS, &min))
		return;
	init = min < FAST_PERIOD_MS ? FAST_PERIOD_MS : min;
	knob_write_long(MM_SCAN_PERIOD_MS, init);
	if (knob_read_long(MM_SCAN_PERIOD_MS, &init))
		return;
	knob_write_long(SCAN_PERIOD_MAX_MS,
			init < FAST_PERIOD_MAX_MS ? FAST_PERIOD_MAX_MS : init);
	TH_LOG("scan period %ld ms, floor %ld ms", init, min);
}

/* Write back every saved knob, over passes: min/max order can matter. */
static int restore_knobs(char saved[NR_KNOBS][TIER_VALUE_LEN])
{
	char cur[TIER_VALUE_LEN];
	int pass, k, failed = 0;

	for (pass = 0; pass < 3; pass++) {
		failed = 0;
		for (k = 0; k < NR_KNOBS; k++) {
			if (!knob_read(k, cur, sizeof(cur)) &&
			    !strcmp(cur, saved[k]))
				continue;
			if (knob_write(k, saved[k]))
				failed++;
		}
		if (!failed)
			break;
	}
	return failed;
}

FIXTURE_SETUP(kmmscand)
{
	struct tier_layout layout;
	int k, ret;

	if (access(KMM_DIR, F_OK))
		SKIP(return, "no %s: kernel without kmmscand", KMM_DIR);
	if (tier_read_layout(&layout) ||
	    tier_pick_nodes(&layout, &self->top, &self->slow))
		SKIP(return, "no two memory tiers with memory");
	for (k = 0; k < NR_KNOBS; k++) {
		ret = knob_read(k, self->saved[k], sizeof(self->saved[k]));
		ASSERT_EQ(0, ret) {
			TH_LOG("cannot read %s", knob_name[k]);
		}
	}
	self->has_numab = !tier_read_str(TIER_NUMA_BALANCING, self->numab,
					 sizeof(self->numab));
	self->has_demotion = !tier_read_str(DEMOTION_ENABLED, self->demotion,
					    sizeof(self->demotion));
	for (k = 0; k < NR_STATS; k++) {
		unsigned long value;

		ret = tier_vmstat(stat_name[k], &value);
		ASSERT_EQ(0, ret) {
			TH_LOG("no %s in /proc/vmstat", stat_name[k]);
		}
	}
	/*
	 * The teardown runs only once the setup has returned: from here on,
	 * record failures for the tests to assert instead of asserting.
	 */
	if (self->has_numab)
		self->setup_err = tier_write_long(TIER_NUMA_BALANCING, 0);
	if (!self->setup_err)
		self->setup_err = knob_write(SCAN_ENABLED, "1");
	if (!self->setup_err)
		tune_fast(_metadata);
	TH_LOG("top node %d, slow node %d", self->top, self->slow);
}

/*
 * Restore in the parent: it runs even when a failed assertion ended the
 * test (this harness then skips a child-side teardown). The test's memory
 * went with the test process.
 */
FIXTURE_TEARDOWN_PARENT(kmmscand)
{
	int ret = 0;

	EXPECT_EQ(0, restore_knobs(self->saved));
	if (self->has_numab)
		ret = tier_write_str(TIER_NUMA_BALANCING, self->numab);
	EXPECT_EQ(0, ret);
	ret = 0;
	if (self->has_demotion)
		ret = tier_write_str(DEMOTION_ENABLED, self->demotion);
	EXPECT_EQ(0, ret);
}

TEST_F_TIMEOUT(kmmscand, hot_set_promoted, PROMOTE_TEST_TIMEOUT_S)
{
	struct growth_cond growth;
	struct tier_region hot;
	long on_top;
	size_t i;

	ASSERT_EQ(0, self->setup_err);
	ASSERT_EQ(0, daemon_pause());
	ASSERT_EQ(0, tier_alloc_on_node(&hot, HOT_SIZE, self->slow, false));
	ASSERT_TRUE(all_on_node(&hot, self->slow));
	ASSERT_EQ(0, stats_read(&growth.before));
	ASSERT_EQ(0, daemon_resume(&hot, 1));

	ASSERT_TRUE(wait_promoted(_metadata, &hot, self->top,
				  PROMOTE_PERCENT, &hot, 1));

	on_top = tier_pages_on_node(&hot, self->top);
	ASSERT_GE(on_top, 0);
	/*
	 * A scan counts what it scanned and found when it ends, after its
	 * promotions: let the scan that moved the hot set be counted.
	 */
	growth.now = growth.before;
	tier_wait(&hot, 1, stats_grew, &growth, SETTLE_TIMEOUT_MS);
	stats_log(_metadata, &growth.before, &growth.now);
	for (i = 0; i < ARRAY_SIZE(scan_stats); i++) {
		EXPECT_GT(stat_delta(&growth.before, &growth.now,
				     scan_stats[i]), 0) {
			TH_LOG("%s did not grow", stat_name[scan_stats[i]]);
		}
	}
	/* Every page that moved up counts as a promotion. */
	EXPECT_TRUE(promotions_counted(_metadata,
				       growth.before.v[PGPROMOTE_SUCCESS],
				       on_top));
}

TEST_F_TIMEOUT(kmmscand, cold_set_stays, PROMOTE_TEST_TIMEOUT_S)
{
	struct tier_region hot, cold;
	unsigned long nr_cold;
	long on_slow;

	ASSERT_EQ(0, self->setup_err);
	ASSERT_EQ(0, daemon_pause());
	ASSERT_EQ(0, tier_alloc_on_node(&hot, HOT_SIZE, self->slow, false));
	ASSERT_EQ(0, tier_alloc_on_node(&cold, COLD_SIZE, self->slow, false));
	ASSERT_TRUE(all_on_node(&cold, self->slow));
	ASSERT_EQ(0, daemon_resume(&hot, 1));

	/* The hot set moving shows that the daemon scans this mm. */
	ASSERT_TRUE(wait_promoted(_metadata, &hot, self->top,
				  PROMOTE_PERCENT, &hot, 1));
	ASSERT_TRUE(settle(&hot, 1));

	nr_cold = tier_nr_pages(&cold);
	on_slow = tier_pages_on_node(&cold, self->slow);
	TH_LOG("%ld of %lu cold pages still on node %d", on_slow, nr_cold,
	       self->slow);
	ASSERT_GE(on_slow, 0);
	ASSERT_GE((unsigned long)on_slow * 100, nr_cold * COLD_STAY_PERCENT);
}

/*
 * With min_heat at its highest, a page that is read once, found accessed at
 * one read, is held back (kmmscand_not_hot) and stays on the slow tier,
 * while a hot set next to it, found accessed at every read, moves.  At the
 * default of 1 the first read that found it accessed would promote it.
 */
TEST_F_TIMEOUT(kmmscand, min_heat_holds_back_one_read, PROMOTE_TEST_TIMEOUT_S)
{
	struct tier_counter not_hot = { .name = "kmmscand_not_hot" };
	unsigned long nr_once, before, want;
	struct tier_region sets[2];
	struct tier_region *hot = &sets[0], *once = &sets[1];
	long on_slow;

	ASSERT_EQ(0, self->setup_err);
	ASSERT_EQ(0, knob_write_long(MIN_HEAT, HEAT_MAX));
	ASSERT_EQ(0, daemon_pause());
	ASSERT_EQ(0, tier_alloc_on_node(hot, HOT_SIZE, self->slow, false));
	ASSERT_EQ(0, tier_alloc_on_node(once, ONCE_SIZE, self->slow, false));
	ASSERT_EQ(0, daemon_resume(sets, 2));

	/* The hot set moving shows that the daemon reads this mm. */
	ASSERT_TRUE(wait_promoted(_metadata, hot, self->top,
				  PROMOTE_PERCENT, hot, 1));
	nr_once = tier_nr_pages(once);
	want = nr_once * ONCE_SEEN_PERCENT / 100;
	ASSERT_EQ(0, tier_vmstat(not_hot.name, &before));
	not_hot.min = before + want;
	tier_touch(once, 1);
	ASSERT_TRUE(tier_wait(hot, 1, tier_counter_reached, &not_hot,
			      SETTLE_TIMEOUT_MS)) {
		TH_LOG("kmmscand_not_hot grew by %lu, want %lu",
		       not_hot.last - before, want);
	}
	ASSERT_TRUE(settle(hot, 1));

	on_slow = tier_pages_on_node(once, self->slow);
	TH_LOG("%ld of %lu pages read once still on node %d", on_slow,
	       nr_once, self->slow);
	ASSERT_GE(on_slow, 0);
	ASSERT_GE((unsigned long)on_slow * 100, nr_once * COLD_STAY_PERCENT);
}

/* Map @size bytes bound to @node with MPOL_BIND, and fault them in. */
static int alloc_bound(struct tier_region *region, size_t size, int node)
{
	unsigned long mask = 1UL << node;
	int ret;

	region->addr = mmap(NULL, size, PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (region->addr == MAP_FAILED) {
		region->addr = NULL;
		return -errno;
	}
	region->size = size;
	/* Base pages, like the default-policy set it is compared with. */
	if ((madvise(region->addr, size, MADV_NOHUGEPAGE) && errno != EINVAL) ||
	    mbind(region->addr, size, MPOL_BIND, &mask, TIER_MAX_NODES + 1, 0)) {
		ret = -errno;
		tier_free(region);
		return ret;
	}
	return tier_place_on_node(region, node);
}

TEST_F_TIMEOUT(kmmscand, mbind_respected, PROMOTE_TEST_TIMEOUT_S)
{
	struct tier_region hot, bound, both[2];
	long on_slow;

	ASSERT_EQ(0, self->setup_err);
	ASSERT_EQ(0, daemon_pause());
	ASSERT_EQ(0, alloc_bound(&bound, HOT_SIZE, self->slow));
	ASSERT_EQ(0, tier_alloc_on_node(&hot, HOT_SIZE, self->slow, false));
	ASSERT_TRUE(all_on_node(&bound, self->slow));
	both[0] = hot;
	both[1] = bound;
	ASSERT_EQ(0, daemon_resume(both, 2));

	/* Both are hot; only the default-policy one may move. */
	ASSERT_TRUE(wait_promoted(_metadata, &hot, self->top,
				  PROMOTE_PERCENT, both, 2));
	ASSERT_TRUE(settle(both, 2));

	on_slow = tier_pages_on_node(&bound, self->slow);
	TH_LOG("%ld of %lu bound pages on node %d", on_slow,
	       tier_nr_pages(&bound), self->slow);
	ASSERT_EQ((long)tier_nr_pages(&bound), on_slow);
}

/* A value written to a knob, and how to show it in the log. */
struct knob_input {
	const char *value;
	const char *label;
};

/* Text every numeric knob refuses, whatever its range. */
static const struct knob_input bad_text[] = {
	{ "abc",			"letters" },
	{ "12abc",			"trailing letters" },
	{ "1.5",			"a fraction" },
	{ "\n",				"an empty line" },
	{ "18446744073709551616",	"2^64, overflowing any integer" },
	{ "99999999999999999999999999",	"a huge number" },
};

/* Write @value to @knob: it must fail with EINVAL and leave the knob be. */
static void expect_rejected(struct __test_metadata *_metadata, enum knob knob,
			    const char *value, const char *label)
{
	char before[TIER_VALUE_LEN], after[TIER_VALUE_LEN];
	int ret;

	ASSERT_EQ(0, knob_read(knob, before, sizeof(before)));
	ret = knob_write(knob, value);
	ASSERT_EQ(0, knob_read(knob, after, sizeof(after)));
	EXPECT_EQ(-EINVAL, ret) {
		TH_LOG("%s accepted %s (error %d)", knob_name[knob], label,
		       ret);
	}
	EXPECT_STREQ(before, after) {
		TH_LOG("%s changed from %s to %s on %s", knob_name[knob],
		       before, after, label);
	}
}

static void expect_rejected_long(struct __test_metadata *_metadata,
				 enum knob knob, long value, const char *why)
{
	char buf[TIER_VALUE_LEN], label[128];

	snprintf(buf, sizeof(buf), "%ld", value);
	snprintf(label, sizeof(label), "%ld (%s)", value, why);
	expect_rejected(_metadata, knob, buf, label);
}

/* Write @value to @knob: it must be taken and read back as written. */
static void expect_accepted(struct __test_metadata *_metadata, enum knob knob,
			    long value)
{
	long got = 0;

	EXPECT_EQ(0, knob_write_long(knob, value)) {
		TH_LOG("%s refused %ld", knob_name[knob], value);
	}
	EXPECT_EQ(0, knob_read_long(knob, &got));
	EXPECT_EQ(value, got) {
		TH_LOG("%s reads %ld after %ld was written", knob_name[knob],
		       got, value);
	}
}

/* Accept @value, then go back to @orig, as "echo" writes it. */
static void expect_accepted_then(struct __test_metadata *_metadata,
				 enum knob knob, long value, long orig)
{
	char buf[TIER_VALUE_LEN];

	expect_accepted(_metadata, knob, value);
	snprintf(buf, sizeof(buf), "%ld\n", orig);
	EXPECT_EQ(0, knob_write(knob, buf)) {
		TH_LOG("%s refused \"%ld\\n\"", knob_name[knob], orig);
	}
}

static void check_text_input(struct __test_metadata *_metadata, enum knob knob)
{
	char before[TIER_VALUE_LEN], after[TIER_VALUE_LEN];
	size_t i;
	int ret;

	for (i = 0; i < ARRAY_SIZE(bad_text); i++)
		expect_rejected(_metadata, knob, bad_text[i].value,
				bad_text[i].label);
	/* target_node takes -1 (automatic); -2 is negative for it. */
	if (knob == TARGET_NODE)
		expect_rejected(_metadata, knob, "-2", "-2 (negative)");
	else if (knob != NICE)
		expect_rejected(_metadata, knob, "-1", "-1 (negative)");

	/* sysfs does not call a store for a write of 0 bytes: a no-op. */
	ASSERT_EQ(0, knob_read(knob, before, sizeof(before)));
	ret = knob_write(knob, "");
	EXPECT_TRUE(ret == 0 || ret == -EINVAL);
	ASSERT_EQ(0, knob_read(knob, after, sizeof(after)));
	EXPECT_STREQ(before, after);
}

/* An initial value and its bounds: min <= init <= max, always. */
static void check_range(struct __test_metadata *_metadata,
			const struct knob_range *range)
{
	long init, min, max;

	ASSERT_EQ(0, knob_read_long(range->init, &init));
	ASSERT_EQ(0, knob_read_long(range->min, &min));
	ASSERT_EQ(0, knob_read_long(range->max, &max));
	ASSERT_LE(min, init);
	ASSERT_LE(init, max);

	expect_rejected_long(_metadata, range->min, max + 1, "min above max");
	expect_rejected_long(_metadata, range->init, max + 1,
			     "initial above max");
	if (min > 0) {
		expect_rejected_long(_metadata, range->max, min - 1,
				     "max below min");
		expect_rejected_long(_metadata, range->init, min - 1,
				     "initial below min");
	}

	/* Values inside the constraints are taken. */
	expect_accepted_then(_metadata, range->min, (min + init) / 2, min);
	expect_accepted_then(_metadata, range->max, (init + max) / 2, max);
	expect_accepted_then(_metadata, range->init, (min + max) / 2, init);
	expect_accepted_then(_metadata, range->init, min, init);
	expect_accepted_then(_metadata, range->init, max, init);
}

/* The target node must be -1 or an online top-tier node. */
static void check_target_node(struct __test_metadata *_metadata, int top)
{
	struct tier_layout layout;
	int node;

	ASSERT_EQ(0, tier_read_layout(&layout));
	for (node = 0; node < TIER_MAX_NODES; node++) {
		if (tier_of_node(&layout, node) > 0)
			expect_rejected_long(_metadata, TARGET_NODE, node,
					     "a lower-tier node");
	}
	if (tier_of_node(&layout, ABSENT_NODE) < 0 &&
	    !tier_node_has_memory(ABSENT_NODE))
		expect_rejected_long(_metadata, TARGET_NODE, ABSENT_NODE,
				     "a node that is not online");
	expect_rejected(_metadata, TARGET_NODE, IMPOSSIBLE_NODE,
			"a node number beyond MAX_NUMNODES");

	expect_accepted(_metadata, TARGET_NODE, top);
	expect_accepted_then(_metadata, TARGET_NODE, -1, -1);
}

TEST_F_TIMEOUT(kmmscand, knobs_reject_bad_input, KNOB_TEST_TIMEOUT_S)
{
	long value;
	size_t i;
	int k;

	ASSERT_EQ(0, self->setup_err);
	for (k = 0; k < NR_KNOBS; k++)
		check_text_input(_metadata, k);

	expect_rejected(_metadata, SCAN_ENABLED, "2", "2 (not 0 or 1)");
	expect_accepted_then(_metadata, SCAN_ENABLED, 0, 1);

	for (i = 0; i < ARRAY_SIZE(knob_ranges); i++)
		check_range(_metadata, &knob_ranges[i]);
	check_target_node(_metadata, self->top);

	/* Knobs with no stated bounds take a neighbouring value. */
	for (i = 0; i < ARRAY_SIZE(unbounded_knobs); i++) {
		k = unbounded_knobs[i];
		ASSERT_EQ(0, knob_read_long(k, &value));
		expect_accepted_then(_metadata, k,
				     value > 1 ? value - 1 : value + 1, value);
	}

	/* pages_to_scan: at least one page a pass */
	ASSERT_EQ(0, knob_read_long(PAGES_TO_SCAN, &value));
	expect_rejected(_metadata, PAGES_TO_SCAN, "0", "0 pages");
	expect_accepted_then(_metadata, PAGES_TO_SCAN, 1, value);

	/* scan_delay_ms: from 0, a scan at once, up to an hour */
	ASSERT_EQ(0, knob_read_long(SCAN_DELAY_MS, &value));
	expect_rejected_long(_metadata, SCAN_DELAY_MS, DELAY_LIMIT_MS + 1,
			     "over an hour");
	expect_rejected(_metadata, SCAN_DELAY_MS, "-1", "-1 (negative)");
	expect_accepted_then(_metadata, SCAN_DELAY_MS, 0, value);
	expect_accepted_then(_metadata, SCAN_DELAY_MS, DELAY_LIMIT_MS, value);

	/* Whatever was tried, every knob still reads a number. */
	for (k = 0; k < NR_KNOBS; k++) {
		int ret = knob_read_long(k, &value);

		EXPECT_EQ(0, ret) {
			TH_LOG("%s does not read as a number", knob_name[k]);
		}
	}
}

TEST_F_TIMEOUT(kmmscand, disabled_stops_promotion, PROMOTE_TEST_TIMEOUT_S)
{
	struct tier_region hot;
	struct stats before, after;
	struct tier_share any;
	bool moved;

	ASSERT_EQ(0, self->setup_err);
	ASSERT_EQ(0, daemon_pause());
	ASSERT_EQ(0, tier_alloc_on_node(&hot, HOT_SIZE, self->slow, false));
	ASSERT_EQ(0, tier_clear_refs(&hot, 1));
	ASSERT_EQ(0, stats_read(&before));

	/* Any page at all on the top node is a promotion. */
	tier_share_init(&any, &hot, self->top, 0);
	any.min_pages = 1;
	moved = tier_wait(&hot, 1, tier_share_reached, &any,
			  DISABLED_OBSERVE_MS);
	TH_LOG("%lu pages on node %d after %d s with scan_enabled=0",
	       any.last_pages, self->top, DISABLED_OBSERVE_MS / 1000);
	ASSERT_FALSE(moved);
	ASSERT_EQ(0, stats_read(&after));
	EXPECT_EQ(0, stat_delta(&before, &after, MM_SCANS));
	EXPECT_EQ(0, stat_delta(&before, &after, MIGRATED));

	ASSERT_EQ(0, knob_write(SCAN_ENABLED, "1"));
	ASSERT_TRUE(wait_promoted(_metadata, &hot, self->top,
				  PROMOTE_PERCENT, &hot, 1));
}

/* A small xorshift generator: reproducible from the seed the test logs. */
static unsigned int next_random(unsigned long long *state)
{
	*state ^= *state << 13;
	*state ^= *state >> 7;
	*state ^= *state << 17;
	return *state >> 32;
}

/*
 * A child of exit_while_scanning: place a hot set on @node (THPs or base
 * pages), keep it hot for @life_ms, with half of it unmapped half-way
 * through when @unmap_half, and exit with it mapped.
 */
static void scanned_child(int node, unsigned int life_ms, bool thp,
			  bool unmap_half)
{
	double start = tier_now(), end = start + life_ms / 1000.0;
	struct tier_region region;
	bool unmapped = false;

	if (tier_alloc_on_node(&region, CHILD_SIZE, node, thp))
		_exit(CHILD_ALLOC_FAILED);
	while (tier_now() < end) {
		tier_touch(&region, 1);
		if (unmap_half && !unmapped && tier_now() > (start + end) / 2) {
			region.size /= 2;
			munmap(region.addr + region.size, region.size);
			unmapped = true;
		}
	}
	_exit(0);
}

/* The figures of /proc/<pid>/kmmscand that the tests look at */
struct proc_figures {
	unsigned long long tracked;
	unsigned long long scans;
	unsigned long long period_ms;
	unsigned long long pte_scanned;
	unsigned long long accessed;
	unsigned long long promoted;
	unsigned long long cpu_ns;
	unsigned long long prctl_mode;
	unsigned long long served;
};

/* The lines of the file that fill each figure */
static const struct {
	const char *name;
	size_t offset;
} proc_figure_lines[] = {
	{ "tracked", offsetof(struct proc_figures, tracked) },
	{ "scans", offsetof(struct proc_figures, scans) },
	{ "scan_period_ms", offsetof(struct proc_figures, period_ms) },
	{ "pte_scanned", offsetof(struct proc_figures, pte_scanned) },
	{ "slowtier_accessed", offsetof(struct proc_figures, accessed) },
	{ "promoted", offsetof(struct proc_figures, promoted) },
	{ "kmmscand_cpu_ns", offsetof(struct proc_figures, cpu_ns) },
	{ "prctl_mode", offsetof(struct proc_figures, prctl_mode) },
	{ "served", offsetof(struct proc_figures, served) },
};

/* Read the figures of process @pid, or of the caller's if @pid is 0 */
static int proc_figures_read_pid(pid_t pid, struct proc_figures *f)
{
	unsigned long long value;
	char name[64], path[64];
	unsigned int i;
	FILE *fp;

	if (pid)
		snprintf(path, sizeof(path), "/proc/%d/kmmscand", pid);
	else
		snprintf(path, sizeof(path), "%s", PROC_KMMSCAND);
	fp = fopen(path, "r");
	if (!fp)
		return -errno;
	memset(f, 0, sizeof(*f));
	while (fscanf(fp, "%63s %llu", name, &value) == 2) {
		for (i = 0; i < ARRAY_SIZE(proc_figure_lines); i++)
			if (!strcmp(name, proc_figure_lines[i].name))
				*(unsigned long long *)((char *)f +
					proc_figure_lines[i].offset) = value;
	}
	fclose(fp);
	return 0;
}

static int proc_figures_read(struct proc_figures *f)
{
	return proc_figures_read_pid(0, f);
}

/*
 * Whether the kernel has no /proc/<pid>/kmmscand, for the test to skip;
 * fail if the environment says it has it (REQUIRE_PROC_ENV=1).
 */
static bool proc_file_missing(struct __test_metadata *_metadata)
{
	const char *env = getenv(REQUIRE_PROC_ENV);

	if (!access(PROC_KMMSCAND, R_OK))
		return false;
	ASSERT_FALSE(env && !strcmp(env, "1")) {
		TH_LOG("no %s, and %s=1", PROC_KMMSCAND, REQUIRE_PROC_ENV);
	}
	return true;
}

struct child {
	pid_t pid;
	double kill_at;		/* 0: let it exit by itself */
	bool killed;
	bool reaped;
	bool scanned;		/* seen with PTEs read by kmmscand */
};

/* Fork EXIT_CHILDREN scanned children, SIGKILLing every other one. */
static void spawn_children(struct __test_metadata *_metadata, int node,
			   struct child *children,
			   unsigned long long *rnd)
{
	int i;

	for (i = 0; i < EXIT_CHILDREN; i++) {
		unsigned int life = next_random(rnd) % CHILD_MAX_LIFE_MS;
		unsigned int bits = next_random(rnd);
		pid_t pid;

		pid = fork();
		ASSERT_GE(pid, 0);
		if (!pid)
			scanned_child(node, life, bits & 1, bits & 2);
		children[i].pid = pid;
		children[i].reaped = false;
		children[i].killed = false;
		children[i].scanned = false;
		children[i].kill_at = 0;
		if (i & 1)
			children[i].kill_at = tier_now() +
				(next_random(rnd) % CHILD_MAX_LIFE_MS) / 1000.0;
	}
}

/* Reap every child by the deadline; kill those due. Returns the number left. */
static int reap_children(struct __test_metadata *_metadata,
			 struct child *children)
{
	double deadline = tier_now() + REAP_TIMEOUT_MS / 1000.0;
	int i, left = EXIT_CHILDREN, status;
	struct proc_figures f;

	while (left && tier_now() < deadline) {
		for (i = 0; i < EXIT_CHILDREN; i++) {
			struct child *c = &children[i];

			if (c->reaped)
				continue;
			if (!c->scanned && !c->killed &&
			    !proc_figures_read_pid(c->pid, &f) && f.pte_scanned)
				c->scanned = true;
			if (c->kill_at && tier_now() >= c->kill_at) {
				kill(c->pid, SIGKILL);
				c->kill_at = 0;
				c->killed = true;
			}
			if (waitpid(c->pid, &status, WNOHANG) != c->pid)
				continue;
			c->reaped = true;
			left--;
			EXPECT_TRUE((WIFEXITED(status) && !WEXITSTATUS(status)) ||
				    (WIFSIGNALED(status) &&
				     WTERMSIG(status) == SIGKILL)) {
				TH_LOG("child %d ended with status %#x", c->pid,
				       status);
			}
		}
		usleep(REAP_POLL_US);
	}
	for (i = 0; i < EXIT_CHILDREN; i++) {
		if (children[i].reaped)
			continue;
		TH_LOG("child %d did not exit", children[i].pid);
		kill(children[i].pid, SIGKILL);
	}
	return left;
}

TEST_F_TIMEOUT(kmmscand, exit_while_scanning, EXIT_TEST_TIMEOUT_S)
{
	unsigned long long rnd = time(NULL) ^ ((unsigned long long)getpid() << 32);
	struct child children[EXIT_CHILDREN];
	int round, i, scanned = 0, killed_scanned = 0;
	struct stats before, after;
	struct tier_region hot;

	ASSERT_EQ(0, self->setup_err);
	if (access(PROC_KMMSCAND, R_OK))
		SKIP(return, "no %s: kernel without it", PROC_KMMSCAND);
	TH_LOG("random seed %#llx", rnd);
	/* From its fork on, so that most children die while tracked */
	ASSERT_EQ(0, knob_write_long(SCAN_DELAY_MS, 0));
	ASSERT_EQ(0, stats_read(&before));
	for (round = 0; round < EXIT_ROUNDS; round++) {
		spawn_children(_metadata, self->slow, children, &rnd);
		ASSERT_EQ(0, reap_children(_metadata, children));
		for (i = 0; i < EXIT_CHILDREN; i++) {
			scanned += children[i].scanned;
			killed_scanned += children[i].scanned &&
					  children[i].killed;
		}
	}
	ASSERT_EQ(0, stats_read(&after));
	stats_log(_metadata, &before, &after);
	TH_LOG("%d of %d children seen scanned before they ended, %d of them killed",
	       scanned, EXIT_ROUNDS * EXIT_CHILDREN, killed_scanned);
	EXPECT_GE(scanned, EXIT_SCANNED_MIN);
	EXPECT_GT(killed_scanned, 0);

	/* What they left behind does not hold the daemon up. */
	ASSERT_EQ(0, tier_alloc_on_node(&hot, HOT_SIZE, self->slow, false));
	ASSERT_TRUE(wait_promoted(_metadata, &hot, self->top,
				  PROMOTE_PERCENT, &hot, 1));
}

/*
 * Free blocks of 2^@order pages on @node, as /proc/buddyinfo lists them
 * (larger blocks count as several), or -1.
 */
static long free_blocks(int node, unsigned int order)
{
	char line[512], *p, *end;
	unsigned int o;
	long total = 0, n;
	FILE *fp;
	int nid;

	fp = fopen("/proc/buddyinfo", "r");
	if (!fp)
		return -1;
	while (fgets(line, sizeof(line), fp)) {
		p = strstr(line, "zone");
		if (sscanf(line, "Node %d,", &nid) != 1 || nid != node || !p)
			continue;
		/* Skip "zone" and the zone's name to the counts per order. */
		for (p += 4; isspace((unsigned char)*p); p++)
			;
		for (; *p && !isspace((unsigned char)*p); p++)
			;
		for (o = 0; ; o++, p = end) {
			n = strtol(p, &end, 10);
			if (end == p)
				break;
			if (o >= order)
				total += n << (o - order);
		}
	}
	fclose(fp);
	return total;
}

static bool thp_available(void)
{
	char buf[TIER_VALUE_LEN];

	if (tier_read_str(THP_ENABLED, buf, sizeof(buf)))
		return false;
	return !strstr(buf, "[never]") && read_pmd_pagesize();
}

TEST_F_TIMEOUT(kmmscand, thp_promoted_whole, PROMOTE_TEST_TIMEOUT_S)
{
	struct tier_region hot;
	unsigned long thp_before, thp_after;
	struct stats before, after;
	unsigned int pmd_order;
	char compact[128];
	long free;
	size_t pmd;
	bool done;

	ASSERT_EQ(0, self->setup_err);
	if (!thp_available())
		SKIP(return, "THP unavailable");
	pmd = read_pmd_pagesize();
	pmd_order = ffsl(pmd / sysconf(_SC_PAGESIZE)) - 1;
	/*
	 * A promotion allocates each THP on the top node without compacting
	 * (GFP_TRANSHUGE_LIGHT), and never splits it: make room first.
	 */
	snprintf(compact, sizeof(compact), COMPACT_NODE, self->top);
	tier_write_str(compact, "1");
	free = free_blocks(self->top, pmd_order);
	TH_LOG("%ld free THP-sized blocks on node %d", free, self->top);
	if (free >= 0 && free < THP_COUNT)
		SKIP(return, "no room for %d THPs on node %d", THP_COUNT,
		     self->top);
	ASSERT_EQ(0, daemon_pause());
	ASSERT_EQ(0, tier_alloc_on_node(&hot, THP_COUNT * pmd,
					self->slow, true));
	if (!check_huge_anon(hot.addr, THP_COUNT, pmd))
		SKIP(return, "no THPs on node %d", self->slow);
	ASSERT_TRUE(all_on_node(&hot, self->slow));
	ASSERT_EQ(0, stats_read(&before));
	ASSERT_EQ(0, tier_vmstat("thp_migration_success", &thp_before));
	ASSERT_EQ(0, daemon_resume(&hot, 1));

	done = wait_promoted(_metadata, &hot, self->top, 100, &hot, 1);
	ASSERT_EQ(0, stats_read(&after));
	ASSERT_EQ(0, tier_vmstat("thp_migration_success", &thp_after));
	stats_log(_metadata, &before, &after);
	TH_LOG("thp_migration_success +%lu, %ld free THP-sized blocks on node %d",
	       thp_after - thp_before, free_blocks(self->top, pmd_order),
	       self->top);
	ASSERT_TRUE(done);

	ASSERT_TRUE(check_huge_anon(hot.addr, THP_COUNT, pmd)) {
		TH_LOG("the hot set is no longer mapped by THPs");
	}
	/* Each THP moved as one folio, not split and moved page by page. */
	EXPECT_GE(thp_after - thp_before, THP_COUNT);
	EXPECT_TRUE(promotions_counted(_metadata, before.v[PGPROMOTE_SUCCESS],
				       tier_nr_pages(&hot)));
}

/*
 * Pin the scan size of every mm to @mb, lowering the floor first, then the
 * initial size, then the ceiling.
 */
static int pin_scan_size(long mb)
{
	int ret;

	ret = knob_write_long(SCAN_SIZE_MIN_MB, mb);
	if (!ret)
		ret = knob_write_long(SCAN_SIZE_MB, mb);
	if (!ret)
		ret = knob_write_long(SCAN_SIZE_MAX_MB, mb);
	return ret;
}

/* Condition for tier_wait(): @scans more scans of the caller's mm */
struct proc_scans_cond {
	struct proc_figures before;
	struct proc_figures now;
	unsigned long long scans;
};

static bool proc_scans_done(void *arg)
{
	struct proc_scans_cond *cond = arg;

	if (proc_figures_read(&cond->now))
		return false;
	return cond->now.scans - cond->before.scans >= cond->scans;
}

/*
 * A walk that ends inside a THP, at the end of a scan or of a step, is
 * followed by one that starts inside it: the THP is tested by the walk
 * that covered its head, and only by it.  Where the next walk tested it
 * again, a DEBUG_VM kernel hit the VM_BUG_ON of pmdp_clear_flush_young()
 * for the unaligned address, and any kernel read the THP twice.
 */
TEST_F_TIMEOUT(kmmscand, thp_scan_resumes_mid_pmd, PROMOTE_TEST_TIMEOUT_S)
{
	size_t psz = sysconf(_SC_PAGESIZE), pmd;
	unsigned long thp_before, thp_after;
	unsigned long long pte_read, max_read;
	struct proc_scans_cond cond;
	struct tier_region hot;
	unsigned int pmd_order;
	char compact[128];
	int nr_thp;
	long free;
	bool done;

	ASSERT_EQ(0, self->setup_err);
	if (!thp_available())
		SKIP(return, "THP unavailable");
	if (proc_file_missing(_metadata))
		SKIP(return, "no %s: kernel without it", PROC_KMMSCAND);
	pmd = read_pmd_pagesize();
	pmd_order = ffsl(pmd / psz) - 1;
	nr_thp = MID_PMD_SIZE / pmd;
	/* Room for the THPs on each node; see thp_promoted_whole */
	snprintf(compact, sizeof(compact), COMPACT_NODE, self->slow);
	tier_write_str(compact, "1");
	snprintf(compact, sizeof(compact), COMPACT_NODE, self->top);
	tier_write_str(compact, "1");
	free = free_blocks(self->top, pmd_order);
	TH_LOG("%ld free THP-sized blocks on node %d", free, self->top);
	if (free >= 0 && free < nr_thp)
		SKIP(return, "no room for %d THPs on node %d", nr_thp,
		     self->top);
	ASSERT_EQ(0, daemon_pause());
	ASSERT_EQ(0, pin_scan_size(MID_PMD_SCAN_MB));
	ASSERT_EQ(0, knob_write_long(PAGES_TO_SCAN, MID_PMD_PAGES));
	ASSERT_EQ(0, tier_alloc_on_node(&hot, MID_PMD_SIZE, self->slow, true));
	if (!check_huge_anon(hot.addr, nr_thp, pmd))
		SKIP(return, "not all %d THPs on node %d", nr_thp, self->slow);
	ASSERT_TRUE(all_on_node(&hot, self->slow));
	ASSERT_EQ(0, tier_vmstat("thp_migration_success", &thp_before));
	ASSERT_EQ(0, proc_figures_read(&cond.before));
	ASSERT_EQ(0, daemon_resume(&hot, 1));

	done = wait_promoted(_metadata, &hot, self->top, PROMOTE_PERCENT,
			     &hot, 1);
	cond.scans = MID_PMD_SCANS;
	EXPECT_TRUE(tier_wait(&hot, 1, proc_scans_done, &cond,
			      SETTLE_TIMEOUT_MS));
	ASSERT_EQ(0, tier_vmstat("thp_migration_success", &thp_after));
	TH_LOG("thp_migration_success +%lu of %d THPs", thp_after - thp_before,
	       nr_thp);
	/*
	 * A scan walks MID_PMD_SCAN_MB of address space and reads each entry
	 * in it once; a THP that a walk ends in is read whole, and the next
	 * walk reads none of it.  The whole scans of the window and the part
	 * of one at each end walk at most one scan more than were counted,
	 * and read at most that and the rest of the last THP.
	 */
	pte_read = cond.now.pte_scanned - cond.before.pte_scanned;
	max_read = (cond.now.scans - cond.before.scans + 1) *
		   (MID_PMD_SCAN_MB * MIB / psz) + pmd / psz - 1;
	TH_LOG("%llu scans read %llu PTEs, at most %llu",
	       cond.now.scans - cond.before.scans, pte_read, max_read);
	EXPECT_LE(pte_read, max_read);

	ASSERT_TRUE(done);
	EXPECT_TRUE(check_huge_anon(hot.addr, nr_thp, pmd)) {
		TH_LOG("the hot set is no longer mapped by THPs");
	}
	EXPECT_GE(thp_after - thp_before,
		  (unsigned long)nr_thp * PROMOTE_PERCENT / 100);
}

/*
 * The value every word of the hot set holds: a hash of its address and the
 * seed (the splitmix64 finalizer, so that neighbours differ in every bit).
 */
static unsigned long stamp(const unsigned long *word, unsigned long long seed)
{
	unsigned long long x = (unsigned long)word ^ seed;

	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

static void stamp_fill(const struct tier_region *region,
		       unsigned long long seed)
{
	unsigned long *w = (unsigned long *)region->addr;
	size_t i, n = region->size / sizeof(*w);

	for (i = 0; i < n; i++)
		w[i] = stamp(&w[i], seed);
}

/*
 * Count words that differ from their stamp. The first word of each page
 * was incremented @writes times while pages moved.
 */
static unsigned long stamp_check(struct __test_metadata *_metadata,
				 const struct tier_region *region,
				 unsigned long long seed, unsigned long writes)
{
	size_t words_per_page = sysconf(_SC_PAGESIZE) / sizeof(unsigned long);
	unsigned long *w = (unsigned long *)region->addr, want;
	size_t i, n = region->size / sizeof(*w);
	unsigned long bad = 0;

	for (i = 0; i < n; i++) {
		want = stamp(&w[i], seed);
		if (!(i % words_per_page))
			want += writes;
		if (w[i] == want)
			continue;
		if (!bad)
			TH_LOG("first bad word at %p: %#lx, want %#lx",
			       &w[i], w[i], want);
		bad++;
	}
	return bad;
}

/* Increment the first word of every page: writes racing with migration. */
static void write_pass(const struct tier_region *region)
{
	size_t psz = sysconf(_SC_PAGESIZE), off;

	for (off = 0; off < region->size; off += psz)
		(*(unsigned long *)(region->addr + off))++;
	tier_barrier();
}

TEST_F_TIMEOUT(kmmscand, contents_intact, PROMOTE_TEST_TIMEOUT_S)
{
	struct tier_region hot;
	double deadline, next, start;
	unsigned long writes = 0;
	struct tier_share share;
	unsigned long long seed;
	bool done;

	ASSERT_EQ(0, self->setup_err);
	seed = ((unsigned long long)time(NULL) << 32) ^ getpid();
	TH_LOG("stamp seed %#llx", seed);
	ASSERT_EQ(0, daemon_pause());
	ASSERT_EQ(0, tier_alloc_on_node(&hot, HOT_SIZE, self->slow, false));
	stamp_fill(&hot, seed);
	ASSERT_TRUE(all_on_node(&hot, self->slow));
	ASSERT_EQ(0, daemon_resume(&hot, 1));

	/* Keep writing while waiting, so that writes meet moving pages. */
	tier_share_init(&share, &hot, self->top, PROMOTE_PERCENT);
	start = tier_now();
	deadline = start + PROMOTE_TIMEOUT_MS / 1000.0;
	do {
		next = tier_now() + WRITE_POLL_MS / 1000.0;
		do {
			write_pass(&hot);
			writes++;
		} while (tier_now() < next);
		done = tier_share_reached(&share);
	} while (!done && tier_now() < deadline);
	TH_LOG("%lu of %lu pages on node %d after %.1f s, %lu write passes",
	       share.last_pages, tier_nr_pages(&hot), self->top,
	       tier_now() - start, writes);
	ASSERT_TRUE(done);

	ASSERT_EQ(0, stamp_check(_metadata, &hot, seed, writes));
}

/* Condition for tier_wait(): a vmstat counter grew by at least some. */
struct grow_cond {
	enum kmm_stat stat;
	unsigned long min;
	unsigned long last;
};

static void grow_init(struct grow_cond *grow, enum kmm_stat stat,
		      unsigned long by)
{
	grow->stat = stat;
	grow->last = 0;
	tier_vmstat(stat_name[stat], &grow->last);
	grow->min = grow->last + by;
}

static bool grew(void *arg)
{
	struct grow_cond *grow = arg;

	if (tier_vmstat(stat_name[grow->stat], &grow->last))
		return false;
	return grow->last >= grow->min;
}

/* A process that places @size bytes on @node, says so on @fd, and sleeps. */
static void sleeping_child(int node, size_t size, int fd)
{
	struct tier_region region;
	char ok = 1;

	/* Gone with the test process, should an assertion end it first */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (tier_alloc_on_node(&region, size, node, false))
		_exit(CHILD_ALLOC_FAILED);
	if (write(fd, &ok, 1) != 1)
		_exit(CHILD_ALLOC_FAILED);
	for (;;)
		pause();
}

TEST_F_TIMEOUT(kmmscand, idle_mapping_skipped, PROMOTE_TEST_TIMEOUT_S)
{
	struct grow_cond regions, pmds, idle;
	struct tier_region map;
	long pmd_young;
	int pipefd[2];
	unsigned long off_before, off_after;
	pid_t pid;
	char ok;

	ASSERT_EQ(0, self->setup_err);
	ASSERT_EQ(0, knob_write(SMART_SCAN, "1"));
	ASSERT_EQ(0, knob_write(SKIP_IDLE_MM, "1"));
	ASSERT_EQ(0, knob_read_long(PMD_YOUNG, &pmd_young));
	ASSERT_EQ(0, daemon_pause());
	ASSERT_EQ(0, tier_alloc_on_node(&map, IDLE_MAP_SIZE, self->slow,
					false));
	/* Some regions of this mm are skipped for being cold... */
	grow_init(&regions, REGION_SKIPPED,
		  IDLE_MAP_SIZE / (2 * MIB) / 2);
	grow_init(&pmds, PMD_SKIPPED, IDLE_MAP_SIZE / (2 * MIB) / 2);
	ASSERT_EQ(0, daemon_resume(NULL, 0));
	EXPECT_TRUE(tier_wait(NULL, 0, grew, &regions, SKIP_GROW_TIMEOUT_MS));
	TH_LOG("kmmscand_region_skipped %lu, wanted %lu", regions.last,
	       regions.min);
	/* ...and, where the CPU sets the bit, for an old PMD entry */
	if (pmd_young) {
		EXPECT_TRUE(tier_wait(NULL, 0, grew, &pmds,
				      SKIP_GROW_TIMEOUT_MS));
		TH_LOG("kmmscand_pmd_skipped %lu, wanted %lu", pmds.last,
		       pmds.min);
	}
	/* The mapping was only looked at, never promoted */
	EXPECT_TRUE(all_on_node(&map, self->slow));
	tier_free(&map);

	/* A process that sleeps is passed over whole */
	ASSERT_EQ(0, pipe(pipefd));
	pid = fork();
	ASSERT_GE(pid, 0);
	if (!pid)
		sleeping_child(self->slow, CHILD_SIZE, pipefd[1]);
	ASSERT_EQ(1, read(pipefd[0], &ok, 1));
	grow_init(&idle, MM_IDLE_SKIPPED, IDLE_SKIPS);
	EXPECT_TRUE(tier_wait(NULL, 0, grew, &idle, SKIP_GROW_TIMEOUT_MS));
	TH_LOG("kmmscand_mm_idle_skipped %lu, wanted %lu", idle.last,
	       idle.min);

	/* skip_idle_mm=0 stops idle skips, of every mm */
	ASSERT_EQ(0, knob_write(SKIP_IDLE_MM, "0"));
	usleep(FAST_PERIOD_MAX_MS * 1000);
	ASSERT_EQ(0, tier_vmstat(stat_name[MM_IDLE_SKIPPED], &off_before));
	usleep(IDLE_OFF_OBSERVE_MS * 1000);
	ASSERT_EQ(0, tier_vmstat(stat_name[MM_IDLE_SKIPPED], &off_after));
	EXPECT_EQ(off_before, off_after);

	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	close(pipefd[0]);
	close(pipefd[1]);
}

/*
 * The process of bound_mm_not_walked: bind the task policy to @node, say
 * so on @fd, and become a shell that keeps running, so that its scans are
 * due and not passed over as idle.  It exec()s: a child of the test would
 * keep the harness's shared anonymous mapping, memory with a policy of its
 * own that another process may change, which is walked at every scan.
 */
static void bound_running_child(int node, int fd)
{
	unsigned long mask = 1UL << node;
	char ok = 1;

	/* Likewise; the exec() keeps it */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (set_mempolicy(MPOL_BIND, &mask, TIER_MAX_NODES + 1))
		_exit(CHILD_ALLOC_FAILED);
	if (write(fd, &ok, 1) != 1)
		_exit(CHILD_ALLOC_FAILED);
	execl("/bin/sh", "sh", "-c", "while :; do :; done", (char *)NULL);
	_exit(CHILD_ALLOC_FAILED);
}

/*
 * Whether the running kernel has @option ("CONFIG_...") set, as its
 * /proc/config.gz or /boot/config-<release> says: 1 or 0, or -1 if
 * neither can be read.
 */
static int kernel_config_has(const char *option)
{
	char cmd[160], line[256];
	struct utsname uts;
	size_t len = strlen(option);
	int found = -1;
	FILE *fp;

	if (uname(&uts))
		return -1;
	snprintf(cmd, sizeof(cmd),
		 "zcat /proc/config.gz 2>/dev/null || cat /boot/config-%s 2>/dev/null",
		 uts.release);
	fp = popen(cmd, "r");
	if (!fp)
		return -1;
	while (fgets(line, sizeof(line), fp)) {
		if (found < 0)
			found = 0;
		if (!strncmp(line, option, len) && line[len] == '=' &&
		    (line[len + 1] == 'y' || line[len + 1] == 'm'))
			found = 1;
	}
	pclose(fp);
	return found;
}

TEST_F_TIMEOUT(kmmscand, bound_mm_not_walked, PROMOTE_TEST_TIMEOUT_S)
{
	struct grow_cond unchanged;
	int pipefd[2];
	pid_t pid;
	char ok;

	ASSERT_EQ(0, self->setup_err);
	/* Only per-VMA locks tell that the VMAs did not change */
	if (!kernel_config_has("CONFIG_PER_VMA_LOCK"))
		SKIP(return, "kernel without CONFIG_PER_VMA_LOCK");
	ASSERT_EQ(0, pipe(pipefd));
	pid = fork();
	ASSERT_GE(pid, 0);
	if (!pid)
		bound_running_child(self->slow, pipefd[1]);
	ASSERT_EQ(1, read(pipefd[0], &ok, 1)) {
		TH_LOG("the child could not bind its policy to node %d",
		       self->slow);
	}
	/* After its first scan, which walks nothing, it is not walked again */
	grow_init(&unchanged, MM_UNCHANGED, UNCHANGED_SKIPS);
	EXPECT_TRUE(tier_wait(NULL, 0, grew, &unchanged,
			      SKIP_GROW_TIMEOUT_MS));
	TH_LOG("kmmscand_mm_unchanged %lu, wanted %lu", unchanged.last,
	       unchanged.min);

	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	close(pipefd[0]);
	close(pipefd[1]);
}

/*
 * Pin the scan period of every mm to @period_ms: init first, which the
 * fast knobs' range holds, then the floor, then the ceiling.
 */
static int pin_period(long period_ms)
{
	int ret;

	ret = knob_write_long(SCAN_PERIOD_MAX_MS, period_ms > FAST_PERIOD_MAX_MS ?
			      period_ms : FAST_PERIOD_MAX_MS);
	if (!ret)
		ret = knob_write_long(MM_SCAN_PERIOD_MS, period_ms);
	if (!ret)
		ret = knob_write_long(SCAN_PERIOD_MIN_MS, period_ms);
	if (!ret)
		ret = knob_write_long(SCAN_PERIOD_MAX_MS, period_ms);
	return ret;
}

/*
 * Let a region on node @slow go cold for @aging_visits scan periods of
 * SMART_PERIOD_MS with smart_scan_max_skips at @max_skips, then use it,
 * and require it on node @top within @deadline_periods periods.
 */
static void cold_then_hot(struct __test_metadata *_metadata, int slow,
			  int top, long max_skips, unsigned int aging_visits,
			  unsigned int deadline_periods)
{
	unsigned int deadline_ms = deadline_periods * SMART_PERIOD_MS;
	struct grow_cond skipped;
	struct tier_region region;
	struct tier_share share;
	double start, until;
	bool done;

	ASSERT_EQ(0, pin_period(SMART_PERIOD_MS));
	ASSERT_EQ(0, knob_write(SMART_SCAN, "1"));
	ASSERT_EQ(0, knob_write_long(SMART_SCAN_MAX_SKIPS, max_skips));
	ASSERT_EQ(0, daemon_pause());
	ASSERT_EQ(0, tier_alloc_on_node(&region, SMART_REGION_SIZE,
					slow, false));
	grow_init(&skipped, REGION_SKIPPED, 1);
	ASSERT_EQ(0, daemon_resume(&region, 1));

	/* Cold until it is passed over for the longest runs */
	until = tier_now() + aging_visits * SMART_PERIOD_MS / 1000.0;
	while (tier_now() < until)
		usleep(AWAKE_POLL_US);
	EXPECT_TRUE(grew(&skipped));
	TH_LOG("kmmscand_region_skipped +%lu while cold",
	       skipped.last - skipped.min + 1);
	ASSERT_TRUE(all_on_node(&region, slow));

	/* Hot from now on */
	start = tier_now();
	tier_share_init(&share, &region, top, PROMOTE_PERCENT);
	done = tier_wait(&region, 1, tier_share_reached, &share, deadline_ms);
	TH_LOG("%lu of %lu pages on node %d after %.1f s (limit %u s)",
	       share.last_pages, tier_nr_pages(&region), top,
	       tier_now() - start, deadline_ms / 1000);
	ASSERT_TRUE(done);
}

TEST_F_TIMEOUT(kmmscand, cold_region_turns_hot, SMART_TEST_TIMEOUT_S)
{
	ASSERT_EQ(0, self->setup_err);
	cold_then_hot(_metadata, self->slow, self->top, SMART_MAX_SKIPS,
		      SMART_AGING_VISITS, SMART_MAX_SKIPS + 2);
}

TEST_F_TIMEOUT(kmmscand, cold_region_recalled, RECALL_TEST_TIMEOUT_S)
{
	long pmd_young;

	ASSERT_EQ(0, self->setup_err);
	ASSERT_EQ(0, knob_read_long(PMD_YOUNG, &pmd_young));
	if (!pmd_young)
		SKIP(return, "the CPU does not set the PMD Accessed bit");
	cold_then_hot(_metadata, self->slow, self->top, RECALL_MAX_SKIPS,
		      RECALL_AGING_VISITS, RECALL_DEADLINE_PERIODS);
}

/*
 * The end of a promotion test's child: exit 0 once @hot is on node @top,
 * CHILD_NOT_PROMOTED if it is not within @left_ms. @forked is when the
 * child was forked, for the log.
 */
static void child_await_promotion(struct tier_region *hot, int top,
				  double forked, double left_ms)
{
	struct tier_share share;

	tier_share_init(&share, hot, top, PROMOTE_PERCENT);
	if (!tier_wait(hot, 1, tier_share_reached, &share,
		       (unsigned int)left_ms))
		_exit(CHILD_NOT_PROMOTED);
	fprintf(stderr, "# hot set on node %d %.1f s after the fork\n", top,
		tier_now() - forked);
	_exit(0);
}

/*
 * Run @child(@slow, @top) in a process of its own, which exits and never
 * returns; return its exit code, or -1 if it could not be run or was killed.
 */
static int run_promotion_child(void (*child)(int slow, int top), int slow,
			       int top)
{
	int status;
	pid_t pid;

	pid = fork();
	if (pid < 0)
		return -1;
	if (!pid) {
		child(slow, top);
		_exit(CHILD_NOT_PROMOTED);	/* not reached */
	}
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return -1;
	return WEXITSTATUS(status);
}

/*
 * The process of first_scan_after_delay: place a hot set on node @slow,
 * use it, and exit 0 once it is on node @top, within DELAY_DEADLINE_MS of
 * the fork.
 */
static void delayed_child(int slow, int top)
{
	double forked = tier_now(), left_ms;
	struct tier_region hot;

	if (tier_alloc_on_node(&hot, DELAY_HOT_SIZE, slow, false))
		_exit(CHILD_ALLOC_FAILED);
	left_ms = DELAY_DEADLINE_MS - (tier_now() - forked) * 1000;
	if (left_ms < DELAY_DEADLINE_MS - DELAY_MS)
		_exit(CHILD_PLACED_LATE);
	child_await_promotion(&hot, top, forked, left_ms);
}

TEST_F_TIMEOUT(kmmscand, first_scan_after_delay, DELAY_TEST_TIMEOUT_S)
{
	int code;

	ASSERT_EQ(0, self->setup_err);
	ASSERT_EQ(0, pin_period(DELAY_PERIOD_MS));
	ASSERT_EQ(0, knob_write_long(SCAN_DELAY_MS, DELAY_MS));

	code = run_promotion_child(delayed_child, self->slow, self->top);
	ASSERT_LE(0, code) {
		TH_LOG("the child could not be run or was killed");
	}
	ASSERT_NE(CHILD_ALLOC_FAILED, code) {
		TH_LOG("the child could not place its hot set");
	}
	ASSERT_NE(CHILD_PLACED_LATE, code) {
		TH_LOG("placing the hot set took over %d ms", DELAY_MS);
	}
	ASSERT_EQ(0, code) {
		TH_LOG("hot set not on node %d %d ms after the fork",
		       self->top, DELAY_DEADLINE_MS);
	}
}

/*
 * The process of knob_write_ends_wait: place a hot set on node @slow, tell
 * the parent through @ready, and exit 0 once the set is on node @top
 * within WAIT_DEADLINE_MS of that.
 */
static void waiting_child(int slow, int top, int ready)
{
	struct tier_region hot;
	double placed;

	if (tier_alloc_on_node(&hot, DELAY_HOT_SIZE, slow, false))
		_exit(CHILD_ALLOC_FAILED);
	placed = tier_now();
	if (write(ready, "1", 1) != 1)
		_exit(CHILD_ALLOC_FAILED);
	child_await_promotion(&hot, top, placed, WAIT_DEADLINE_MS);
}

/* Knobs back from WAIT_LONG_MS to fast values: floors first, then ceilings */
static int unpin_waits(void)
{
	int ret;

	ret = knob_write_long(SCAN_SLEEP_MS, WAIT_SLEEP_MS);
	if (!ret)
		ret = knob_write_long(SCAN_DELAY_MS, 0);
	if (!ret)
		ret = knob_write_long(SCAN_PERIOD_MIN_MS, FAST_PERIOD_MIN_MS);
	if (!ret)
		ret = knob_write_long(MM_SCAN_PERIOD_MS, FAST_PERIOD_MS);
	if (!ret)
		ret = knob_write_long(SCAN_PERIOD_MAX_MS, FAST_PERIOD_MAX_MS);
	return ret;
}

TEST_F_TIMEOUT(kmmscand, knob_write_ends_wait, WAIT_TEST_TIMEOUT_S)
{
	int fds[2], status;
	char byte;
	pid_t pid;

	ASSERT_EQ(0, self->setup_err);
	ASSERT_EQ(0, pin_period(WAIT_LONG_MS));
	ASSERT_EQ(0, knob_write_long(SCAN_DELAY_MS, WAIT_LONG_MS));
	ASSERT_EQ(0, knob_write_long(SCAN_SLEEP_MS, WAIT_LONG_MS));
	ASSERT_EQ(0, pipe(fds));

	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		close(fds[0]);
		waiting_child(self->slow, self->top, fds[1]);
	}
	close(fds[1]);
	ASSERT_EQ(1, read(fds[0], &byte, 1)) {
		TH_LOG("the child could not place its hot set");
	}
	close(fds[0]);
	ASSERT_EQ(0, unpin_waits());

	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	ASSERT_NE(CHILD_ALLOC_FAILED, WEXITSTATUS(status));
	ASSERT_EQ(0, WEXITSTATUS(status)) {
		TH_LOG("hot set not on node %d %d ms after the knobs were set back",
		       self->top, WAIT_DEADLINE_MS);
	}
}

/*
 * The process of rescan_after_bound_start: place a hot set on node @slow
 * under a task policy bound to it, keep using it until RETRY_BIND_MS after
 * the fork, drop the policy, and exit 0 once the set is on node @top,
 * within RETRY_DEADLINE_MS of the fork.
 */
static void bound_child(int slow, int top)
{
	unsigned long mask = 1UL << slow;
	double forked = tier_now(), left_ms;
	struct tier_region hot;

	if (set_mempolicy(MPOL_BIND, &mask, TIER_MAX_NODES + 1))
		_exit(CHILD_ALLOC_FAILED);
	hot.size = DELAY_HOT_SIZE;
	hot.addr = mmap(NULL, hot.size, PROT_READ | PROT_WRITE,
			MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (hot.addr == MAP_FAILED ||
	    (madvise(hot.addr, hot.size, MADV_NOHUGEPAGE) && errno != EINVAL))
		_exit(CHILD_ALLOC_FAILED);
	memset(hot.addr, 1, hot.size);
	/* Running, so that the scans are not passed over as idle */
	while (tier_now() - forked < RETRY_BIND_MS / 1000.0)
		tier_touch(&hot, 1);
	if (set_mempolicy(MPOL_DEFAULT, NULL, 0) ||
	    tier_pages_on_node(&hot, slow) != (long)tier_nr_pages(&hot))
		_exit(CHILD_ALLOC_FAILED);
	left_ms = RETRY_DEADLINE_MS - (tier_now() - forked) * 1000;
	if (left_ms < RETRY_DEADLINE_MS - RETRY_BIND_MS - RETRY_MIN_MS)
		_exit(CHILD_PLACED_LATE);
	child_await_promotion(&hot, top, forked, left_ms);
}

TEST_F_TIMEOUT(kmmscand, rescan_after_bound_start, RETRY_TEST_TIMEOUT_S)
{
	int code;

	ASSERT_EQ(0, self->setup_err);
	ASSERT_EQ(0, pin_period(RETRY_PERIOD_MS));
	ASSERT_EQ(0, knob_write_long(SCAN_PERIOD_MIN_MS, RETRY_MIN_MS));
	ASSERT_EQ(0, knob_write_long(SCAN_DELAY_MS, RETRY_DELAY_MS));

	code = run_promotion_child(bound_child, self->slow, self->top);
	ASSERT_LE(0, code) {
		TH_LOG("the child could not be run or was killed");
	}
	ASSERT_NE(CHILD_ALLOC_FAILED, code) {
		TH_LOG("the child could not place its hot set on node %d",
		       self->slow);
	}
	ASSERT_NE(CHILD_PLACED_LATE, code) {
		TH_LOG("the child ran late: its policy was dropped after %d ms",
		       RETRY_BIND_MS + RETRY_MIN_MS);
	}
	ASSERT_EQ(0, code) {
		TH_LOG("hot set not on node %d %d ms after the fork",
		       self->top, RETRY_DEADLINE_MS);
	}
}

/* Text that a 0/1 knob refuses, beyond what every knob refuses. */
static void check_bool_knob(struct __test_metadata *_metadata, enum knob knob)
{
	long value;

	expect_rejected(_metadata, knob, "2", "2 (not 0 or 1)");
	ASSERT_EQ(0, knob_read_long(knob, &value));
	ASSERT_TRUE(value == 0 || value == 1);
	expect_accepted_then(_metadata, knob, !value, value);
}

TEST_F_TIMEOUT(kmmscand, scan_cost_knobs, KNOB_TEST_TIMEOUT_S)
{
	long pmd_young, value;

	ASSERT_EQ(0, self->setup_err);
	/* knobs_reject_bad_input tries text on them, as on every knob */
	check_bool_knob(_metadata, SMART_SCAN);
	check_bool_knob(_metadata, SKIP_IDLE_MM);
	check_bool_knob(_metadata, SCAN_BY_DEFAULT);

	/* nice: a nice level, -20 to 19 */
	ASSERT_EQ(0, knob_read_long(NICE, &value));
	expect_rejected(_metadata, NICE, "-21", "-21 (below -20)");
	expect_rejected(_metadata, NICE, "20", "20 (above 19)");
	expect_accepted_then(_metadata, NICE, -20, value);
	expect_accepted_then(_metadata, NICE, 19, value);

	/* smart_scan_max_skips: at least one skip, at most a few dozen */
	expect_rejected(_metadata, SMART_SCAN_MAX_SKIPS, "0", "0 skips");
	expect_rejected(_metadata, SMART_SCAN_MAX_SKIPS, "1000000",
			"a million skips");
	expect_accepted_then(_metadata, SMART_SCAN_MAX_SKIPS, 1,
			     SMART_MAX_SKIPS);
	expect_accepted(_metadata, SMART_SCAN_MAX_SKIPS, SMART_MAX_SKIPS);

	/* migrate_threads: the thread alone, up to MIGRATE_THREADS_MAX CPUs */
	ASSERT_EQ(0, knob_read_long(MIGRATE_THREADS, &value));
	expect_rejected(_metadata, MIGRATE_THREADS, "0",
			"0 (not even the thread)");
	expect_rejected_long(_metadata, MIGRATE_THREADS,
			     MIGRATE_THREADS_MAX + 1, "more CPUs than the limit");
	expect_accepted_then(_metadata, MIGRATE_THREADS, 1, value);
	expect_accepted_then(_metadata, MIGRATE_THREADS, MIGRATE_THREADS_MAX,
			     value);

	/* min_heat: from 1 to HEAT_MAX reads in a row */
	expect_rejected(_metadata, MIN_HEAT, "0", "0 (no heat)");
	expect_rejected_long(_metadata, MIN_HEAT, HEAT_MAX + 1,
			     "more than the heat can count");
	expect_accepted_then(_metadata, MIN_HEAT, HEAT_MAX, 1);
	expect_accepted(_metadata, MIN_HEAT, 1);

	/* pmd_young takes 1 only where the CPU sets the bit: it reads 1 */
	ASSERT_EQ(0, knob_read_long(PMD_YOUNG, &pmd_young));
	expect_rejected(_metadata, PMD_YOUNG, "2", "2 (not 0 or 1)");
	if (pmd_young)
		expect_accepted_then(_metadata, PMD_YOUNG, 0, 1);
	else
		expect_rejected(_metadata, PMD_YOUNG, "1",
				"1 (the CPU does not set the bit)");
}

/*
 * The filler of full_node_backs_off: keep @node without room, see
 * FILL_CHUNK. It dies with @parent, the test, however the test ends.
 */
static void node_filler(int node, pid_t parent)
{
	unsigned long mask = 1UL << node;
	size_t psz = sysconf(_SC_PAGESIZE), len;
	struct tier_node_marks marks;
	char *p;

	if (prctl(PR_SET_PDEATHSIG, SIGKILL) || getppid() != parent)
		_exit(FILL_ERROR);
	/* Locked, its own memory is not scanned, nor reclaimed */
	if (mlockall(MCL_CURRENT | MCL_FUTURE | MCL_ONFAULT))
		_exit(FILL_NO_MLOCK);
	for (;;) {
		if (tier_node_marks(node, &marks))
			_exit(FILL_ERROR);
		if (!marks.room) {
			usleep(FILL_POLL_MS * 1000);
			continue;
		}
		len = (marks.room + (marks.high - marks.low) / 2) * psz;
		if (len > FILL_CHUNK)
			len = FILL_CHUNK;
		p = mmap(NULL, len, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED)
			_exit(FILL_NO_MAP);
		/* EINVAL only means a kernel without THP */
		madvise(p, len, len == FILL_CHUNK ? MADV_HUGEPAGE :
						    MADV_NOHUGEPAGE);
		/*
		 * Bound for the faults only: what the kernel allocates for
		 * its reads of /proc/zoneinfo may go to another node.
		 */
		if (set_mempolicy(MPOL_BIND, &mask, TIER_MAX_NODES + 1))
			_exit(FILL_ERROR);
		if (mlock(p, len))
			_exit(FILL_NO_MLOCK);
		if (set_mempolicy(MPOL_DEFAULT, NULL, 0))
			_exit(FILL_ERROR);
	}
}

static const char *filler_end(int status)
{
	if (WIFSIGNALED(status))
		return "was killed";
	switch (WIFEXITED(status) ? WEXITSTATUS(status) : -1) {
	case FILL_NO_MLOCK:
		return "could not mlock";
	case FILL_NO_MAP:
		return "could not map memory";
	default:
		return "failed";
	}
}

/* Condition for tier_wait(): the filler left the node no room a while. */
struct fill_cond {
	int node;
	pid_t pid;
	bool exited;
	int status;
	double quiet_since;
	struct tier_node_marks marks;
};

static bool node_filled(void *arg)
{
	struct fill_cond *fill = arg;

	if (waitpid(fill->pid, &fill->status, WNOHANG) == fill->pid) {
		fill->exited = true;
		return true;
	}
	if (tier_node_marks(fill->node, &fill->marks) || fill->marks.room) {
		fill->quiet_since = tier_now();
		return false;
	}
	return tier_now() - fill->quiet_since >= FILL_QUIET_MS / 1000.0;
}

/*
 * What full_node_backs_off watches while the node is full: the lowest
 * free pages of the node above the sum of its min watermarks, with the
 * figures of that sample, whether the filler went away, and how many
 * samples saw kmmscand_migrated grow.
 */
struct full_watch {
	int node;
	pid_t filler;
	bool filler_gone;
	long worst;
	struct tier_node_marks at_worst;
	unsigned long migrated;
	unsigned int promotions;
};

static void full_watch_sample(struct full_watch *watch)
{
	struct tier_node_marks marks;
	unsigned long migrated;
	int status;

	if (!watch->filler_gone &&
	    waitpid(watch->filler, &status, WNOHANG) == watch->filler)
		watch->filler_gone = true;
	if (!tier_vmstat(stat_name[MIGRATED], &migrated) &&
	    migrated != watch->migrated) {
		watch->migrated = migrated;
		watch->promotions++;
	}
	if (tier_node_marks(watch->node, &marks))
		return;
	if ((long)(marks.free - marks.min) < watch->worst) {
		watch->worst = marks.free - marks.min;
		watch->at_worst = marks;
	}
}

/* Condition for tier_wait(): a back-off window started. */
struct backoff_cond {
	struct full_watch *watch;
	unsigned long min;
	unsigned long last;
};

static bool backoff_started(void *arg)
{
	struct backoff_cond *backoff = arg;

	full_watch_sample(backoff->watch);
	if (backoff->watch->filler_gone)
		return true;
	if (tier_vmstat(NODE_FULL_STAT, &backoff->last))
		return false;
	return backoff->last >= backoff->min;
}

static void stop_filler(pid_t pid)
{
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

TEST_F_TIMEOUT(kmmscand, full_node_backs_off, FULL_TEST_TIMEOUT_S)
{
	unsigned long full_start, full_end, room_start, room_end;
	unsigned long pte, pte_max, windows_max;
	struct stats before, after;
	struct full_watch watch = { .worst = LONG_MAX };
	struct fill_cond fill = { .node = self->top };
	struct backoff_cond backoff;
	struct tier_region hot;
	double start, end, next;
	pid_t me = getpid();
	bool filled;

	ASSERT_EQ(0, self->setup_err);
	ASSERT_EQ(0, tier_vmstat(NODE_FULL_STAT, &full_start)) {
		TH_LOG("no %s in /proc/vmstat", NODE_FULL_STAT);
	}
	ASSERT_EQ(0, tier_vmstat(NO_ROOM_STAT, &room_start)) {
		TH_LOG("no %s in /proc/vmstat", NO_ROOM_STAT);
	}
	ASSERT_EQ(0, pin_period(FAST_PERIOD_MIN_MS));
	ASSERT_EQ(0, pin_scan_size(FULL_SCAN_MB));
	/* Room made by demoting would let the hot set move */
	if (self->has_demotion)
		ASSERT_EQ(0, tier_write_str(DEMOTION_ENABLED, "0"));
	ASSERT_EQ(0, daemon_pause());
	/* Less page cache and slab for kswapd to free under the filler */
	tier_write_str(DROP_CACHES, "3");

	fill.pid = fork();
	ASSERT_GE(fill.pid, 0);
	if (!fill.pid)
		node_filler(self->top, me);
	start = tier_now();
	fill.quiet_since = start;
	filled = tier_wait(NULL, 0, node_filled, &fill, FILL_TIMEOUT_MS);
	TH_LOG("node %d after %.1f s of filling: %lu free pages, %lu of them room",
	       self->top, tier_now() - start, fill.marks.free,
	       fill.marks.room);
	TH_LOG("its watermarks: min %lu, low %lu, high %lu pages",
	       fill.marks.min, fill.marks.low, fill.marks.high);
	if (fill.exited)
		SKIP(return, "cannot fill node %d: the filler %s", self->top,
		     filler_end(fill.status));
	if (!filled) {
		stop_filler(fill.pid);
		SKIP(return, "node %d keeps room after %d s of filling",
		     self->top, FILL_TIMEOUT_MS / 1000);
	}

	ASSERT_EQ(0, tier_alloc_on_node(&hot, FULL_HOT_SIZE, self->slow,
					false));
	watch.node = self->top;
	watch.filler = fill.pid;
	backoff.watch = &watch;
	backoff.min = full_start + 1;
	backoff.last = full_start;
	ASSERT_EQ(0, daemon_resume(&hot, 1));

	/* The first window starts once the primed hot set is offered */
	start = tier_now();
	EXPECT_TRUE(tier_wait(&hot, 1, backoff_started, &backoff,
			      FULL_START_TIMEOUT_MS));
	TH_LOG("%s +%lu after %.1f s", NODE_FULL_STAT,
	       backoff.last - full_start, tier_now() - start);
	ASSERT_FALSE(watch.filler_gone);
	ASSERT_GE(backoff.last, backoff.min);

	/* Keep it hot while kmmscand backs off */
	ASSERT_EQ(0, tier_vmstat(NODE_FULL_STAT, &full_start));
	ASSERT_EQ(0, stats_read(&before));
	watch.migrated = before.v[MIGRATED];
	watch.promotions = 0;
	end = tier_now() + FULL_OBSERVE_MS / 1000.0;
	next = 0;
	while (tier_now() < end) {
		tier_touch(&hot, 1);
		if (tier_now() < next)
			continue;
		full_watch_sample(&watch);
		next = tier_now() + FULL_SAMPLE_MS / 1000.0;
	}
	ASSERT_EQ(0, tier_vmstat(NODE_FULL_STAT, &full_end));
	ASSERT_EQ(0, stats_read(&after));
	ASSERT_EQ(0, tier_vmstat(NO_ROOM_STAT, &room_end));
	stats_log(_metadata, &before, &after);
	pte = stat_delta(&before, &after, PTE_SCANNED);
	pte_max = FULL_OBSERVE_MS / FAST_PERIOD_MIN_MS * FULL_SCAN_MB * MIB /
		  sysconf(_SC_PAGESIZE) / FULL_PTE_SHARE;
	windows_max = FULL_WINDOWS_MAX +
		      FULL_RESET_WINDOWS * watch.promotions;
	TH_LOG("in %d s: %s +%lu (limit %lu, %u promotions seen)",
	       FULL_OBSERVE_MS / 1000, NODE_FULL_STAT, full_end - full_start,
	       windows_max, watch.promotions);
	TH_LOG("kmmscand_pte_scanned +%lu (limit %lu), %s +%lu since the start",
	       pte, pte_max, NO_ROOM_STAT, room_end - room_start);
	TH_LOG("node %d: lowest %lu free pages, min watermarks %lu; %ld hot pages there",
	       self->top, watch.at_worst.free, watch.at_worst.min,
	       tier_pages_on_node(&hot, self->top));
	/* Otherwise the node may have had room meanwhile */
	ASSERT_FALSE(watch.filler_gone);
	/* Windows end, kmmscand retries, the node is still full */
	EXPECT_LE(1, full_end - full_start);
	EXPECT_GE(windows_max, full_end - full_start);
	EXPECT_GT(pte_max, pte);
	EXPECT_LT(room_start, room_end);
	EXPECT_LE(0, watch.worst);

	/* Room again: the back-off ends and the hot set moves */
	stop_filler(fill.pid);
	ASSERT_TRUE(wait_promoted(_metadata, &hot, self->top,
				  PROMOTE_PERCENT, &hot, 1));
}

/*
 * The other process of shared_subrange_policy: bind the @nr regions of
 * @regions, which it shares with the test, to @node, say on @fd whether it
 * could, and wait.
 */
static void policy_binder(const struct tier_region *regions, int nr,
			  int node, int fd, pid_t parent)
{
	unsigned long mask = 1UL << node;
	char ok = 1;
	int i;

	if (prctl(PR_SET_PDEATHSIG, SIGKILL) || getppid() != parent)
		_exit(1);
	for (i = 0; i < nr; i++)
		ok &= !mbind(regions[i].addr, regions[i].size, MPOL_BIND,
			     &mask, TIER_MAX_NODES + 1, 0);
	if (write(fd, &ok, 1) != 1)
		_exit(1);
	for (;;)
		pause();
}

/* The mode of the memory policy at @addr, as this process sees it. */
static int policy_at(void *addr)
{
	int mode;

	if (get_mempolicy(&mode, NULL, 0, addr, MPOL_F_ADDR))
		return -errno;
	return mode;
}

/*
 * Conditions for tier_wait() on the shared mappings: the halves bound to
 * the slow node stay there (else they stop at once, to fail), while the
 * other halves move, then for a while after.
 */
struct split_cond {
	struct tier_share free[SHARED_MAPS];
	struct tier_region bound[SHARED_MAPS];
	int slow;
	unsigned long escaped;
	unsigned long scans;
	double until;
};

static bool bound_halves_stay(struct split_cond *split)
{
	unsigned long nr, off = 0;
	long on_slow;
	int i;

	for (i = 0; i < SHARED_MAPS; i++) {
		nr = tier_nr_pages(&split->bound[i]);
		on_slow = tier_pages_on_node(&split->bound[i], split->slow);
		off += on_slow < 0 ? nr : nr - on_slow;
	}
	if (off > split->escaped)
		split->escaped = off;
	return !off;
}

static bool free_halves_moved(void *arg)
{
	struct split_cond *split = arg;
	int i;

	if (!bound_halves_stay(split))
		return true;
	for (i = 0; i < SHARED_MAPS; i++) {
		if (!tier_share_reached(&split->free[i]))
			return false;
	}
	return true;
}

static bool bound_halves_watched(void *arg)
{
	struct split_cond *split = arg;
	unsigned long scans;

	if (!bound_halves_stay(split))
		return true;
	if (tier_vmstat(stat_name[MM_SCANS], &scans))
		return false;
	return scans >= split->scans && tier_now() >= split->until;
}

/*
 * Map SHARED_SIZE bytes of shared anonymous memory and place them on
 * @node, in base pages: a policy may cover any range of pages of it.
 */
static int alloc_shared(struct tier_region *region, int node)
{
	int ret;

	region->size = SHARED_SIZE;
	region->addr = mmap(NULL, region->size, PROT_READ | PROT_WRITE,
			    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (region->addr == MAP_FAILED) {
		region->addr = NULL;
		return -errno;
	}
	if (madvise(region->addr, region->size, MADV_NOHUGEPAGE) &&
	    errno != EINVAL) {
		ret = -errno;
		tier_free(region);
		return ret;
	}
	return tier_place_on_node(region, node);
}

TEST_F_TIMEOUT(kmmscand, shared_subrange_policy, PROMOTE_TEST_TIMEOUT_S)
{
	struct tier_region maps[SHARED_MAPS], half[2];
	bool moved, watched = false;
	struct split_cond split;
	pid_t me = getpid(), pid;
	long period_max;
	int ready[2], i;
	char ok = 0;

	ASSERT_EQ(0, self->setup_err);
	ASSERT_EQ(0, daemon_pause());
	split.slow = self->slow;
	split.escaped = 0;
	for (i = 0; i < SHARED_MAPS; i++) {
		ASSERT_EQ(0, alloc_shared(&maps[i], self->slow));
		ASSERT_TRUE(all_on_node(&maps[i], self->slow));
		half[0].addr = maps[i].addr;
		half[0].size = maps[i].size / 2;
		half[1].addr = maps[i].addr + half[0].size;
		half[1].size = maps[i].size - half[0].size;
		/* Bind the second half of the first, the first of the next */
		split.bound[i] = half[!(i & 1)];
		tier_share_init(&split.free[i], &half[i & 1], self->top,
				PROMOTE_PERCENT);
	}

	ASSERT_EQ(0, pipe(ready));
	pid = fork();
	ASSERT_GE(pid, 0);
	if (!pid)
		policy_binder(split.bound, SHARED_MAPS, self->slow, ready[1],
			      me);
	ASSERT_EQ(1, read(ready[0], &ok, 1));
	ASSERT_TRUE(ok) {
		TH_LOG("the other process could not bind the halves");
	}
	/* The policy is the mapping's: seen here, where it was bound only */
	for (i = 0; i < SHARED_MAPS; i++) {
		struct tier_region *bound = &split.bound[i];

		ASSERT_EQ(MPOL_BIND, policy_at(bound->addr));
		ASSERT_EQ(MPOL_BIND, policy_at(bound->addr + bound->size - 1));
		ASSERT_EQ(MPOL_DEFAULT, policy_at(split.free[i].region.addr));
	}
	ASSERT_EQ(0, knob_read_long(SCAN_PERIOD_MAX_MS, &period_max));
	ASSERT_EQ(0, daemon_resume(maps, SHARED_MAPS));

	/* The whole of both is hot; only the halves left free may move */
	moved = tier_wait(maps, SHARED_MAPS, free_halves_moved, &split,
			  PROMOTE_TIMEOUT_MS);
	for (i = 0; i < SHARED_MAPS; i++)
		TH_LOG("mapping %d: %lu of %lu pages of its free half on node %d",
		       i, split.free[i].last_pages,
		       tier_nr_pages(&split.free[i].region), self->top);
	/* A few more scans, and then a few of the longest periods */
	if (moved && !split.escaped &&
	    !tier_vmstat(stat_name[MM_SCANS], &split.scans)) {
		split.scans += SETTLE_SCANS;
		split.until = tier_now() +
			      SHARED_WATCH_PERIODS * period_max / 1000.0;
		watched = tier_wait(maps, SHARED_MAPS, bound_halves_watched,
				    &split, SETTLE_TIMEOUT_MS);
	}
	TH_LOG("at most %lu of %lu bound pages off node %d", split.escaped,
	       SHARED_MAPS * tier_nr_pages(&split.bound[0]), self->slow);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	close(ready[0]);
	close(ready[1]);

	ASSERT_EQ(0, split.escaped);
	ASSERT_TRUE(moved);
	ASSERT_TRUE(watched);
}

/*
 * A task that spins until killed, or until the test process goes, so that
 * every CPU has more than one task to run and the kmmscand thread shares
 * its CPU: only then does it hand the copying to the process.
 */
static pid_t spin_child(void)
{
	pid_t pid = fork();

	if (pid)
		return pid;
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	for (;;)
		tier_barrier();
}

/* The promotions kmmscand traces, see thread_does_the_work */
#define TRACEFS			"/sys/kernel/tracing"
#define MIGRATE_EVENT		TRACEFS "/events/kmmscand/kmmscand_migrate/enable"

/* A thread that blocks in read() of a pipe until the test writes to it */
struct blocked_reader {
	int pipe[2];
	pid_t tid;
};

static void *blocked_read(void *arg)
{
	struct blocked_reader *r = arg;
	char c;

	__atomic_store_n(&r->tid, (pid_t)syscall(SYS_gettid), __ATOMIC_RELEASE);
	return (void *)(long)read(r->pipe[0], &c, 1);
}

/* The context switches of thread @tid of the test so far, or -1 */
static long thread_switches(pid_t tid)
{
	char path[64], line[128];
	long n, total = 0;
	int found = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/task/%d/status", tid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "voluntary_ctxt_switches: %ld", &n) == 1 ||
		    sscanf(line, "nonvoluntary_ctxt_switches: %ld", &n) == 1) {
			total += n;
			found++;
		}
	}
	fclose(f);
	return found == 2 ? total : -1;
}

/* Condition for tier_wait(): the thread of struct blocked_reader sleeps */
static bool reader_sleeps(void *arg)
{
	struct blocked_reader *r = arg;
	char path[64], buf[256], *state;
	pid_t tid = __atomic_load_n(&r->tid, __ATOMIC_ACQUIRE);

	if (!tid)
		return false;
	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", tid);
	if (tier_read_str(path, buf, sizeof(buf)))
		return false;
	/* The state follows the command, which is in parentheses */
	state = strrchr(buf, ')');
	return state && state[1] == ' ' && state[2] == 'S';
}

/*
 * Count the kmmscand_migrate events in the trace, in @all, and those that
 * a thread of the test (@pid, @tid) emitted, in @ours.
 */
static int count_migrate_events(pid_t pid, pid_t tid, long *all, long *ours)
{
	char line[512], *bracket, *dash;
	long who;
	FILE *f;

	*all = 0;
	*ours = 0;
	f = fopen(TRACEFS "/trace", "r");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		if (line[0] == '#' || !strstr(line, "kmmscand_migrate:"))
			continue;
		/* "  comm-pid  [cpu] ...": the pid ends before the CPU */
		bracket = strstr(line, " [");
		if (!bracket)
			continue;
		*bracket = '\0';
		dash = strrchr(line, '-');
		if (!dash)
			continue;
		who = strtol(dash + 1, NULL, 10);
		(*all)++;
		if (who == pid || who == tid)
			(*ours)++;
	}
	fclose(f);
	return 0;
}

TEST_F_TIMEOUT(kmmscand, thread_does_the_work, 2 * PROMOTE_TEST_TIMEOUT_S)
{
	long i, nr_spin = sysconf(_SC_NPROCESSORS_ONLN);
	long switches, switches_after, all, ours;
	struct blocked_reader reader = {};
	struct tier_region hot;
	pthread_t thread;
	pid_t *spinner;
	void *ret;

	ASSERT_EQ(0, self->setup_err);
	/* tracefs is not always mounted where it lives */
	if (access(TRACEFS "/events", F_OK))
		mount("tracefs", TRACEFS, "tracefs", 0, NULL);
	if (access(MIGRATE_EVENT, W_OK))
		SKIP(return, "no %s: kernel without tracing", MIGRATE_EVENT);

	/*
	 * A spinner on every CPU: the CPUs are crowded, which is where the
	 * work was once handed to the processes' own threads.
	 */
	spinner = calloc(nr_spin, sizeof(*spinner));
	ASSERT_NE(NULL, spinner);
	for (i = 0; i < nr_spin; i++) {
		spinner[i] = spin_child();
		ASSERT_GT(spinner[i], 0);
	}
	ASSERT_EQ(0, pipe(reader.pipe));
	ASSERT_EQ(0, pthread_create(&thread, NULL, blocked_read, &reader));
	ASSERT_TRUE(tier_wait(NULL, 0, reader_sleeps, &reader,
			      WAIT_DEADLINE_MS));
	switches = thread_switches(reader.tid);
	ASSERT_GE(switches, 0);

	ASSERT_EQ(0, daemon_pause());
	ASSERT_EQ(0, tier_write_str(TRACEFS "/trace", ""));
	ASSERT_EQ(0, tier_write_str(MIGRATE_EVENT, "1"));
	ASSERT_EQ(0, tier_alloc_on_node(&hot, HOT_SIZE, self->slow, false));
	ASSERT_EQ(0, daemon_resume(&hot, 1));
	EXPECT_TRUE(wait_promoted(_metadata, &hot, self->top,
				  PROMOTE_PERCENT, &hot, 1));
	tier_write_str(MIGRATE_EVENT, "0");
	switches_after = thread_switches(reader.tid);
	ASSERT_EQ(0, count_migrate_events(getpid(), reader.tid, &all, &ours));
	TH_LOG("%ld promotions traced, %ld of them from the test's threads; "
	       "the blocked thread switched %ld times meanwhile", all, ours,
	       switches_after - switches);

	ASSERT_EQ(1, write(reader.pipe[1], "x", 1));
	ASSERT_EQ(0, pthread_join(thread, &ret));
	tier_free(&hot);
	for (i = 0; i < nr_spin; i++) {
		kill(spinner[i], SIGKILL);
		waitpid(spinner[i], NULL, 0);
	}
	free(spinner);

	EXPECT_GT(all, 0);
	EXPECT_EQ(0, ours);
	EXPECT_EQ(switches, switches_after);
}

/* The jobs of kmmscand's migration workers, see workers_share_the_copy */
#define WQ_EVENT	TRACEFS "/events/workqueue/workqueue_execute_start/enable"

/* The jobs that kmmscand's migration workers started, in the trace */
static long count_worker_jobs(void)
{
	char line[512];
	long n = 0;
	FILE *f;

	f = fopen(TRACEFS "/trace", "r");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f))
		if (line[0] != '#' &&
		    strstr(line, "workqueue_execute_start:") &&
		    strstr(line, "kmmscand_copy_work"))
			n++;
	fclose(f);
	return n;
}

TEST_F_TIMEOUT(kmmscand, workers_share_the_copy, 2 * PROMOTE_TEST_TIMEOUT_S)
{
	const long threads[] = { 1, 2 };
	struct tier_region hot;
	long jobs[2];
	int i;

	ASSERT_EQ(0, self->setup_err);
	if (sysconf(_SC_NPROCESSORS_ONLN) < 2)
		SKIP(return, "one CPU online: the thread copies alone");
	if (access(TRACEFS "/events", F_OK))
		mount("tracefs", TRACEFS, "tracefs", 0, NULL);
	if (access(WQ_EVENT, W_OK))
		SKIP(return, "no %s: kernel without tracing", WQ_EVENT);

	for (i = 0; i < 2; i++) {
		ASSERT_EQ(0, daemon_pause());
		ASSERT_EQ(0, knob_write_long(MIGRATE_THREADS, threads[i]));
		ASSERT_EQ(0, tier_write_str(TRACEFS "/trace", ""));
		ASSERT_EQ(0, tier_write_str(WQ_EVENT, "1"));
		ASSERT_EQ(0, tier_alloc_on_node(&hot, HOT_SIZE, self->slow,
						false));
		ASSERT_EQ(0, daemon_resume(&hot, 1));
		EXPECT_TRUE(wait_promoted(_metadata, &hot, self->top,
					  PROMOTE_PERCENT, &hot, 1));
		tier_write_str(WQ_EVENT, "0");
		jobs[i] = count_worker_jobs();
		tier_free(&hot);
		ASSERT_GE(jobs[i], 0);
		TH_LOG("migrate_threads=%ld: %ld batches migrated by workers",
		       threads[i], jobs[i]);
	}
	EXPECT_EQ(0, jobs[0]);
	EXPECT_GT(jobs[1], 0);
}

/*
 * many_processes_promoted: many small processes at once. MANY_CHILDREN
 * processes, each with a hot set of MANY_HOT_SIZE placed on the slow node:
 * 256 MiB in all, which either node of a two-tier machine with a few GiB a
 * node holds with room to spare.
 */
#define MANY_CHILDREN		128
#define MANY_HOT_SIZE		(2 * MIB)
/*
 * Each child reads its hot set every MANY_TOUCH_MS and sleeps in between:
 * twice per shortest scan period of the fast knobs, so that every scan
 * finds each page of it accessed.  Busy loops would leave the thread, one
 * task at nice 0 among MANY_CHILDREN + 1 on a small machine, a few percent
 * of the CPU time: the test would measure the CPU scheduler, not how
 * kmmscand shares its work among many mms.
 */
#define MANY_TOUCH_MS		(FAST_PERIOD_MIN_MS / 2)
/*
 * Each child counts where its hot set is every MANY_CHECK_MS: a count is
 * a move_pages() lookup per page, and MANY_CHILDREN of them every
 * TIER_POLL_MS would take CPU time from the thread.
 */
#define MANY_CHECK_MS		1000
/* Placing the hot sets: 64 Ki page faults, on the slowest machine. */
#define MANY_PLACE_TIMEOUT_MS	(120 * 1000)
/*
 * The knobs the deadline below is computed from, pinned to their
 * defaults: pages_to_scan, 256 MiB of address space per pass; a pass
 * reaches every due mm (mms_to_scan above MANY_CHILDREN); and the sleep
 * between two passes, scan_sleep_ms.  scan_delay_ms is pinned to 0, so
 * that every child is due as soon as the daemon resumes.
 */
#define MANY_PAGES_TO_SCAN	65536
#define MANY_MMS_TO_SCAN	4096
#define MANY_SLEEP_MS		20
/*
 * The time for every hot set to reach PROMOTE_PERCENT, from the moment the
 * daemon resumes, all children placed and due:
 *
 * - MANY_SCANS scans of each child: the first only primes its hot set,
 *   the second promotes it; two more for a scan put off (its mmap_lock
 *   busy) or a promotion cut short.  Scans of one mm are at most the
 *   longest period of the fast knobs, FAST_PERIOD_MAX_MS, apart.
 * - In each such round the thread walks the address space of every
 *   child, in passes of MANY_PAGES_TO_SCAN pages, each followed by a
 *   sleep of MANY_SLEEP_MS.
 * - The CPU time of the thread, which no knob bounds: MANY_PAGE_COST_US
 *   per hot page, for reading its PTE at each of the MANY_SCANS scans and
 *   migrating it once.  Hardware does that in some microseconds; QEMU's
 *   TCG is about ten times slower, and the debug kernel (KASAN, lockdep,
 *   DEBUG_VM) several times more, on two CPUs shared with the children.
 * - The promotion rate limit, kernel.numa_balancing_rate_limit_mbps
 *   (read when the test runs; its default does not hold anything back):
 *   every hot set at that rate.
 * - MANY_CHECK_MS, for a child to see its hot set arrive.
 *
 * That time is the stall window of the wait: the test fails if a whole
 * window passes without a hot page reaching the top node before every hot
 * set is there, as when the processes not served yet are left behind.  It
 * is not a deadline for all of them: the CPU time left to the thread is
 * the part of the model that a machine can make longer, and on an
 * emulated one the wakeups of the children alone keep both CPUs busy,
 * which leaves the thread, and the children migrating their own batches,
 * a share of a CPU that falls as 1/MANY_CHILDREN.
 *
 * MANY_WAIT_MAX_MS is the most the test waits: what MANY_TEST_TIMEOUT_S
 * leaves after MANY_PLACE_TIMEOUT_MS, less a minute to reap the children.
 * A rate limit that needs a longer window makes it skip.
 */
#define MANY_SCANS		4
#define MANY_PAGE_COST_US	1000
#define MANY_WAIT_MAX_MS	(420 * 1000)
#define RATE_LIMIT_SYSCTL \
	"/proc/sys/kernel/numa_balancing_rate_limit_mbps"
/* Placing, the wait, reaping, with a margin. */
#define MANY_TEST_TIMEOUT_S	600

/* Whether @node has @bytes free above its watermarks and reserves. */
static bool node_has_room(int node, size_t bytes)
{
	struct tier_node_marks marks;

	if (tier_node_marks(node, &marks))
		return false;
	return marks.room * sysconf(_SC_PAGESIZE) >= bytes;
}

/* Pages of address space of this process, as /proc/self/statm counts them. */
static long vm_pages(void)
{
	long size = -1;
	FILE *fp;

	fp = fopen("/proc/self/statm", "r");
	if (!fp)
		return -1;
	if (fscanf(fp, "%ld", &size) != 1)
		size = -1;
	fclose(fp);
	return size;
}

/* Kill those of the @nr children in @pids not reaped yet, and reap them. */
static void kill_children(pid_t *pids, int nr)
{
	int i;

	for (i = 0; i < nr; i++) {
		if (pids[i] > 0)
			kill(pids[i], SIGKILL);
	}
	for (i = 0; i < nr; i++) {
		if (pids[i] > 0)
			waitpid(pids[i], NULL, 0);
		pids[i] = 0;
	}
}

/* Where a child of many_processes_promoted is, in this order. */
enum many_state {
	MANY_PLACING,		/* placing its hot set on the slow node */
	MANY_READY,		/* placed; using it, waiting for the start */
	MANY_REACHED,		/* PROMOTE_PERCENT of it on the top node */
	MANY_FAILED,		/* could not place it */
};

/* What a child tells the test. */
struct many_report {
	int state;
	long pages;		/* hot pages on the top node, last counted */
	double reached;		/* from the start to the count that saw them */
};

/* Shared between the test and its children. */
struct many_board {
	int started;		/* set once the daemon has resumed */
	double start;		/* when, on tier_now()'s clock */
	struct many_report child[MANY_CHILDREN];
};

/*
 * A child of many_processes_promoted, number @idx: place a hot set on
 * node @slow, use it, count how much of it is on node @top from the start
 * on, and say on @board when PROMOTE_PERCENT is; use it until killed. It
 * dies with @parent, the test, however the test ends.
 */
static void many_child(struct many_board *board, int idx, int slow, int top,
		       pid_t parent)
{
	struct many_report *me = &board->child[idx];
	struct tier_region hot;
	struct tier_share share;
	double next = 0, now;

	if (prctl(PR_SET_PDEATHSIG, SIGKILL) || getppid() != parent)
		_exit(CHILD_ALLOC_FAILED);
	if (tier_alloc_on_node(&hot, MANY_HOT_SIZE, slow, false) ||
	    !all_on_node(&hot, slow)) {
		__atomic_store_n(&me->state, MANY_FAILED, __ATOMIC_RELEASE);
		_exit(CHILD_ALLOC_FAILED);
	}
	tier_share_init(&share, &hot, top, PROMOTE_PERCENT);
	__atomic_store_n(&me->state, MANY_READY, __ATOMIC_RELEASE);
	for (;;) {
		tier_touch(&hot, 1);
		now = tier_now();
		if (__atomic_load_n(&board->started, __ATOMIC_ACQUIRE) &&
		    me->state == MANY_READY && now >= next) {
			if (tier_share_reached(&share)) {
				me->reached = now - board->start;
				__atomic_store_n(&me->state, MANY_REACHED,
						 __ATOMIC_RELEASE);
			}
			me->pages = share.last_pages;
			next = now + MANY_CHECK_MS / 1000.0;
		}
		usleep(MANY_TOUCH_MS * 1000);
	}
}

/*
 * Condition for tier_wait(): every child is in state @want or past it.
 * A child that could not place its hot set, or that died, ends the wait;
 * so does, with @stall_ms set, a stall: @stall_ms without a hot page more
 * on the top node, the children's counts (@pages) taken together.
 */
struct many_cond {
	struct many_board *board;
	pid_t *pids;
	int nr;
	enum many_state want;
	int count;
	int failed;
	int died;
	unsigned long stall_ms;
	long pages;
	double moved_at;
	bool stalled;
};

static bool many_counted(void *arg)
{
	unsigned long nr_pages = MANY_HOT_SIZE / sysconf(_SC_PAGESIZE);
	struct many_cond *cond = arg;
	const struct many_report *r;
	int i, state, status;
	long pages = 0;

	cond->count = 0;
	cond->failed = 0;
	for (i = 0; i < cond->nr; i++) {
		r = &cond->board->child[i];
		state = __atomic_load_n(&r->state, __ATOMIC_ACQUIRE);
		if (state == MANY_FAILED)
			cond->failed++;
		else if (state >= cond->want)
			cond->count++;
		pages += state == MANY_REACHED ? nr_pages : r->pages;
		if (cond->pids[i] > 0 &&
		    waitpid(cond->pids[i], &status, WNOHANG) == cond->pids[i]) {
			cond->pids[i] = 0;
			cond->died++;
		}
	}
	if (pages > cond->pages) {
		cond->pages = pages;
		cond->moved_at = tier_now();
	} else if (cond->stall_ms &&
		   tier_now() - cond->moved_at >= cond->stall_ms / 1000.0) {
		cond->stalled = true;
	}
	return cond->count == cond->nr || cond->failed || cond->died ||
	       cond->stalled;
}

/*
 * The stall window of many_processes_promoted in ms, see MANY_SCANS; 0 if
 * the rate limit promotes nothing or cannot be read as a number.
 */
static unsigned long many_window_ms(void)
{
	unsigned long psz = sysconf(_SC_PAGESIZE);
	unsigned long hot_pages = MANY_CHILDREN * (MANY_HOT_SIZE / psz);
	unsigned long child_pages, passes, ms;
	long vm = vm_pages(), mbps = LONG_MAX;

	if (vm < 0)
		return 0;
	/* Without the sysctl nothing limits the rate */
	if (!access(RATE_LIMIT_SYSCTL, F_OK) &&
	    (tier_read_long(RATE_LIMIT_SYSCTL, &mbps) || mbps <= 0))
		return 0;
	/* A child maps what the test does, and its hot set */
	child_pages = vm + MANY_HOT_SIZE / psz;
	passes = MANY_CHILDREN * child_pages / MANY_PAGES_TO_SCAN + 1;
	ms = MANY_SCANS * (FAST_PERIOD_MAX_MS + passes * MANY_SLEEP_MS);
	ms += hot_pages * MANY_PAGE_COST_US / 1000;
	ms += MANY_CHILDREN * MANY_HOT_SIZE / MIB * 1000 / mbps;
	return ms + MANY_CHECK_MS;
}

/* Log how far the children got: how many, the slowest, the stragglers. */
static void many_log(struct __test_metadata *_metadata,
		     const struct many_board *board, int nr, int top)
{
	unsigned long nr_pages = MANY_HOT_SIZE / sysconf(_SC_PAGESIZE);
	int i, reached = 0, slowest = -1, shown = 0;
	const struct many_report *r;

	for (i = 0; i < nr; i++) {
		r = &board->child[i];
		if (r->state == MANY_REACHED) {
			reached++;
			if (slowest < 0 ||
			    r->reached > board->child[slowest].reached)
				slowest = i;
		} else if (shown++ < MANY_CHILDREN / 16) {
			TH_LOG("child %d: %ld of %lu pages on node %d", i,
			       r->pages, nr_pages, top);
		}
	}
	TH_LOG("%d of %d hot sets at %d%% on node %d", reached, nr,
	       PROMOTE_PERCENT, top);
	if (slowest >= 0)
		TH_LOG("the slowest, child %d, after %.1f s", slowest,
		       board->child[slowest].reached);
}

TEST_F_TIMEOUT(kmmscand, many_processes_promoted, MANY_TEST_TIMEOUT_S)
{
	struct many_cond cond = { .nr = 0 };
	pid_t pids[MANY_CHILDREN], me = getpid();
	unsigned long total = MANY_CHILDREN * MANY_HOT_SIZE;
	bool placed = false, resumed = false, promoted = false;
	struct stats before, after;
	struct many_board *board;
	unsigned long window;
	int i;

	ASSERT_EQ(0, self->setup_err);
	if (!node_has_room(self->slow, total))
		SKIP(return, "node %d has no room for %lu MiB of hot sets",
		     self->slow, total / MIB);
	if (!node_has_room(self->top, total))
		SKIP(return, "node %d has no room for %lu MiB to promote",
		     self->top, total / MIB);
	ASSERT_EQ(0, knob_write_long(PAGES_TO_SCAN, MANY_PAGES_TO_SCAN));
	ASSERT_EQ(0, knob_write_long(MMS_TO_SCAN, MANY_MMS_TO_SCAN));
	ASSERT_EQ(0, knob_write_long(SCAN_SLEEP_MS, MANY_SLEEP_MS));
	ASSERT_EQ(0, knob_write_long(SCAN_DELAY_MS, 0));
	window = many_window_ms();
	if (!window || window > MANY_WAIT_MAX_MS)
		SKIP(return, "the promotion rate limit (%s) allows no promotion within %d s",
		     RATE_LIMIT_SYSCTL, MANY_WAIT_MAX_MS / 1000);
	TH_LOG("stall window %lu ms", window);

	board = mmap(NULL, sizeof(*board), PROT_READ | PROT_WRITE,
		     MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, board);
	ASSERT_EQ(0, daemon_pause());
	cond.board = board;
	cond.pids = pids;
	for (i = 0; i < MANY_CHILDREN; i++) {
		pids[i] = fork();
		if (pids[i] < 0)
			break;
		if (!pids[i])
			many_child(board, i, self->slow, self->top, me);
		cond.nr++;
	}

	/* From here on, every path reaps the children before it returns */
	if (cond.nr == MANY_CHILDREN) {
		cond.want = MANY_READY;
		placed = tier_wait(NULL, 0, many_counted, &cond,
				   MANY_PLACE_TIMEOUT_MS) &&
			 cond.count == cond.nr;
	}
	if (placed && !stats_read(&before)) {
		board->start = tier_now();
		__atomic_store_n(&board->started, 1, __ATOMIC_RELEASE);
		resumed = !daemon_resume(NULL, 0);
	}
	if (resumed) {
		cond.want = MANY_REACHED;
		cond.stall_ms = window;
		cond.moved_at = board->start;
		promoted = tier_wait(NULL, 0, many_counted, &cond,
				     MANY_WAIT_MAX_MS) &&
			   cond.count == cond.nr;
		TH_LOG("after %.1f s", tier_now() - board->start);
		many_log(_metadata, board, cond.nr, self->top);
		if (!stats_read(&after))
			stats_log(_metadata, &before, &after);
	}
	kill_children(pids, cond.nr);
	munmap(board, sizeof(*board));

	ASSERT_EQ(MANY_CHILDREN, cond.nr) {
		TH_LOG("only %d children could be forked", cond.nr);
	}
	if (cond.failed)
		SKIP(return, "%d children could not place their hot sets on node %d",
		     cond.failed, self->slow);
	ASSERT_EQ(0, cond.died) {
		TH_LOG("%d children died", cond.died);
	}
	ASSERT_TRUE(placed) {
		TH_LOG("%d of %d hot sets placed within %d s", cond.count,
		       cond.nr, MANY_PLACE_TIMEOUT_MS / 1000);
	}
	ASSERT_TRUE(resumed);
	ASSERT_TRUE(promoted) {
		if (cond.stalled)
			TH_LOG("no hot page reached node %d in %lu ms",
			       self->top, window);
		else
			TH_LOG("not every hot set reached %d%% within %d s",
			       PROMOTE_PERCENT, MANY_WAIT_MAX_MS / 1000);
	}
}

/*
 * idle_mm_beside_hot: a large mm that was populated and then sleeps, beside
 * the test's small hot set, both on the slow node. The large mm's first
 * scan reads every PTE of it: a first visit to a region primes it, and an
 * mm that ran since its slot was made is not passed over as idle. 1 GiB
 * of it and the hot set fit the slow node of a machine with a few GiB a
 * node.
 */
#define IDLE_BIG_SIZE		(1024 * MIB)
#define IDLE_HOT_SIZE		(8 * MIB)
/*
 * The pass budget, pages_to_scan, pinned to IDLE_PASS_SIZE of address
 * space: the first scan of the large mm then takes IDLE_BIG_SIZE /
 * IDLE_PASS_SIZE = 256 passes or more, a scan of the test's mm, its hot
 * set and a few MiB more, a few.  The scan size is pinned to IDLE_SCAN_MB,
 * more than the large mm maps, so that its first scan is all of it: later
 * ones are passed over, since it sleeps.
 */
#define IDLE_PASS_SIZE		(4 * MIB)
#define IDLE_SCAN_MB		(2 * IDLE_BIG_SIZE / MIB)
/*
 * The sleep between two passes, scan_sleep_ms, pinned to IDLE_SLEEP_MS:
 * what the hot set waits for that is time rather than passes (the period
 * after its priming scan, its migration, the test's count of it every
 * TIER_POLL_MS) then costs few passes, in which the large mm, due all the
 * while, is read on.
 */
#define IDLE_SLEEP_MS		100
/*
 * The hot set needs a scan that primes it and one that promotes it, a
 * period apart.  With the pass budget shared among the due mms, the large
 * mm has been read for a small part by then; had it been read to its end
 * first, the hot set would wait for all of its PTEs.  So when the hot set
 * has arrived, within PROMOTE_TIMEOUT_MS, kmmscand_pte_scanned must have
 * grown by fewer than the large mm's PTEs, with every scan of every mm
 * counted.  And the large mm's first scan must then end, its PTEs read,
 * for that order to mean anything: within IDLE_WALK_MARGIN times the
 * sleeps of the passes it takes.
 */
#define IDLE_WALK_MARGIN	4
/* Placing 1 GiB, both waits, with a margin. */
#define IDLE_TEST_TIMEOUT_S	420

/*
 * The large mm of idle_mm_beside_hot: place @size bytes on @node, say on
 * @fd whether it could, and sleep. It dies with @parent, the test, however
 * the test ends.
 */
static void idle_child(int node, size_t size, int fd, pid_t parent)
{
	struct tier_region region;
	char ok;

	if (prctl(PR_SET_PDEATHSIG, SIGKILL) || getppid() != parent)
		_exit(CHILD_ALLOC_FAILED);
	ok = !tier_alloc_on_node(&region, size, node, false);
	if (write(fd, &ok, 1) != 1 || !ok)
		_exit(CHILD_ALLOC_FAILED);
	for (;;)
		pause();
}

TEST_F_TIMEOUT(kmmscand, idle_mm_beside_hot, IDLE_TEST_TIMEOUT_S)
{
	unsigned long psz = sysconf(_SC_PAGESIZE);
	unsigned long big_pages = IDLE_BIG_SIZE / psz, walk_ms;
	/* Unless read, as many PTEs as fail the test */
	unsigned long pte = ULONG_MAX;
	struct tier_counter walked = { .name = stat_name[PTE_SCANNED] };
	bool placed = false, resumed = false, promoted = false;
	bool ended = false;
	struct stats before, at_hot;
	struct tier_region hot = { 0 };
	struct tier_share share;
	pid_t me = getpid(), pid;
	double start = 0;
	int fds[2];
	char ok = 0;

	ASSERT_EQ(0, self->setup_err);
	if (!node_has_room(self->slow, IDLE_BIG_SIZE + IDLE_HOT_SIZE))
		SKIP(return, "node %d has no room for %lu MiB", self->slow,
		     (IDLE_BIG_SIZE + IDLE_HOT_SIZE) / MIB);
	if (!node_has_room(self->top, IDLE_HOT_SIZE))
		SKIP(return, "node %d has no room for %lu MiB to promote",
		     self->top, IDLE_HOT_SIZE / MIB);
	ASSERT_EQ(0, knob_write_long(PAGES_TO_SCAN, IDLE_PASS_SIZE / psz));
	ASSERT_EQ(0, knob_write_long(SCAN_SLEEP_MS, IDLE_SLEEP_MS));
	ASSERT_EQ(0, pin_scan_size(IDLE_SCAN_MB));
	walk_ms = IDLE_BIG_SIZE / IDLE_PASS_SIZE * IDLE_SLEEP_MS *
		  IDLE_WALK_MARGIN;
	/* Both mms due as soon as the daemon resumes */
	ASSERT_EQ(0, knob_write_long(SCAN_DELAY_MS, 0));
	ASSERT_EQ(0, daemon_pause());
	ASSERT_EQ(0, pipe(fds));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		close(fds[0]);
		idle_child(self->slow, IDLE_BIG_SIZE, fds[1], me);
	}

	/* From here on, every path reaps the child before it returns */
	close(fds[1]);
	placed = read(fds[0], &ok, 1) == 1 && ok &&
		 !tier_alloc_on_node(&hot, IDLE_HOT_SIZE, self->slow, false);
	close(fds[0]);
	if (placed && !stats_read(&before))
		resumed = !daemon_resume(&hot, 1);
	if (resumed) {
		start = tier_now();
		tier_share_init(&share, &hot, self->top, PROMOTE_PERCENT);
		promoted = tier_wait(&hot, 1, tier_share_reached, &share,
				     PROMOTE_TIMEOUT_MS);
		if (!stats_read(&at_hot))
			pte = stat_delta(&before, &at_hot, PTE_SCANNED);
		TH_LOG("%lu of %lu hot pages on node %d after %.1f s",
		       share.last_pages, tier_nr_pages(&hot), self->top,
		       tier_now() - start);
		TH_LOG("%lu PTEs read meanwhile; the large mm maps %lu",
		       pte, big_pages);
		walked.min = before.v[PTE_SCANNED] + big_pages;
		ended = tier_wait(NULL, 0, tier_counter_reached, &walked,
				  walk_ms);
		TH_LOG("%lu PTEs read after %.1f s", walked.last -
		       before.v[PTE_SCANNED], tier_now() - start);
	}
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	tier_free(&hot);

	if (!placed)
		SKIP(return, "could not place %lu MiB on node %d",
		     (IDLE_BIG_SIZE + IDLE_HOT_SIZE) / MIB, self->slow);
	ASSERT_TRUE(resumed);
	ASSERT_TRUE(promoted) {
		TH_LOG("the hot set did not reach %d%% within %d s",
		       PROMOTE_PERCENT, PROMOTE_TIMEOUT_MS / 1000);
	}
	ASSERT_GT(big_pages, pte) {
		TH_LOG("the hot set waited for the large mm's full read");
	}
	ASSERT_TRUE(ended) {
		TH_LOG("the large mm was not read in full: no order shown");
	}
}

/* Condition for tier_wait(): the file counts @pages promoted since @before */
struct proc_promoted_cond {
	struct proc_figures before;
	struct proc_figures now;
	unsigned long long pages;
};

static bool proc_promoted(void *arg)
{
	struct proc_promoted_cond *cond = arg;

	if (proc_figures_read(&cond->now))
		return false;
	return cond->now.promoted - cond->before.promoted >= cond->pages;
}

TEST_F_TIMEOUT(kmmscand, proc_figures, PROMOTE_TEST_TIMEOUT_S)
{
	struct proc_promoted_cond cond;
	struct stats before, after;
	struct proc_figures *b = &cond.before, *a = &cond.now;
	struct tier_region hot;
	long moved;

	ASSERT_EQ(0, self->setup_err);
	if (proc_file_missing(_metadata))
		SKIP(return, "no %s: kernel without it", PROC_KMMSCAND);
	ASSERT_EQ(0, daemon_pause());
	ASSERT_EQ(0, tier_alloc_on_node(&hot, HOT_SIZE, self->slow, false));
	/*
	 * The kernel counts globally first: read the global counters first
	 * at the start and last at the end, so that what the file counts in
	 * between is counted by them too.
	 */
	ASSERT_EQ(0, stats_read(&before));
	ASSERT_EQ(0, proc_figures_read(b));
	ASSERT_EQ(1, b->tracked);
	ASSERT_EQ(0, daemon_resume(&hot, 1));

	ASSERT_TRUE(wait_promoted(_metadata, &hot, self->top,
				  PROMOTE_PERCENT, &hot, 1));
	moved = tier_pages_on_node(&hot, self->top);
	ASSERT_GT(moved, 0);
	/* A batch is counted just after it moved */
	cond.pages = moved;
	EXPECT_TRUE(tier_wait(&hot, 1, proc_promoted, &cond,
			      TIER_VMSTAT_LAG_MS));
	ASSERT_EQ(0, stats_read(&after));
	TH_LOG("file: +%llu promoted, +%llu PTEs, +%llu accessed, +%llu ns",
	       a->promoted - b->promoted, a->pte_scanned - b->pte_scanned,
	       a->accessed - b->accessed, a->cpu_ns - b->cpu_ns);
	TH_LOG("vmstat: +%lu promoted, +%lu PTEs, +%lu accessed",
	       stat_delta(&before, &after, MIGRATED),
	       stat_delta(&before, &after, PTE_SCANNED),
	       stat_delta(&before, &after, SLOWTIER_ACCESSED));
	EXPECT_LE(a->promoted - b->promoted,
		  stat_delta(&before, &after, MIGRATED));
	EXPECT_GT(a->pte_scanned - b->pte_scanned, 0);
	EXPECT_LE(a->pte_scanned - b->pte_scanned,
		  stat_delta(&before, &after, PTE_SCANNED));
	EXPECT_GE(a->accessed - b->accessed, moved);
	EXPECT_LE(a->accessed - b->accessed,
		  stat_delta(&before, &after, SLOWTIER_ACCESSED));
	EXPECT_GT(a->cpu_ns, b->cpu_ns);
}

/*
 * hot_set_moves_on: once its hot set is on the top tier, a process that
 * goes on running is scanned at about its short period while scans find
 * nothing accessed on the slow tier, not at 8 times it (the change scale of
 * a process that went idle), so that its next hot set is found soon.
 * The period is pinned to start at MOVES_PERIOD_MIN_MS, a few of the
 * test's polls (TIER_POLL_MS), so that it is read within a few scans of the
 * end of the promotion: each quiet scan lengthens it by 15%, and fourteen
 * would take it to 8 times the floor.  MOVES_PERIOD_MAX_MS leaves room
 * above 8 times the floor, so that a lengthened period would show;
 * MOVES_QUIET_SCANS scans that found no accessed slow-tier page are
 * watched.
 */
#define MOVES_PERIOD_MIN_MS	400
#define MOVES_PERIOD_MAX_MS	5000
#define MOVES_CHANGE_SCALE	8
#define MOVES_QUIET_SCANS	3

/* Condition for tier_wait(): MOVES_QUIET_SCANS scans in a row found nothing */
struct quiet_cond {
	struct proc_figures now;
	unsigned long long quiet_from;	/* scans when accessed last grew */
	unsigned long long accessed;
	unsigned long long max_period;	/* the longest period seen */
};

static bool quiet_scans_done(void *arg)
{
	struct quiet_cond *cond = arg;

	if (proc_figures_read(&cond->now))
		return false;
	if (cond->now.accessed != cond->accessed) {
		cond->accessed = cond->now.accessed;
		cond->quiet_from = cond->now.scans;
		cond->max_period = 0;
		return false;
	}
	/* The first scan counted may have begun before accessed last grew */
	if (cond->now.scans <= cond->quiet_from + 1)
		return false;
	if (cond->now.period_ms > cond->max_period)
		cond->max_period = cond->now.period_ms;
	return cond->now.scans >= cond->quiet_from + 1 + MOVES_QUIET_SCANS;
}

/*
 * Rounds of settle() for a scan to pass over a range: a scan reads
 * scan_size_mb of what is mapped, so more than one may go by before the
 * cursor gets there, and the regions passed over cost it nothing.
 */
#define PASS_SETTLES		3
/* The PMD-sized regions kmmscand keeps a history for, and aligns to */
#define REGION_SIZE		(2 * MIB)

/*
 * Map @size bytes, a multiple of REGION_SIZE, at a REGION_SIZE-aligned
 * address in base pages, and place them on @node: the range is then
 * whole regions, none shared with a neighbouring mapping.
 */
static int alloc_regions_on_node(struct tier_region *region, size_t size,
				 int node)
{
	char *map, *start;

	map = mmap(NULL, size + REGION_SIZE, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (map == MAP_FAILED)
		return -errno;
	start = (char *)(((unsigned long)map + REGION_SIZE - 1) &
			 ~(REGION_SIZE - 1));
	if (start > map)
		munmap(map, start - map);
	munmap(start + size, map + REGION_SIZE - start);
	region->addr = start;
	region->size = size;
	/* EINVAL only means a kernel without THP, as in tier_alloc_on_node() */
	if (madvise(start, size, MADV_NOHUGEPAGE) && errno != EINVAL) {
		tier_free(region);
		return -errno;
	}
	return tier_place_on_node(region, node);
}

/*
 * Memory mapped where a mapping was unmapped is primed like memory never
 * seen once a scan has passed over the gap: a buffer written once there,
 * and left on the slow tier, stays there although kmmscand reads it.  If
 * the regions kept the history of the old mapping, read and primed while
 * it was there, the first read of the new one would take the Accessed
 * bits of the writes that placed it for accesses, and promote it.
 */
TEST_F_TIMEOUT(kmmscand, unmapped_history_forgotten, PROMOTE_TEST_TIMEOUT_S)
{
	struct proc_figures placed, later;
	struct tier_region hot, old, fresh;
	unsigned long nr_fresh;
	long on_slow;
	void *map;
	int i;

	ASSERT_EQ(0, self->setup_err);
	if (proc_file_missing(_metadata))
		SKIP(return, "no %s: kernel without it", PROC_KMMSCAND);
	ASSERT_EQ(0, daemon_pause());
	ASSERT_EQ(0, tier_alloc_on_node(&hot, HOT_SIZE, self->slow, false));
	ASSERT_EQ(0, alloc_regions_on_node(&old, COLD_SIZE, self->slow));
	ASSERT_EQ(0, daemon_resume(&hot, 1));

	/* The hot set moving shows that the daemon scans this mm */
	ASSERT_TRUE(wait_promoted(_metadata, &hot, self->top,
				  PROMOTE_PERCENT, &hot, 1));
	for (i = 0; i < PASS_SETTLES; i++)
		ASSERT_TRUE(settle(&hot, 1));
	ASSERT_TRUE(all_on_node(&old, self->slow));

	/* Unmapped, and scanned past */
	fresh = old;
	tier_free(&old);
	for (i = 0; i < PASS_SETTLES; i++)
		ASSERT_TRUE(settle(&hot, 1));

	/* A new buffer at the same address, written once on the slow node */
	map = mmap(fresh.addr, fresh.size, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	ASSERT_TRUE(map == fresh.addr);
	ASSERT_TRUE(!madvise(fresh.addr, fresh.size, MADV_NOHUGEPAGE) ||
		    errno == EINVAL);
	ASSERT_EQ(0, tier_place_on_node(&fresh, self->slow));
	ASSERT_EQ(0, proc_figures_read(&placed));
	for (i = 0; i < PASS_SETTLES; i++)
		ASSERT_TRUE(settle(&hot, 1));
	ASSERT_EQ(0, proc_figures_read(&later));

	nr_fresh = tier_nr_pages(&fresh);
	on_slow = tier_pages_on_node(&fresh, self->slow);
	TH_LOG("%ld of %lu pages of the new buffer still on node %d",
	       on_slow, nr_fresh, self->slow);
	TH_LOG("%llu PTEs read since it was placed",
	       later.pte_scanned - placed.pte_scanned);
	/* It stayed although kmmscand read it, not for want of a read */
	ASSERT_GE(later.pte_scanned - placed.pte_scanned, nr_fresh);
	ASSERT_GE(on_slow, 0);
	EXPECT_GE((unsigned long)on_slow * 100, nr_fresh * COLD_STAY_PERCENT);
	tier_free(&fresh);
	tier_free(&hot);
}

TEST_F_TIMEOUT(kmmscand, hot_set_moves_on, 2 * PROMOTE_TEST_TIMEOUT_S)
{
	struct tier_region sets[2];
	struct tier_region *first = &sets[0], *next = &sets[1];
	struct tier_share share;
	struct quiet_cond quiet;

	ASSERT_EQ(0, self->setup_err);
	if (proc_file_missing(_metadata))
		SKIP(return, "no %s: kernel without it", PROC_KMMSCAND);
	ASSERT_EQ(0, knob_write_long(SCAN_PERIOD_MAX_MS, MOVES_PERIOD_MAX_MS));
	ASSERT_EQ(0, knob_write_long(MM_SCAN_PERIOD_MS, MOVES_PERIOD_MIN_MS));
	ASSERT_EQ(0, knob_write_long(SCAN_PERIOD_MIN_MS, MOVES_PERIOD_MIN_MS));
	ASSERT_EQ(0, daemon_pause());
	ASSERT_EQ(0, tier_alloc_on_node(first, HOT_SIZE, self->slow, false));
	ASSERT_EQ(0, tier_alloc_on_node(next, HOT_SIZE, self->slow, false));
	ASSERT_EQ(0, daemon_resume(sets, 2));

	/* The first hot set, all of it, so that the slow tier goes quiet */
	tier_share_init(&share, first, self->top, 100);
	ASSERT_TRUE(tier_wait(first, 1, tier_share_reached, &share,
			      PROMOTE_TIMEOUT_MS)) {
		TH_LOG("%lu of %lu pages of the first set on node %d",
		       share.last_pages, tier_nr_pages(first), self->top);
	}
	ASSERT_EQ(0, proc_figures_read(&quiet.now));
	quiet.accessed = quiet.now.accessed;
	quiet.quiet_from = quiet.now.scans;
	quiet.max_period = 0;
	ASSERT_TRUE(tier_wait(first, 1, quiet_scans_done, &quiet,
			      SETTLE_TIMEOUT_MS)) {
		TH_LOG("%llu scans, the last found accessed at %llu",
		       quiet.now.scans, quiet.quiet_from);
	}
	TH_LOG("%d quiet scans: longest period %llu ms, floor %d ms",
	       MOVES_QUIET_SCANS, quiet.max_period, MOVES_PERIOD_MIN_MS);
	/* The file shows the period at all */
	EXPECT_GE(quiet.max_period, MOVES_PERIOD_MIN_MS);
	EXPECT_LT(quiet.max_period, MOVES_CHANGE_SCALE * MOVES_PERIOD_MIN_MS);
	ASSERT_TRUE(all_on_node(next, self->slow));

	/* The process moves on to the next set */
	ASSERT_TRUE(wait_promoted(_metadata, next, self->top,
				  PROMOTE_PERCENT, next, 1));
	tier_free(first);
	tier_free(next);
}

/* Exit codes of a worker or its launcher, beyond a percentage */
#define WORKER_BAD_ENV		201
#define WORKER_NO_PLACE		202
#define WORKER_LOST_MODE	203
#define WORKER_NO_EXEC		204
#define WORKER_NO_PRCTL		205
#define WORKER_NO_CGROUP	206
#define WORKER_CORRUPT		207

/*
 * prctl_opt_out, prctl_opt_in and cgroup_off: two processes with a hot set
 * of HOT_SIZE on the slow node each, of which kmmscand must serve one and
 * leave the other alone.  The test reads what it did for each in their
 * /proc/<pid>/kmmscand; each reports, as its exit code, the percentage of
 * its hot set on the top node when told to stop.
 */
#ifndef PR_SET_KMMSCAND
#define PR_SET_KMMSCAND		74
#define PR_GET_KMMSCAND		75
#define PR_KMMSCAND_DEFAULT	0
#define PR_KMMSCAND_OFF		1
#define PR_KMMSCAND_ON		2
#endif
/* What a worker started through exec() is to do: "slow top stop ready mode" */
#define WORKER_ENV		"KMMSCAND_TEST_WORKER"
/*
 * How long the process kmmscand must leave alone is watched once the other
 * one's hot set moved: kmmscand looks at an mm it does not serve once per
 * longest scan period, FAST_PERIOD_MAX_MS with the fast knobs, so a few of
 * those.
 */
#define LEFT_ALONE_WATCH_MS	(5 * FAST_PERIOD_MAX_MS)

/*
 * Place a hot set of HOT_SIZE on node @slow, say so on @ready, and use it
 * until the write end of the pipe @stop is closed; then exit with the
 * percentage of the set on node @top.
 */
static void hot_worker(int slow, int top, int stop, int ready)
{
	struct pollfd pfd = { .fd = stop, .events = POLLIN };
	struct tier_region hot;
	long on_top;
	char c = 0;

	if (tier_alloc_on_node(&hot, HOT_SIZE, slow, false) ||
	    tier_pages_on_node(&hot, slow) != (long)tier_nr_pages(&hot))
		_exit(WORKER_NO_PLACE);
	if (write(ready, &c, 1) != 1)
		_exit(WORKER_NO_PLACE);
	close(ready);
	while (!poll(&pfd, 1, 0))
		tier_touch(&hot, 1);
	on_top = tier_pages_on_node(&hot, top);
	if (on_top < 0)
		_exit(WORKER_NO_PLACE);
	_exit(on_top * 100 / tier_nr_pages(&hot));
}

/*
 * The test binary run again with WORKER_ENV set becomes a worker before
 * the harness starts, once it checked that the prctl mode its launcher
 * set survived the fork() and the exec().
 */
__attribute__((constructor)) static void exec_worker(void)
{
	const char *env = getenv(WORKER_ENV);
	int slow, top, stop, ready, mode;

	if (!env)
		return;
	if (sscanf(env, "%d %d %d %d %d", &slow, &top, &stop, &ready,
		   &mode) != 5)
		_exit(WORKER_BAD_ENV);
	if (prctl(PR_GET_KMMSCAND, 0, 0, 0, 0) != mode)
		_exit(WORKER_LOST_MODE);
	hot_worker(slow, top, stop, ready);
}

/*
 * A launcher, as a wrapper script would be: set prctl @mode, then fork and
 * exec the worker; tell its pid on @pid_fd and exit with its exit code.
 */
static void launcher(int slow, int top, int stop, int ready, int mode,
		     int pid_fd)
{
	char env[64];
	int status;
	pid_t pid;

	if (prctl(PR_SET_KMMSCAND, mode, 0, 0, 0))
		_exit(WORKER_NO_PRCTL);
	pid = fork();
	if (pid < 0)
		_exit(WORKER_NO_EXEC);
	if (!pid) {
		snprintf(env, sizeof(env), "%d %d %d %d %d", slow, top, stop,
			 ready, mode);
		setenv(WORKER_ENV, env, 1);
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		execl("/proc/self/exe", "kmmscand", (char *)NULL);
		_exit(WORKER_NO_EXEC);
	}
	if (write(pid_fd, &pid, sizeof(pid)) != sizeof(pid))
		_exit(WORKER_NO_EXEC);
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		_exit(WORKER_NO_EXEC);
	_exit(WEXITSTATUS(status));
}

/*
 * exec_while_promoted: EXEC_PROCS_PER_CPU processes per CPU, each with
 * EXEC_THREADS threads reading EXEC_SIZE of its own on the slow node, and
 * each exec()s itself EXEC_GENERATIONS times, EXEC_HOLD_MS after it placed
 * its memory: a few of the test's short scan periods, so that exec()s
 * land while kmmscand has the process's folios isolated or in flight.
 * Every thread runnable at once, more than the CPUs.
 */
#define EXEC_ENV		"KMMSCAND_TEST_EXEC"
#define EXEC_PROCS_PER_CPU	2
#define EXEC_THREADS		3
#define EXEC_SIZE		(8 * MIB)
#define EXEC_GENERATIONS	10
#define EXEC_HOLD_MS		(4 * FAST_PERIOD_MIN_MS)

/* The word at the start of page @i of an exec generation @gen */
static unsigned long exec_stamp(size_t i, int gen)
{
	return (i * 2654435761UL) ^ ((unsigned long)gen << 48);
}

static void exec_stamp_all(const struct tier_region *r, int gen)
{
	size_t psz = getpagesize(), i;

	for (i = 0; i < r->size / psz; i++)
		*(unsigned long *)(r->addr + i * psz) = exec_stamp(i, gen);
}

static bool exec_intact(const struct tier_region *r, int gen)
{
	size_t psz = getpagesize(), i;

	for (i = 0; i < r->size / psz; i++)
		if (*(unsigned long *)(r->addr + i * psz) != exec_stamp(i, gen))
			return false;
	return true;
}

static void *exec_reader(void *arg)
{
	for (;;)
		tier_touch(arg, 1);
	return NULL;
}

/*
 * The test binary run with EXEC_ENV ("slow generations-left") set is one
 * generation of a process of exec_while_promoted: it reads its memory
 * from several threads, checks it, and exec()s the next generation.
 */
__attribute__((constructor)) static void exec_generation(void)
{
	const char *env = getenv(EXEC_ENV);
	pthread_t thread[EXEC_THREADS];
	struct tier_region r;
	char next[32];
	int slow, left, i;
	double end;

	if (!env)
		return;
	if (sscanf(env, "%d %d", &slow, &left) != 2)
		_exit(WORKER_BAD_ENV);
	if (tier_alloc_on_node(&r, EXEC_SIZE, slow, false))
		_exit(WORKER_NO_PLACE);
	exec_stamp_all(&r, left);
	for (i = 0; i < EXEC_THREADS; i++)
		if (pthread_create(&thread[i], NULL, exec_reader, &r))
			_exit(WORKER_NO_EXEC);
	end = tier_now() + EXEC_HOLD_MS / 1000.0;
	while (tier_now() < end)
		tier_touch(&r, 1);
	if (!exec_intact(&r, left))
		_exit(WORKER_CORRUPT);
	if (!left)
		_exit(0);
	/* The readers are still reading: exec() ends them */
	snprintf(next, sizeof(next), "%d %d", slow, left - 1);
	setenv(EXEC_ENV, next, 1);
	execl("/proc/self/exe", "kmmscand", (char *)NULL);
	_exit(WORKER_NO_EXEC);
}

TEST_F_TIMEOUT(kmmscand, exec_while_promoted, PROMOTE_TEST_TIMEOUT_S)
{
	long i, nr = EXEC_PROCS_PER_CPU * sysconf(_SC_NPROCESSORS_ONLN);
	unsigned long before, after;
	int status, intact = 0;
	char env[32];
	pid_t *pid;

	ASSERT_EQ(0, self->setup_err);
	ASSERT_EQ(0, knob_write_long(SCAN_DELAY_MS, 0));
	ASSERT_EQ(0, tier_vmstat("kmmscand_migrated", &before));
	pid = calloc(nr, sizeof(*pid));
	ASSERT_NE(NULL, pid);
	snprintf(env, sizeof(env), "%d %d", self->slow, EXEC_GENERATIONS);
	for (i = 0; i < nr; i++) {
		pid[i] = fork();
		ASSERT_GE(pid[i], 0);
		if (!pid[i]) {
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			setenv(EXEC_ENV, env, 1);
			execl("/proc/self/exe", "kmmscand", (char *)NULL);
			_exit(WORKER_NO_EXEC);
		}
	}
	for (i = 0; i < nr; i++) {
		ASSERT_EQ(pid[i], waitpid(pid[i], &status, 0));
		EXPECT_TRUE(WIFEXITED(status) && !WEXITSTATUS(status)) {
			TH_LOG("process %ld: status 0x%x", i, status);
		}
		intact += WIFEXITED(status) && !WEXITSTATUS(status);
	}
	free(pid);
	ASSERT_EQ(0, tier_vmstat("kmmscand_migrated", &after));
	TH_LOG("%d of %ld processes intact after %d exec()s each; "
	       "%lu pages promoted meanwhile", intact, nr, EXEC_GENERATIONS,
	       after - before);
	/* Promotion went on while they exec()ed */
	EXPECT_GT(after, before);
}

/* The two workers of a test and the pipes they share with it */
struct pair {
	pid_t child[2];		/* the processes the test forked */
	pid_t worker[2];	/* the workers: the children or their children */
	int stop[2];		/* closing stop[1] stops the workers */
	int ready[2];		/* a byte from each worker, its hot set placed */
	int code[2];		/* their exit codes, -1 if killed */
	struct proc_figures base[2];	/* their figures once placed */
};

static int pair_init(struct pair *p)
{
	memset(p, 0, sizeof(*p));
	if (pipe(p->stop))
		return -errno;
	if (pipe(p->ready))
		return -errno;
	return 0;
}

/* In a new worker: keep only the ends of the pipes that it uses */
static void pair_child(struct pair *p)
{
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	close(p->stop[1]);
	close(p->ready[0]);
}

/* Start worker @i as a plain fork of the test, in cgroup @procs if set */
static int pair_fork(struct pair *p, int i, int slow, int top,
		     const char *procs)
{
	pid_t pid = fork();

	if (pid < 0)
		return -errno;
	if (!pid) {
		pair_child(p);
		if (procs && tier_write_str(procs, "0"))
			_exit(WORKER_NO_CGROUP);
		hot_worker(slow, top, p->stop[0], p->ready[1]);
	}
	p->child[i] = pid;
	p->worker[i] = pid;
	return 0;
}

/* Start worker @i through a launcher that set prctl @mode */
static int pair_launch(struct pair *p, int i, int slow, int top, int mode)
{
	int pids[2];
	pid_t pid;

	if (pipe(pids))
		return -errno;
	pid = fork();
	if (pid < 0)
		return -errno;
	if (!pid) {
		pair_child(p);
		close(pids[0]);
		launcher(slow, top, p->stop[0], p->ready[1], mode, pids[1]);
	}
	close(pids[1]);
	p->child[i] = pid;
	if (read(pids[0], &p->worker[i], sizeof(pid_t)) != sizeof(pid_t))
		p->worker[i] = 0;
	close(pids[0]);
	return p->worker[i] ? 0 : -ECHILD;
}

/*
 * Wait until both workers placed their hot sets, within @timeout_ms, and
 * take their figures then.
 */
static bool pair_ready(struct pair *p, unsigned int timeout_ms)
{
	struct pollfd pfd = { .fd = p->ready[0], .events = POLLIN };
	int got = 0, i;
	char c;

	close(p->stop[0]);
	close(p->ready[1]);
	while (got < 2 && poll(&pfd, 1, timeout_ms) == 1 &&
	       read(p->ready[0], &c, 1) == 1)
		got++;
	if (got < 2)
		return false;
	for (i = 0; i < 2; i++)
		if (proc_figures_read_pid(p->worker[i], &p->base[i]))
			return false;
	return true;
}

/* Stop the workers and collect their exit codes */
static void pair_end(struct pair *p)
{
	int i, status;

	close(p->stop[1]);
	close(p->ready[0]);
	for (i = 0; i < 2; i++) {
		p->code[i] = -1;
		if (p->child[i] > 0 &&
		    waitpid(p->child[i], &status, 0) == p->child[i] &&
		    WIFEXITED(status))
			p->code[i] = WEXITSTATUS(status);
	}
}

/* Condition for tier_wait(): kmmscand promoted @min pages for @pid */
struct pid_cond {
	pid_t pid;
	unsigned long long min;
	struct proc_figures now;
};

static bool pid_promoted(void *arg)
{
	struct pid_cond *c = arg;

	return !proc_figures_read_pid(c->pid, &c->now) &&
	       c->now.promoted >= c->min;
}

/* Condition for tier_wait(): kmmscand scanned or promoted for @pid */
struct pid_touched {
	pid_t pid;
	struct proc_figures base;
	struct proc_figures now;
};

static bool pid_touched(void *arg)
{
	struct pid_touched *c = arg;

	if (proc_figures_read_pid(c->pid, &c->now))
		return false;
	return c->now.pte_scanned != c->base.pte_scanned ||
	       c->now.promoted != c->base.promoted;
}

/* The pages of a hot set that make PROMOTE_PERCENT of it */
static unsigned long long hot_share(void)
{
	return HOT_SIZE / getpagesize() * PROMOTE_PERCENT / 100;
}

/*
 * What happened to the workers of @p, of which kmmscand must serve worker
 * @served: its hot set promoted within PROMOTE_TIMEOUT_MS, the other left
 * alone for LEFT_ALONE_WATCH_MS more; *@promoted and *@touched say whether
 * each held, and @left the other's figures at the end.
 */
static void pair_watch(struct pair *p, int served, bool *promoted,
		       bool *touched, struct proc_figures *left)
{
	struct pid_cond cond = { .pid = p->worker[served], .min = hot_share() };
	struct pid_touched watch = { .pid = p->worker[!served] };

	watch.base = p->base[!served];
	*promoted = tier_wait(NULL, 0, pid_promoted, &cond,
			      PROMOTE_TIMEOUT_MS);
	*touched = tier_wait(NULL, 0, pid_touched, &watch,
			     LEFT_ALONE_WATCH_MS);
	*left = watch.now;
}

/*
 * Run a worker started by a launcher that set prctl @mode next to a plain
 * sibling, with scan_by_default @by_default; kmmscand must serve worker
 * @served (0, the sibling, or 1, the launched one) and leave the other
 * alone.
 */
static void prctl_pair(struct __test_metadata *_metadata, int slow, int top,
		       int mode, const char *by_default, int served)
{
	struct proc_figures left;
	bool promoted, touched;
	struct pair p;

	ASSERT_EQ(0, knob_write(SCAN_BY_DEFAULT, by_default));
	ASSERT_EQ(0, pair_init(&p));
	ASSERT_EQ(0, pair_fork(&p, 0, slow, top, NULL));
	ASSERT_EQ(0, pair_launch(&p, 1, slow, top, mode));
	if (!pair_ready(&p, PROMOTE_TIMEOUT_MS)) {
		pair_end(&p);
		ASSERT_TRUE(false) {
			TH_LOG("workers not placed: exit codes %d, %d",
			       p.code[0], p.code[1]);
		}
	}
	pair_watch(&p, served, &promoted, &touched, &left);
	pair_end(&p);

	TH_LOG("exit codes (%% on node %d): %d, %d", top, p.code[0],
	       p.code[1]);
	TH_LOG("left alone: %llu PTEs, %llu promoted, mode %llu, served %llu",
	       left.pte_scanned - p.base[!served].pte_scanned, left.promoted,
	       left.prctl_mode, left.served);
	/* The launched worker checked its mode after the fork and exec */
	ASSERT_LE(p.code[1], 100);
	ASSERT_LE(p.code[0], 100);
	ASSERT_TRUE(promoted) {
		TH_LOG("the hot set of the served process did not move");
	}
	EXPECT_GT(p.code[served], 0);
	EXPECT_EQ(0, p.code[!served]);
	EXPECT_FALSE(touched);
	EXPECT_EQ(1, left.tracked);
	EXPECT_EQ(0, left.served);
	EXPECT_EQ(0, left.promoted);
	EXPECT_EQ(served ? PR_KMMSCAND_DEFAULT : mode, left.prctl_mode);
	/* Never scanned: its mode was set before its mm existed */
	if (served == 0)
		EXPECT_EQ(0, left.pte_scanned);
}

TEST_F_TIMEOUT(kmmscand, prctl_opt_out, PROMOTE_TEST_TIMEOUT_S)
{
	ASSERT_EQ(0, self->setup_err);
	if (proc_file_missing(_metadata))
		SKIP(return, "no %s: kernel without it", PROC_KMMSCAND);

	/* Bad input */
	ASSERT_EQ(PR_KMMSCAND_DEFAULT, prctl(PR_GET_KMMSCAND, 0, 0, 0, 0));
	EXPECT_EQ(-1, prctl(PR_SET_KMMSCAND, PR_KMMSCAND_ON + 1, 0, 0, 0));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-1, prctl(PR_SET_KMMSCAND, -1UL, 0, 0, 0));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-1, prctl(PR_SET_KMMSCAND, PR_KMMSCAND_OFF, 1, 0, 0));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-1, prctl(PR_GET_KMMSCAND, 1, 0, 0, 0));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(PR_KMMSCAND_DEFAULT, prctl(PR_GET_KMMSCAND, 0, 0, 0, 0));

	prctl_pair(_metadata, self->slow, self->top, PR_KMMSCAND_OFF, "1", 0);
}

TEST_F_TIMEOUT(kmmscand, prctl_opt_in, PROMOTE_TEST_TIMEOUT_S)
{
	ASSERT_EQ(0, self->setup_err);
	if (proc_file_missing(_metadata))
		SKIP(return, "no %s: kernel without it", PROC_KMMSCAND);
	prctl_pair(_metadata, self->slow, self->top, PR_KMMSCAND_ON, "0", 1);
}

/* The root of the cgroup v2 hierarchy, under which the tests make theirs */
#define CGROUP_MOUNT		"/sys/fs/cgroup"
/* The cgroups of cgroup_off */
#define CGROUP_OFF		"kmmscand_test_off"
#define CGROUP_CHILD		"kmmscand_test_off/child"
#define CGROUP_ON		"kmmscand_test_on"
#define REQUIRE_CGROUP_ENV	"KMMSCAND_REQUIRE_CGROUP"

/* Whether a cgroup2 file system is mounted at CGROUP_MOUNT */
static bool cgroup2_mounted(void)
{
	char dev[256], dir[256], type[64];
	bool found = false;
	FILE *fp;

	fp = fopen("/proc/self/mounts", "r");
	if (!fp)
		return false;
	while (!found && fscanf(fp, "%255s %255s %63s %*[^\n]", dev, dir,
				type) == 3)
		found = !strcmp(dir, CGROUP_MOUNT) && !strcmp(type, "cgroup2");
	fclose(fp);
	return found;
}

static void cg_path(char *buf, size_t len, const char *cg, const char *file)
{
	snprintf(buf, len, "%s/%s%s%s", CGROUP_MOUNT, cg, *cg ? "/" : "",
		 file);
}

static int cg_write(const char *cg, const char *file, const char *value)
{
	char path[PATH_MAX];

	cg_path(path, sizeof(path), cg, file);
	return tier_write_str(path, value);
}

static int cg_read(const char *cg, const char *file, char *buf, size_t len)
{
	char path[PATH_MAX];

	cg_path(path, sizeof(path), cg, file);
	return tier_read_str(path, buf, len);
}

static int cg_mkdir(const char *cg)
{
	char path[PATH_MAX];

	cg_path(path, sizeof(path), cg, "");
	return mkdir(path, 0755) && errno != EEXIST ? -errno : 0;
}

static void cg_rmdir(const char *cg)
{
	char path[PATH_MAX];

	cg_path(path, sizeof(path), cg, "");
	rmdir(path);
}

/*
 * The sum of the counters in the memory.stat of @cg named @key, or, with
 * @prefix, whose names start with @key; 0 if there is none.
 */
static unsigned long long cg_stat_sum(const char *cg, const char *key,
				      bool prefix)
{
	unsigned long long value, sum = 0;
	char path[PATH_MAX], name[64];
	FILE *fp;

	cg_path(path, sizeof(path), cg, "memory.stat");
	fp = fopen(path, "r");
	if (!fp)
		return 0;
	while (fscanf(fp, "%63s %llu", name, &value) == 2)
		if (prefix ? !strncmp(name, key, strlen(key)) :
			     !strcmp(name, key))
			sum += value;
	fclose(fp);
	return sum;
}

/* The value of @key in the memory.stat of @cg, 0 if absent */
static unsigned long long cg_stat(const char *cg, const char *key)
{
	return cg_stat_sum(cg, key, false);
}

/* Condition for tier_wait(): memory.stat of @cg counts @min promotions */
struct cg_cond {
	const char *cg;
	unsigned long long min;
	unsigned long long last;
};

static bool cg_promoted(void *arg)
{
	struct cg_cond *c = arg;

	c->last = cg_stat(c->cg, "kmmscand_migrated");
	return c->last >= c->min;
}

/*
 * Condition for tier_wait(): the memory.stat of @cg counts what the
 * figures @f of @pid, the one process in it, count.
 */
struct cg_match {
	const char *cg;
	pid_t pid;
	struct proc_figures f;
	unsigned long long ptes, moved;
};

/*
 * The figures are read again each time: a scan step that the process took
 * over before scanning stopped may still be counting.
 */
static bool cg_matches(void *arg)
{
	struct cg_match *m = arg;

	if (proc_figures_read_pid(m->pid, &m->f))
		return false;
	m->ptes = cg_stat(m->cg, "kmmscand_pte_scanned");
	m->moved = cg_stat(m->cg, "kmmscand_migrated");
	return m->ptes == m->f.pte_scanned && m->moved == m->f.promoted;
}

/*
 * Set up the cgroups of cgroup_off: CGROUP_OFF, with memory.kmmscand 0,
 * and its child with 1, and CGROUP_ON.  Return NULL, or why it could not.
 */
static const char *cg_setup(struct __test_metadata *_metadata)
{
	static const char * const bad[] = { "2", "-1", "abc", "\n" };
	char buf[TIER_VALUE_LEN];
	unsigned int i;

	if (!cgroup2_mounted())
		return "no cgroup2 file system at " CGROUP_MOUNT;
	if (cg_read("", "cgroup.controllers", buf, sizeof(buf)) ||
	    !strstr(buf, "memory"))
		return "no memory controller";
	if (cg_write("", "cgroup.subtree_control", "+memory") ||
	    cg_mkdir(CGROUP_OFF) || cg_mkdir(CGROUP_ON) ||
	    cg_write(CGROUP_OFF, "cgroup.subtree_control", "+memory") ||
	    cg_mkdir(CGROUP_CHILD))
		return "cannot make memory cgroups";
	if (cg_read(CGROUP_OFF, "memory.kmmscand", buf, sizeof(buf)))
		return "no memory.kmmscand: kernel without it";

	for (i = 0; i < ARRAY_SIZE(bad); i++)
		EXPECT_EQ(-EINVAL, cg_write(CGROUP_OFF, "memory.kmmscand",
					    bad[i])) {
			TH_LOG("memory.kmmscand: bad input %u not refused", i);
		}
	EXPECT_EQ(0, cg_read(CGROUP_OFF, "memory.kmmscand", buf,
			     sizeof(buf)));
	EXPECT_STREQ("1", buf);
	EXPECT_EQ(0, cg_write(CGROUP_OFF, "memory.kmmscand", "0"));
	/* Taken, but the parent's 0 wins */
	EXPECT_EQ(0, cg_write(CGROUP_CHILD, "memory.kmmscand", "1"));
	EXPECT_EQ(0, cg_read(CGROUP_CHILD, "memory.kmmscand", buf,
			     sizeof(buf)));
	EXPECT_STREQ("1", buf);
	return NULL;
}

static void cg_cleanup(void)
{
	cg_rmdir(CGROUP_CHILD);
	cg_rmdir(CGROUP_OFF);
	cg_rmdir(CGROUP_ON);
}

TEST_F_TIMEOUT(kmmscand, cgroup_off, 2 * PROMOTE_TEST_TIMEOUT_S)
{
	char procs_off[PATH_MAX], procs_on[PATH_MAX], pid[32];
	struct cg_cond on_stat = { .cg = CGROUP_ON, .min = hot_share() };
	struct pid_cond moved = { .min = hot_share() };
	struct cg_match match = { .cg = CGROUP_ON };
	bool promoted, touched, counted, followed, paused, matched;
	unsigned long long off_ptes, off_moved;
	struct proc_figures left;
	const char *why;
	struct pair p;

	ASSERT_EQ(0, self->setup_err);
	if (proc_file_missing(_metadata))
		SKIP(return, "no %s: kernel without it", PROC_KMMSCAND);
	why = cg_setup(_metadata);
	if (why) {
		const char *env = getenv(REQUIRE_CGROUP_ENV);

		cg_cleanup();
		ASSERT_FALSE(env && !strcmp(env, "1")) {
			TH_LOG("%s, and %s=1", why, REQUIRE_CGROUP_ENV);
		}
		SKIP(return, "%s", why);
	}
	cg_path(procs_off, sizeof(procs_off), CGROUP_CHILD, "cgroup.procs");
	cg_path(procs_on, sizeof(procs_on), CGROUP_ON, "cgroup.procs");

	ASSERT_EQ(0, pair_init(&p));
	ASSERT_EQ(0, pair_fork(&p, 0, self->slow, self->top, procs_on));
	ASSERT_EQ(0, pair_fork(&p, 1, self->slow, self->top, procs_off));
	if (!pair_ready(&p, PROMOTE_TIMEOUT_MS)) {
		pair_end(&p);
		cg_cleanup();
		ASSERT_TRUE(false) {
			TH_LOG("workers not placed: exit codes %d, %d",
			       p.code[0], p.code[1]);
		}
	}
	pair_watch(&p, 0, &promoted, &touched, &left);
	counted = tier_wait(NULL, 0, cg_promoted, &on_stat,
			    TIER_VMSTAT_LAG_MS);
	off_ptes = cg_stat(CGROUP_OFF, "kmmscand_pte_scanned");
	off_moved = cg_stat(CGROUP_OFF, "kmmscand_migrated");
	/*
	 * With scanning stopped, the figures of the one process of CGROUP_ON
	 * are what its memory.stat counts, once the stats are flushed.
	 */
	match.pid = p.worker[0];
	paused = !daemon_pause() &&
		 !proc_figures_read_pid(p.worker[0], &match.f);
	matched = paused && tier_wait(NULL, 0, cg_matches, &match,
				      TIER_VMSTAT_LAG_MS);
	paused = !knob_write(SCAN_ENABLED, "1") && paused;

	/* Moved to the allowed cgroup, the other follows it */
	snprintf(pid, sizeof(pid), "%d", p.worker[1]);
	moved.pid = p.worker[1];
	followed = !tier_write_str(procs_on, pid) &&
		   tier_wait(NULL, 0, pid_promoted, &moved,
			     PROMOTE_TIMEOUT_MS);
	pair_end(&p);
	cg_cleanup();

	TH_LOG("exit codes (%% on node %d): %d, %d", self->top, p.code[0],
	       p.code[1]);
	TH_LOG("in %s: %llu PTEs, %llu promoted, served %llu", CGROUP_CHILD,
	       left.pte_scanned - p.base[1].pte_scanned, left.promoted,
	       left.served);
	TH_LOG("memory.stat: %s %llu promoted; %s %llu PTEs, %llu promoted",
	       CGROUP_ON, on_stat.last, CGROUP_OFF, off_ptes, off_moved);
	ASSERT_LE(p.code[0], 100);
	ASSERT_LE(p.code[1], 100);
	ASSERT_TRUE(promoted) {
		TH_LOG("the hot set in %s did not move", CGROUP_ON);
	}
	EXPECT_FALSE(touched);
	EXPECT_EQ(0, left.served);
	EXPECT_EQ(0, left.promoted);
	EXPECT_TRUE(counted);
	EXPECT_EQ(0, off_ptes);
	EXPECT_EQ(0, off_moved);
	EXPECT_TRUE(paused);
	EXPECT_TRUE(matched) {
		TH_LOG("%s: process %llu PTEs, %llu promoted; "
		       "memory.stat %llu, %llu", CGROUP_ON,
		       match.f.pte_scanned, match.f.promoted,
		       match.ptes, match.moved);
	}
	EXPECT_TRUE(followed) {
		TH_LOG("moved to %s, its hot set did not move: %llu promoted",
		       CGROUP_ON, moved.now.promoted);
	}
	EXPECT_GT(p.code[1], 0);
}

/* The two cgroups of mixed_cgroups_accounted */
#define CGROUP_MIX_A		"kmmscand_test_mix_a"
#define CGROUP_MIX_B		"kmmscand_test_mix_b"
/*
 * The share of its half of the hot set, in percent, that each cgroup must
 * have promoted before the test compares the counts: enough batches that
 * mix the two to tell a per-cgroup accounting from one per batch.
 */
#define MIX_MIN_PCT		40
/* Pages every_other_on_node() asks move_pages() about at once */
#define MIX_QUERY_PAGES		512

/*
 * Count the pages of @r from page @first on, every other one, that are on
 * @node, a batch of move_pages() queries at a time.
 */
static long every_other_on_node(const struct tier_region *r, size_t first,
				int node)
{
	size_t psz = getpagesize(), nr = tier_nr_pages(r), i, n;
	int status[MIX_QUERY_PAGES];
	void *pages[MIX_QUERY_PAGES];
	long count = 0;

	for (i = first; i < nr;) {
		for (n = 0; n < MIX_QUERY_PAGES && i < nr; n++, i += 2)
			pages[n] = r->addr + i * psz;
		if (move_pages(0, n, pages, NULL, status, 0))
			return -errno;
		while (n--)
			count += status[n] == node;
	}
	return count;
}

/*
 * A worker whose hot set is charged to two cgroups page by page: it faults
 * the even pages in while in CGROUP_MIX_A and the odd ones after moving
 * to CGROUP_MIX_B (cgroup v2 does not move charges), all on @slow, so
 * that every batch kmmscand migrates mixes the two.  Once stopped, it
 * writes to @result how many of the even and of the odd pages are on
 * @top.
 */
static void mixed_worker(int slow, int top, int stop, int ready, int result)
{
	struct pollfd pfd = { .fd = stop, .events = POLLIN };
	size_t psz = getpagesize(), off;
	unsigned long mask = 1UL << slow;
	char procs[PATH_MAX], c = 0;
	struct tier_region hot;
	long on_top[2];
	int half;

	hot.size = HOT_SIZE;
	hot.addr = mmap(NULL, hot.size, PROT_READ | PROT_WRITE,
			MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (hot.addr == MAP_FAILED ||
	    (madvise(hot.addr, hot.size, MADV_NOHUGEPAGE) && errno != EINVAL) ||
	    set_mempolicy(MPOL_BIND, &mask, TIER_MAX_NODES + 1))
		_exit(WORKER_NO_PLACE);
	for (half = 0; half < 2; half++) {
		cg_path(procs, sizeof(procs), half ? CGROUP_MIX_B : CGROUP_MIX_A,
			"cgroup.procs");
		if (tier_write_str(procs, "0"))
			_exit(WORKER_NO_CGROUP);
		for (off = half * psz; off < hot.size; off += 2 * psz)
			hot.addr[off] = 1;
	}
	if (set_mempolicy(MPOL_DEFAULT, NULL, 0) ||
	    tier_pages_on_node(&hot, slow) != (long)tier_nr_pages(&hot) ||
	    write(ready, &c, 1) != 1)
		_exit(WORKER_NO_PLACE);
	close(ready);
	while (!poll(&pfd, 1, 0))
		tier_touch(&hot, 1);
	for (half = 0; half < 2; half++) {
		on_top[half] = every_other_on_node(&hot, half, top);
		if (on_top[half] < 0)
			_exit(WORKER_NO_PLACE);
	}
	if (write(result, on_top, sizeof(on_top)) != sizeof(on_top))
		_exit(WORKER_NO_PLACE);
	_exit(0);
}

/*
 * Condition for tier_wait(): each cgroup counts at least @min promotions,
 * or, with @want, at least as many as it has pages on the top node.
 */
struct mix_cond {
	unsigned long long min;
	const long *want;
	unsigned long long promoted[2], demoted[2];
};

static bool mix_promoted(void *arg)
{
	static const char * const cgs[] = { CGROUP_MIX_A, CGROUP_MIX_B };
	struct mix_cond *c = arg;
	bool enough = true;
	int i;

	for (i = 0; i < 2; i++) {
		c->promoted[i] = cg_stat(cgs[i], "pgpromote_success");
		c->demoted[i] = cg_stat_sum(cgs[i], "pgdemote_", true);
		enough = enough && c->promoted[i] >=
			 (c->want ? (unsigned long long)c->want[i] : c->min);
	}
	return enough;
}

/*
 * Promotions are accounted to the cgroup each page is charged to
 * (pgpromote_success in memory.stat), although each batch kmmscand
 * migrates holds pages of two cgroups: each cgroup counts no more
 * promotions than it has pages, and the pages it had demoted since.  Had
 * a batch's promotions all gone to the cgroup of one of its pages, one
 * cgroup would count most of the other's.
 */
TEST_F_TIMEOUT(kmmscand, mixed_cgroups_accounted, PROMOTE_TEST_TIMEOUT_S)
{
	const unsigned long long half = HOT_SIZE / getpagesize() / 2;
	struct mix_cond cond = { .min = half * MIX_MIN_PCT / 100 };
	struct pollfd pfd = { .events = POLLIN };
	int stop[2], ready[2], result[2], status;
	char buf[TIER_VALUE_LEN], c;
	bool placed, promoted, reported, counted;
	long on_top[2] = { -1, -1 };
	pid_t pid;
	int i;

	ASSERT_EQ(0, self->setup_err);
	if (!cgroup2_mounted() ||
	    cg_read("", "cgroup.controllers", buf, sizeof(buf)) ||
	    !strstr(buf, "memory") ||
	    cg_write("", "cgroup.subtree_control", "+memory") ||
	    cg_mkdir(CGROUP_MIX_A) || cg_mkdir(CGROUP_MIX_B)) {
		const char *env = getenv(REQUIRE_CGROUP_ENV);

		cg_rmdir(CGROUP_MIX_A);
		cg_rmdir(CGROUP_MIX_B);
		ASSERT_FALSE(env && !strcmp(env, "1")) {
			TH_LOG("no memory cgroups to use, and %s=1",
			       REQUIRE_CGROUP_ENV);
		}
		SKIP(return, "no memory cgroups to use");
	}

	ASSERT_EQ(0, pipe(stop));
	ASSERT_EQ(0, pipe(ready));
	ASSERT_EQ(0, pipe(result));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		close(stop[1]);
		close(ready[0]);
		close(result[0]);
		mixed_worker(self->slow, self->top, stop[0], ready[1],
			     result[1]);
	}
	close(stop[0]);
	close(ready[1]);
	close(result[1]);
	pfd.fd = ready[0];
	placed = poll(&pfd, 1, PROMOTE_TIMEOUT_MS) == 1 &&
		 read(ready[0], &c, 1) == 1;
	promoted = placed && tier_wait(NULL, 0, mix_promoted, &cond,
				       PROMOTE_TIMEOUT_MS);
	close(stop[1]);
	reported = read(result[0], on_top, sizeof(on_top)) == sizeof(on_top);
	close(ready[0]);
	close(result[0]);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	/* Until the counts cover every page the worker found promoted */
	cond.want = on_top;
	counted = reported && tier_wait(NULL, 0, mix_promoted, &cond,
					TIER_VMSTAT_LAG_MS);
	cg_rmdir(CGROUP_MIX_A);
	cg_rmdir(CGROUP_MIX_B);

	for (i = 0; i < 2; i++)
		TH_LOG("%s: %ld of its %llu pages on node %d; promoted %llu, demoted %llu",
		       i ? CGROUP_MIX_B : CGROUP_MIX_A, on_top[i], half,
		       self->top, cond.promoted[i], cond.demoted[i]);
	ASSERT_TRUE(placed) {
		TH_LOG("worker not placed: status %#x", status);
	}
	ASSERT_TRUE(reported);
	EXPECT_TRUE(promoted) {
		TH_LOG("each cgroup was to promote %llu pages", cond.min);
	}
	EXPECT_TRUE(counted);
	for (i = 0; i < 2; i++)
		EXPECT_LE(cond.promoted[i], half + cond.demoted[i]);
}

TEST_HARNESS_MAIN
