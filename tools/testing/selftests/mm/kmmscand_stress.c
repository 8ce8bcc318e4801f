// SPDX-License-Identifier: GPL-2.0
/*
 * kmmscand stress: races between the daemon, which scans the page tables
 * of live processes and migrates their pages, and the owners of those
 * pages, under the debug kernel, with the daemon at its fastest settings.
 *
 * fork_exit_storm:     hundreds of short-lived processes with memory on
 *                      the slow node, some forking, some SIGKILLed
 * vma_churn:           munmap, mremap, mprotect, madvise (DONTNEED, COLD,
 *                      PAGEOUT, FREE) and fork with COW on hot ranges
 * thp_split_collapse:  THPs split by mprotect, partial munmap,
 *                      MADV_DONTNEED and NOHUGEPAGE, rebuilt by
 *                      MADV_COLLAPSE, while hot
 * thp_mid_step:        hundreds of MiB of hot THPs on the slow node with
 *                      pages_to_scan not a multiple of a THP, so that scan
 *                      steps end inside THPs
 * exec_storm:          processes whose threads read slow-tier memory
 *                      exec() over and over while it is promoted
 * ksm_merged:          KSM-merged pages on the slow node, merged and
 *                      unmerged while hot
 * shmem_and_file:      memfd and file pages shared by several processes,
 *                      holes punched and truncated while hot
 * kill_mid_promotion:  processes SIGKILLed as soon as promotions start
 * oom_mid_promotion:   processes in a memcg OOM-killed while promoted
 * target_node_full:    the top node filled up to its watermarks under a
 *                      hot set larger than its room: kmmscand finds no
 *                      room there (kmmscand_no_room) and nothing breaks
 * memory_hotplug:      slow-node memory blocks offlined and onlined
 * fast_tier_offline:   top-node movable memory blocks offlined and onlined
 *                      while kmmscand promotes into them; nothing it
 *                      isolated stays isolated
 * migrate_refused:     hot sets of which a part cannot move (a pipe holds
 *                      references to it), with a thread taking the mmap
 *                      lock for write over and over: what fails to move
 *                      goes back to the LRU, and no more is isolated at
 *                      once than the copying contexts migrate
 * fault_injection:     failslab and fail_page_alloc in the daemon and in
 *                      processes being scanned
 * knobs_under_load:    every knob and sysctl written by several writers
 *                      at once; bad input refused with EINVAL, value kept
 * isolation:           MPOL_BIND to the slow node, and a cpuset whose
 *                      mems exclude the top node, are never promoted
 *
 * Every page a worker owns carries a stamp derived from its offset, checked
 * after every operation and before the worker exits.  Every process must be
 * reaped before a deadline.  At the end the daemon's counters must agree:
 * what it migrated counts in pgpromote_success.  The last line is a
 * summary for the report; the harness counts the kernel splats from the
 * console.
 *
 * usage: kmmscand_stress [-t SECONDS]   (default: the bounded form)
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <linux/magic.h>
#include <numaif.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../kselftest.h"
#include "tiering_util.h"

#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE		25
#endif
#ifndef MADV_PAGEOUT
#define MADV_PAGEOUT		21
#endif
#ifndef MADV_COLD
#define MADV_COLD		20
#endif

#define KMM_DIR			"/sys/kernel/mm/kmmscand"
#define KSM_DIR			"/sys/kernel/mm/ksm"
#define RATE_LIMIT_MBPS		"/proc/sys/kernel/numa_balancing_rate_limit_mbps"
#define CGROUP_ROOT		"/sys/fs/cgroup"
#define DEBUGFS			"/sys/kernel/debug"
#define MEMORY_DIR		"/sys/devices/system/memory"
#define NODE_DIR		"/sys/devices/system/node"

#define KIB			1024UL
#define MIB			(1024 * KIB)

/*
 * Seconds of stress by default, shared among the cases: the bounded form
 * make check runs. The cases' minimum times, the fill, the waits for a
 * full node and for offlines, and the isolation watch come on top: about
 * 150 to 190 s in all on the debug kernel under TCG.
 */
#define DEFAULT_SECONDS		40
/* No case gets less: under TCG, placing and stamping take a second. */
#define MIN_CASE_SECONDS	3.0

/*
 * Worker memory: a few MiB each, so that many workers fit, a stamp check
 * of a whole set costs little, and a scan of it takes one scan step.
 */
#define WORKER_SIZE		(2 * MIB)
#define STORM_MIN_SIZE		(256 * KIB)
#define STORM_MAX_SIZE		(2 * MIB)
/* x86_64 PMD size: THP cases map this many at a time. */
#define THP_SIZE		(2 * MIB)
#define THP_COUNT		4
/*
 * thp_mid_step: THP_SPAN_WORKERS workers of THP_SPAN THPs each, 256 MiB in
 * all, walked in steps of THP_ODD_PAGES pages: neither a multiple of a THP
 * nor of a PTE table, so that steps end anywhere in a THP.
 */
#define THP_SPAN_WORKERS	4
#define THP_SPAN		(64 * MIB)
#define THP_ODD_PAGES		"700"
/*
 * exec_storm: EXEC_WORKERS processes of EXEC_THREADS threads each, more
 * runnable threads than CPUs, each generation reading EXEC_SIZE of its
 * own for EXEC_HOLD_MS, a few of the fastest scan periods, then exec()ing
 * the next until the case ends.
 */
#define EXEC_ENV		"KMMSCAND_STRESS_EXEC"
#define EXEC_WORKERS		4
#define EXEC_THREADS		3
#define EXEC_SIZE		(8 * MIB)
#define EXEC_HOLD_MS		300
#define SHARED_SIZE		(4 * MIB)

/*
 * fork_exit_storm: children alive at once (enough to keep both CPUs busy
 * forking and exiting) and how long each lives unless killed: a few scan
 * periods at the fast settings at most, so that hundreds come and go.
 */
#define STORM_CONCURRENCY	12
#define STORM_MIN_LIFE_MS	20
#define STORM_MAX_LIFE_MS	400
/* One child in this many forks a grandchild; one in this many is killed. */
#define STORM_FORK_ONE_IN	4
#define STORM_KILL_ONE_IN	4

/* Workers that churn VMAs, merge pages or share a memfd at once. */
#define CHURN_WORKERS		3
#define KSM_WORKERS		2
#define SHARED_WORKERS		3
/*
 * shmem_and_file: a worker punches a hole of this many pages (a few
 * folios' worth) in one pass out of this many, the others only read.
 */
#define SHARED_HOLE_PAGES	16
#define SHARED_PUNCH_ONE_IN	4
/* Distinct page contents in the KSM set: few, so that most pages merge. */
#define KSM_PATTERNS		8
/* How fast ksmd merges meanwhile: all of a worker set in a few passes. */
#define KSM_PAGES_TO_SCAN	1000
#define KSM_SLEEP_MS		10

/*
 * kill_mid_promotion: how often the parent looks whether kmmscand started
 * promoting, and how long it gives a child before killing it anyway.
 */
#define KILL_POLL_US		5000
#define KILL_MAX_WAIT_MS	2000

/*
 * oom_mid_promotion: the memcg limit, room for the hot set and a little,
 * and the hog that overflows it in steps, keeping the hot set hot between
 * steps.  The hot set is promoted first for a random time of up to
 * OOM_MAX_DELAY_MS, so that the kill lands at every stage of it.
 */
#define OOM_LIMIT		(24 * MIB)
#define OOM_HOT_SIZE		(8 * MIB)
#define OOM_HOG_STEP		(1 * MIB)
#define OOM_HOG_MAX		(256 * MIB)
#define OOM_MAX_DELAY_MS	1500
#define OOM_CGROUP		CGROUP_ROOT "/kmm-stress-oom"
#define CPUSET_CGROUP		CGROUP_ROOT "/kmm-stress-cpuset"

/*
 * target_node_full: leave the top node this much room above its zones'
 * high watermarks and lowmem reserves (what kmmscand's room check and the
 * allocator see, not MemFree).  Below its high watermark plus a folio, kmmscand
 * does not promote there; below its low one, ordinary allocations fall
 * back to the slow node; we stay above the min one so that the filler is
 * never the victim of direct reclaim or the OOM killer.
 */
#define FULL_MARGIN		(4 * MIB)
#define FILL_CHUNK		(16 * MIB)
/* The last steps, in base pages, to end close to the floor. */
#define FILL_STEP		(1 * MIB)
/* Filling 2 GiB takes seconds under TCG; this is for a very slow host. */
#define FILL_TIMEOUT_MS		(120 * 1000)
/*
 * A hot set this many times the margin, beside the churn: more than the
 * top node has room for, so kmmscand runs out of room there for certain.
 */
#define FULL_HOT_SIZE		(4 * FULL_MARGIN)
/*
 * How long kmmscand may take, past the case's share of the run, to meet
 * the full node: a bounded run gives the case 3 s, less than a debug
 * kernel under TCG may need to scan and promote the margin.
 */
#define FULL_WAIT_MS		(60 * 1000)
/* How often the filler looks for memory freed on the top node */
#define FILL_POLL_US		(100 * 1000)

/*
 * memory_hotplug: blocks tried per case, and how long an offline may take
 * before it is interrupted: offline_pages() retries busy pages until a
 * signal arrives, which is not a failure of the kernel.
 */
#define HOTPLUG_MAX_BLOCKS	2
/* Time for the workers to place their sets before the first offline. */
#define HOTPLUG_SETTLE_MS	500
#define OFFLINE_TIMEOUT_MS	(15 * 1000)
/* "memory" and a block number: the name of a memory block in sysfs. */
#define BLOCK_NAME_LEN		32

/*
 * fast_tier_offline: the top node's movable blocks cycled per round, at
 * most: the test VM's DIMM has two; a machine with more keeps its rounds
 * short.  Boot memory never goes offline, hot-plugged movable memory does.
 */
#define FAST_OFFLINE_MAX_BLOCKS	8
/* Workers keeping hot sets on the slow node meanwhile, and each one's set. */
#define FAST_OFFLINE_WORKERS	3
#define FAST_OFFLINE_SIZE	(8 * MIB)
/*
 * How long a worker keeps its set hot before it drops the set and faults
 * it in on the slow node again, to be promoted anew: a few scan periods
 * at the fastest settings, so that promotions never stop.
 */
#define FAST_OFFLINE_HOLD_MS	300
/* How long to wait for kmmscand's first promotion before offlining. */
#define FAST_OFFLINE_START_MS	(10 * 1000)
/*
 * The deadline of one offline: it migrates all that was promoted into the
 * block, up to the whole block, which takes seconds under TCG and KASAN,
 * and it waits for every folio kmmscand holds isolated there to come
 * back; a folio that never does makes it run until interrupted.
 */
#define FAST_OFFLINE_TIMEOUT_MS	(60 * 1000)
/*
 * Once the workers are gone, how long the top and slow nodes' isolated
 * counts may take to fall to zero: kmmscand puts back or migrates what
 * it isolated within one batch, and others isolate only for a moment.
 */
#define ISOLATED_TIMEOUT_MS	(10 * 1000)

/*
 * migrate_refused: workers of REFUSED_SIZE each, more in all than the
 * copying contexts may hold isolated at once on this machine, so that
 * a model that keeps folios isolated while they wait for a context goes
 * over the bound.  A pipe holds references to the first REFUSED_HELD of
 * each set (the most a pipe takes unasked), so their migrations fail.
 */
#define REFUSED_WORKERS		3
#define REFUSED_SIZE		(16 * MIB)
#define REFUSED_HELD		(1 * MIB)
/* How often the isolated count is read while the workers run */
#define REFUSED_POLL_US		(20 * 1000)
/*
 * KMMSCAND_BATCH_PAGES of mm/kmmscand.c, in bytes: the most a copying
 * context isolates before it migrates them.  Others isolate a little at a
 * time (reclaim and compaction a cluster of 32 pages); one PTE table's
 * worth covers them.
 */
#define BATCH_BYTES		(16 * MIB)
#define ISOLATED_SLACK		512

/*
 * fault_injection: fail one allocation in FAULT_PROBABILITY_STR percent of the
 * daemon's and the workers' (task-filter), at most FAULT_TIMES in all; the
 * count left tells how many were injected.
 */
#define FAULT_PROBABILITY_STR	"10"
#define FAULT_TIMES		1000000L
#define FAULT_WORKERS		3

/* knobs_under_load: concurrent writers, and each one's bad-input rounds. */
#define KNOB_WRITERS		4
#define BAD_ROUNDS		20
/* Long input: past any number (sysctl's 21 digits, sysfs' PAGE_SIZE). */
#define LONG_INPUT_LEN		300
#define HUGE_INPUT_LEN		5000

/*
 * isolation: how long the bound and cpuset-confined sets are watched
 * while a control set in the same conditions is promoted, at least.
 */
#define ISOLATION_MIN_MS	(8 * 1000)
#define ISOLATION_MAX_MS	(60 * 1000)

/* A child not gone this long after it was killed is stuck in exit. */
#define REAP_TIMEOUT_MS		(60 * 1000)
#define REAP_POLL_US		10000
/* The daemon is idle when its counters stand still this long. */
#define IDLE_QUIET_MS		1000
#define IDLE_TIMEOUT_MS		(30 * 1000)
/* Processes a pool tracks at once. */
#define POOL_MAX		64

/* Worker exit codes; any other end of a worker fails its case. */
#define EXIT_OK			0
#define EXIT_NOMEM		2
#define EXIT_CORRUPT		3
#define EXIT_ERROR		4
#define EXIT_MOVED		5	/* isolation broken: pages promoted */

/* A stamp mixes the word's offset with the set's seed (golden ratio). */
#define STAMP_MUL		0x9e3779b97f4a7c15ULL

struct stress_shared {
	unsigned long ops;
	unsigned long corrupt_pages;
	unsigned long ksm_sharing_max;
	/* Set when a case's workers that run until told to are to end. */
	int stop_workers;
};

struct outcome {
	unsigned long ok, killed, nomem, corrupt, error, crashed, stuck;
};

struct pool {
	int nr;
	pid_t pid[POOL_MAX];
	double kill_at[POOL_MAX];
	struct outcome out;
};

struct env {
	int top, slow;
	double case_seconds;
	unsigned long started;
	struct stress_shared *sh;
};

static struct env env;

/* ------------------------------------------------------------ helpers */

static unsigned long rng_state;

static void rng_seed(void)
{
	rng_state = ((unsigned long)getpid() << 32) ^ (unsigned long)(tier_now() * 1e9);
	if (!rng_state)
		rng_state = 1;
}

static unsigned long rng(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

static unsigned long rng_range(unsigned long lo, unsigned long hi)
{
	return lo + rng() % (hi - lo + 1);
}

static size_t page_size(void)
{
	return (size_t)sysconf(_SC_PAGESIZE);
}

static void count_op(void)
{
	__atomic_fetch_add(&env.sh->ops, 1, __ATOMIC_RELAXED);
}

static unsigned long stamp_of(unsigned long seed, size_t off)
{
	return ((unsigned long)off * (unsigned long)STAMP_MUL) ^ seed;
}

static void stamp(char *base, size_t from, size_t len, unsigned long seed)
{
	size_t off;

	for (off = from; off < from + len; off += sizeof(unsigned long))
		*(unsigned long *)(base + off) = stamp_of(seed, off);
}

/* What a page may hold besides its stamp. */
enum check_mode {
	STAMP_EXACT,		/* nothing else */
	STAMP_OR_ZERO,		/* all zero: the page was discarded */
	STAMP_OR_ZERO_WORDS,	/* some zero words: being restamped */
};

static bool page_matches(const unsigned long *p, size_t off,
			 unsigned long seed, enum check_mode mode)
{
	size_t w, words = page_size() / sizeof(*p);
	bool stamped = true, zero = true;

	for (w = 0; w < words; w++) {
		bool ok = p[w] == stamp_of(seed, off + w * sizeof(*p));

		if (!ok && !(mode == STAMP_OR_ZERO_WORDS && !p[w]))
			stamped = false;
		if (p[w])
			zero = false;
	}
	return stamped || (mode != STAMP_EXACT && zero);
}

/*
 * Check [from, from + len) of @base against its stamp, allowing what @mode
 * allows. Returns the bad pages, each reported to the shared count and the
 * first few to the log.
 */
static unsigned long check_stamp(const char *base, size_t from, size_t len,
				 unsigned long seed, enum check_mode mode)
{
	size_t psz = page_size(), off;
	unsigned long bad = 0;

	for (off = from; off < from + len; off += psz) {
		if (page_matches((const unsigned long *)(base + off), off,
				 seed, mode))
			continue;
		if (bad++ < 3)
			ksft_print_msg("pid %d: page at offset %#zx of %p differs from its stamp\n",
				       getpid(), off, base);
	}
	if (bad)
		__atomic_fetch_add(&env.sh->corrupt_pages, bad,
				   __ATOMIC_RELAXED);
	return bad;
}

/* Read and write back one word of every page: accessed and dirty. */
static void touch(char *base, size_t len)
{
	size_t psz = page_size(), off;

	for (off = 0; off < len; off += psz) {
		unsigned long *p = (unsigned long *)(base + off);
		unsigned long v = *p;

		/* The compiler cannot tell the value is unchanged: it stores */
		asm volatile("" : "+r"(v));
		*p = v;
	}
}

static void touch_for(char *base, size_t len, double seconds)
{
	double until = tier_now() + seconds;

	do {
		touch(base, len);
	} while (tier_now() < until);
}

/*
 * Stamp a range whose pages may be missing, faulting them in on the slow
 * node: the stamp's first write to a page is what allocates it.
 */
static int stamp_on_node(char *base, size_t off, size_t len,
			 unsigned long seed)
{
	unsigned long mask = 1UL << env.slow;

	if (set_mempolicy(MPOL_BIND, &mask, TIER_MAX_NODES + 1))
		return -errno;
	stamp(base, off, len, seed);
	return set_mempolicy(MPOL_DEFAULT, NULL, 0) ? -errno : 0;
}

/* A private anonymous set on the slow node, stamped. NULL if no memory. */
static char *alloc_stamped(size_t len, bool thp, unsigned long seed)
{
	struct tier_region r;

	if (tier_alloc_on_node(&r, len, env.slow, thp))
		return NULL;
	stamp(r.addr, 0, len, seed);
	return r.addr;
}

/*
 * How a worker ends when a system call fails: for lack of memory, which
 * fault injection and memcg limits cause on purpose, or in error.
 */
static int sys_fail_at(int line)
{
	if (errno == ENOMEM || errno == EAGAIN)
		return EXIT_NOMEM;
	ksft_print_msg("pid %d: line %d: %s\n", getpid(), line,
		       strerror(errno));
	return EXIT_ERROR;
}

#define sys_fail()	sys_fail_at(__LINE__)

static int write_file(const char *path, const char *value)
{
	return tier_write_str(path, value);
}

static void sleep_ms(unsigned int ms)
{
	usleep(ms * 1000);
}

/* ------------------------------------------------------------ processes */

typedef int (*worker_fn)(void *arg);

/* fork() with nothing buffered, so that no line is printed twice */
static pid_t fork_flushed(void)
{
	fflush(stdout);
	return fork();
}

static void child_exit(int code)
{
	fflush(stdout);
	_exit(code);
}

/*
 * In a child sharing @set copy-on-write with its parent: write a new stamp
 * over the first half, then check both halves. The parent's copy must not
 * see the writes.
 */
static void cow_child(char *set, size_t len, unsigned long seed)
{
	size_t half = len / 2 & ~(page_size() - 1);
	unsigned long bad;

	stamp(set, 0, half, ~seed);
	touch(set, len);
	bad = check_stamp(set, 0, half, ~seed, STAMP_EXACT) +
	      check_stamp(set, half, len - half, seed, STAMP_EXACT);
	child_exit(bad ? EXIT_CORRUPT : EXIT_OK);
}

static pid_t spawn(worker_fn fn, void *arg)
{
	pid_t pid = fork_flushed();

	if (pid == 0) {
		/* Workers that wait for a kill must not outlive the test */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		rng_seed();
		child_exit(fn(arg));
	}
	if (pid > 0)
		env.started++;
	return pid;
}

static void classify(struct outcome *out, int status, pid_t pid)
{
	if (WIFEXITED(status)) {
		switch (WEXITSTATUS(status)) {
		case EXIT_OK:
			out->ok++;
			return;
		case EXIT_NOMEM:
			out->nomem++;
			return;
		case EXIT_CORRUPT:
			out->corrupt++;
			return;
		default:
			out->error++;
			ksft_print_msg("pid %d exited with %d\n", pid,
				       WEXITSTATUS(status));
			return;
		}
	}
	if (WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) {
		out->killed++;
		return;
	}
	out->crashed++;
	ksft_print_msg("pid %d died of signal %d\n", pid,
		       WIFSIGNALED(status) ? WTERMSIG(status) : -1);
}

static bool pool_add(struct pool *p, worker_fn fn, void *arg, double kill_at)
{
	pid_t pid;

	if (p->nr == POOL_MAX)
		return false;
	pid = spawn(fn, arg);
	if (pid < 0)
		return false;
	p->pid[p->nr] = pid;
	p->kill_at[p->nr] = kill_at;
	p->nr++;
	return true;
}

static void pool_remove(struct pool *p, int i)
{
	p->nr--;
	p->pid[i] = p->pid[p->nr];
	p->kill_at[i] = p->kill_at[p->nr];
}

/* Reap what exited; SIGKILL what is due. */
static void pool_poll(struct pool *p)
{
	double now = tier_now();
	int i, status;

	for (i = p->nr - 1; i >= 0; i--) {
		pid_t ret = waitpid(p->pid[i], &status, WNOHANG);

		if (ret == p->pid[i]) {
			classify(&p->out, status, p->pid[i]);
			pool_remove(p, i);
		} else if (p->kill_at[i] && now >= p->kill_at[i]) {
			kill(p->pid[i], SIGKILL);
			p->kill_at[i] = 0;
		}
	}
}

/*
 * Let the pool's processes end by @deadline, SIGKILL the rest, and give
 * them REAP_TIMEOUT_MS to be gone: those that are not are stuck.
 */
static void pool_drain(struct pool *p, double deadline)
{
	double hard;
	int i;

	while (p->nr && tier_now() < deadline) {
		pool_poll(p);
		usleep(REAP_POLL_US);
	}
	for (i = 0; i < p->nr; i++)
		kill(p->pid[i], SIGKILL);
	hard = tier_now() + REAP_TIMEOUT_MS / 1000.0;
	while (p->nr && tier_now() < hard) {
		pool_poll(p);
		usleep(REAP_POLL_US);
	}
	for (i = 0; i < p->nr; i++)
		ksft_print_msg("pid %d did not exit within %d s of SIGKILL\n",
			       p->pid[i], REAP_TIMEOUT_MS / 1000);
	p->out.stuck += p->nr;
	p->nr = 0;
}

/*
 * Why the running case could not do what it is for (a kernel without the
 * feature it races kmmscand with, or nothing of it happened): it reports
 * SKIP with this reason rather than PASS.  Empty while the case ran.
 */
static char case_skip_reason[128];

/* Note that the running case did not run, why; returns true for it */
static __printf(1, 2) bool case_skip(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(case_skip_reason, sizeof(case_skip_reason), fmt, ap);
	va_end(ap);
	return true;
}

/* Whether the pool's processes ended as a case allows. */
static bool outcome_ok(const char *name, const struct outcome *o,
		       bool nomem_ok)
{
	ksft_print_msg("%s: %lu ok, %lu killed, %lu nomem, %lu corrupt\n",
		       name, o->ok, o->killed, o->nomem, o->corrupt);
	ksft_print_msg("%s: %lu error, %lu crashed, %lu stuck\n", name,
		       o->error, o->crashed, o->stuck);
	return !o->corrupt && !o->error && !o->crashed && !o->stuck &&
	       (nomem_ok || !o->nomem);
}

/* ------------------------------------------------------------ counters */

enum counter {
	MM_SCANS, SLOWTIER_ACCESSED, MIGRATED, MIGRATE_FAILED,
	PGPROMOTE_SUCCESS, THP_SPLIT_PMD,
	THP_MIGRATION_SUCCESS, PAGEOUTRUN, NO_ROOM, NODE_FULL, NR_STATS
};

static const char * const stat_name[NR_STATS] = {
	[MM_SCANS]		= "kmmscand_mm_scans",
	[SLOWTIER_ACCESSED]	= "kmmscand_slowtier_accessed",
	[MIGRATED]		= "kmmscand_migrated",
	[MIGRATE_FAILED]	= "kmmscand_migrate_failed",
	[PGPROMOTE_SUCCESS]	= "pgpromote_success",
	[THP_SPLIT_PMD]		= "thp_split_pmd",
	[THP_MIGRATION_SUCCESS]	= "thp_migration_success",
	[PAGEOUTRUN]		= "pageoutrun",
	[NO_ROOM]		= "kmmscand_no_room",
	[NODE_FULL]		= "kmmscand_node_full",
};

struct stats {
	unsigned long v[NR_STATS];
};

static void stats_read(struct stats *s)
{
	int i;

	/* The pgpromote_* counters are node counters: fold them first. */
	tier_vmstat_refresh();
	for (i = 0; i < NR_STATS; i++)
		if (tier_vmstat(stat_name[i], &s->v[i]))
			s->v[i] = 0;
}

static unsigned long delta(const struct stats *a, const struct stats *b,
			   enum counter s)
{
	return b->v[s] - a->v[s];
}

static unsigned long vmstat_now(enum counter s)
{
	unsigned long v = 0;

	tier_vmstat(stat_name[s], &v);
	return v;
}

/* ------------------------------------------------------------ knobs */

/*
 * The knobs, with values that are always valid on their own, used by the
 * writers under load; range knobs may still refuse one that would cross
 * the other end of their range.
 */
struct knob {
	const char *name;
	const char *good[3];
	bool range;
};

static const struct knob knobs[] = {
	{ "scan_enabled",	  { "1", "0", "1" },		false },
	{ "scan_sleep_ms",	  { "1", "5", "20" },		false },
	{ "mms_to_scan",	  { "1", "16", "4096" },	false },
	{ "pages_to_scan",	  { "512", "4096", "65536" },	false },
	{ "mm_scan_period_ms",	  { "10", "200", "2000" },	true },
	{ "scan_delay_ms",	  { "0", "50", "2000" },	false },
	{ "scan_period_min_ms",	  { "10", "100", "400" },	true },
	{ "scan_period_max_ms",	  { "1000", "2000", "5000" },	true },
	{ "scan_size_mb",	  { "1", "64", "4096" },	true },
	{ "scan_size_min_mb",	  { "1", "64", "512" },		true },
	{ "scan_size_max_mb",	  { "4096", "8192", "16384" },	true },
	{ "min_accessed_pages",	  { "0", "1", "100" },		false },
	{ "target_node",	  { "-1", "-1", "-1" },		false },
	{ "smart_scan",		  { "0", "1", "1" },		false },
	{ "smart_scan_max_skips", { "1", "8", "32" },		false },
	{ "pmd_young",		  { "0", "1", "1" },		false },
	{ "skip_idle_mm",	  { "0", "1", "1" },		false },
	{ "nice",		  { "19", "0", "-20" },		false },
	{ "migrate_threads",	  { "1", "2", "8" },		false },
	{ "scan_by_default",	  { "0", "1", "1" },		false },
	{ "/proc/sys/kernel/numa_balancing", { "0", "2", "0" },	false },
	{ RATE_LIMIT_MBPS,	  { "0", "64", "65536" },	false },
};

#define NR_KNOBS	((int)ARRAY_SIZE(knobs))

static char saved_knob[NR_KNOBS][TIER_VALUE_LEN];
static bool knob_present[NR_KNOBS];

static void knob_path(int k, char *buf, size_t len)
{
	if (knobs[k].name[0] == '/')
		snprintf(buf, len, "%s", knobs[k].name);
	else
		snprintf(buf, len, "%s/%s", KMM_DIR, knobs[k].name);
}

static int knob_write(int k, const char *value)
{
	char path[256];

	knob_path(k, path, sizeof(path));
	return tier_write_str(path, value);
}

static int knob_read(int k, char *buf, size_t len)
{
	char path[256];

	knob_path(k, path, sizeof(path));
	return tier_read_str(path, buf, len);
}

static int knob_index(const char *name)
{
	int k;

	for (k = 0; k < NR_KNOBS; k++)
		if (!strcmp(knobs[k].name, name))
			return k;
	return -1;
}

static void knobs_save(void)
{
	int k;

	for (k = 0; k < NR_KNOBS; k++)
		knob_present[k] = !knob_read(k, saved_knob[k], TIER_VALUE_LEN);
}

/* Write back the saved values, over passes: range order can matter. */
static int knobs_restore(void)
{
	char cur[TIER_VALUE_LEN];
	int pass, k, failed = 0;

	for (pass = 0; pass < 3; pass++) {
		failed = 0;
		for (k = 0; k < NR_KNOBS; k++) {
			if (!knob_present[k] ||
			    (!knob_read(k, cur, sizeof(cur)) &&
			     !strcmp(cur, saved_knob[k])))
				continue;
			if (knob_write(k, saved_knob[k]))
				failed++;
		}
		if (!failed)
			break;
	}
	return failed;
}

static void knob_set(const char *name, const char *value)
{
	int k = knob_index(name);

	if (k >= 0 && knob_present[k])
		knob_write(k, value);
}

/*
 * The fastest settings: the shortest sleep and periods the knobs take, the
 * smallest threshold, every mm each pass, NUMA balancing off so that every
 * promotion is the daemon's, and no rate limit to speak of.
 */
static void knobs_fastest(void)
{
	knob_set("/proc/sys/kernel/numa_balancing", "0");
	knob_set(RATE_LIMIT_MBPS, "65536");
	knob_set("min_accessed_pages", "0");
	knob_set("scan_sleep_ms", "1");
	knob_set("mms_to_scan", "4096");
	knob_set("scan_period_min_ms", "10");
	knob_set("mm_scan_period_ms", "10");
	knob_set("scan_delay_ms", "0");
	knob_set("scan_period_max_ms", "200");
	knob_set("mm_scan_period_ms", "50");
	knob_set("target_node", "-1");
	knob_set("scan_enabled", "1");
}

/* Set while fault injection may be armed: the exit paths disarm it. */
static bool faults_armed;
static bool faults_disarm(void);

/* Leave the machine as found: knobs restored, no fault injection armed. */
static void cleanup_at_exit(void)
{
	if (faults_armed)
		faults_disarm();
	knobs_restore();
}

static void on_signal(int sig)
{
	cleanup_at_exit();
	signal(sig, SIG_DFL);
	raise(sig);
}

/* ------------------------------------------------------------ fork storm */

static int storm_child(void *arg)
{
	size_t len = rng_range(STORM_MIN_SIZE / KIB, STORM_MAX_SIZE / KIB) *
		     KIB & ~(page_size() - 1);
	unsigned long seed = rng();
	double life = rng_range(STORM_MIN_LIFE_MS, STORM_MAX_LIFE_MS) / 1000.0;
	char *set;
	int status;

	(void)arg;
	set = alloc_stamped(len, false, seed);
	if (!set)
		return EXIT_NOMEM;
	touch_for(set, len, life / 2);
	if (rng() % STORM_FORK_ONE_IN == 0) {
		pid_t pid = fork_flushed();

		if (pid == 0)
			cow_child(set, len, seed);
		if (pid > 0 && (waitpid(pid, &status, 0) != pid ||
				!WIFEXITED(status) || WEXITSTATUS(status)))
			return EXIT_CORRUPT;
		count_op();
	}
	touch_for(set, len, life / 2);
	count_op();
	return check_stamp(set, 0, len, seed, STAMP_EXACT) ? EXIT_CORRUPT : EXIT_OK;
}

static bool case_fork_exit_storm(void)
{
	double end = tier_now() + env.case_seconds;
	struct pool p = { 0 };
	unsigned long before = env.started;

	while (tier_now() < end) {
		double kill_at = 0;

		pool_poll(&p);
		if (p.nr >= STORM_CONCURRENCY) {
			usleep(REAP_POLL_US);
			continue;
		}
		if (rng() % STORM_KILL_ONE_IN == 0)
			kill_at = tier_now() +
				  rng_range(0, STORM_MAX_LIFE_MS) / 1000.0;
		pool_add(&p, storm_child, NULL, kill_at);
	}
	pool_drain(&p, end + STORM_MAX_LIFE_MS / 1000.0 * 10);
	ksft_print_msg("fork_exit_storm: %lu processes\n",
		       env.started - before);
	return outcome_ok("fork_exit_storm", &p.out, false);
}

/* ------------------------------------------------------------ VMA churn */

enum churn_op {
	CHURN_MUNMAP, CHURN_MREMAP, CHURN_MPROTECT, CHURN_DONTNEED,
	CHURN_COLD, CHURN_PAGEOUT, CHURN_FREE, CHURN_FORK, NR_CHURN_OPS
};

struct churn {
	char *set;
	size_t len;
	unsigned long seed;
};

/* A random page-aligned subrange of the set: offset and length. */
static void churn_pick(const struct churn *c, size_t *off, size_t *len)
{
	size_t pages = c->len / page_size();
	size_t first = rng_range(0, pages - 1);

	*off = first * page_size();
	*len = rng_range(1, pages - first) * page_size();
}

/* Refill a subrange that lost its contents, on the slow node again. */
static int churn_refill(struct churn *c, size_t off, size_t len)
{
	return stamp_on_node(c->set, off, len, c->seed);
}

static int churn_munmap(struct churn *c, size_t off, size_t len)
{
	if (munmap(c->set + off, len) ||
	    mmap(c->set + off, len, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == MAP_FAILED)
		return sys_fail();
	madvise(c->set + off, len, MADV_NOHUGEPAGE);
	return churn_refill(c, off, len) ? EXIT_NOMEM : EXIT_OK;
}

/*
 * Move [off, off + len) of the set elsewhere, check it there, and move it
 * back. A range that spans two VMAs (a split one did not merge again)
 * cannot move whole: then move its first page, which is always in one.
 */
static int churn_mremap(struct churn *c, size_t off, size_t len)
{
	char *dst, *moved;

	dst = mmap(NULL, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (dst == MAP_FAILED)
		return EXIT_NOMEM;
	moved = mremap(c->set + off, len, len, MREMAP_MAYMOVE | MREMAP_FIXED,
		       dst);
	if (moved == MAP_FAILED && errno == EFAULT) {
		munmap(dst + page_size(), len - page_size());
		len = page_size();
		moved = mremap(c->set + off, len, len,
			       MREMAP_MAYMOVE | MREMAP_FIXED, dst);
	}
	if (moved == MAP_FAILED) {
		munmap(dst, len);
		return sys_fail();
	}
	/* The stamp follows the offset in the set, not the address */
	if (check_stamp(moved - off, off, len, c->seed, STAMP_EXACT))
		return EXIT_CORRUPT;
	if (mremap(moved, len, len, MREMAP_MAYMOVE | MREMAP_FIXED,
		   c->set + off) == MAP_FAILED)
		return sys_fail();
	return EXIT_OK;
}

static int churn_mprotect(struct churn *c, size_t off, size_t len)
{
	size_t o;

	if (mprotect(c->set + off, len, PROT_READ))
		return sys_fail();
	for (o = off; o < off + len; o += page_size())
		tier_keep(*(unsigned long *)(c->set + o));
	if (mprotect(c->set + off, len, PROT_READ | PROT_WRITE))
		return sys_fail();
	return EXIT_OK;
}

/* DONTNEED and FREE may discard: a page is its stamp or zero; refill. */
static int churn_discard(struct churn *c, size_t off, size_t len, int advice)
{
	if (madvise(c->set + off, len, advice))
		return sys_fail();
	if (check_stamp(c->set, off, len, c->seed, STAMP_OR_ZERO))
		return EXIT_CORRUPT;
	return churn_refill(c, off, len) ? EXIT_NOMEM : EXIT_OK;
}

/* The child writes half of its copy; the parent's copy must not change. */
static int churn_fork(struct churn *c)
{
	int status;
	pid_t pid;

	pid = fork_flushed();
	if (pid < 0)
		return EXIT_OK;	/* fault injection, memcg: not ours */
	if (pid == 0)
		cow_child(c->set, c->len, c->seed);
	touch(c->set, c->len);
	if (waitpid(pid, &status, 0) != pid)
		return sys_fail();
	if (WIFEXITED(status) && WEXITSTATUS(status))
		return WEXITSTATUS(status);
	return EXIT_OK;
}

static int churn_step(struct churn *c)
{
	size_t off, len;

	churn_pick(c, &off, &len);
	switch (rng() % NR_CHURN_OPS) {
	case CHURN_MUNMAP:
		return churn_munmap(c, off, len);
	case CHURN_MREMAP:
		return churn_mremap(c, off, len);
	case CHURN_MPROTECT:
		return churn_mprotect(c, off, len);
	case CHURN_DONTNEED:
		return churn_discard(c, off, len, MADV_DONTNEED);
	case CHURN_FREE:
		return churn_discard(c, off, len, MADV_FREE);
	case CHURN_COLD:
		madvise(c->set + off, len, MADV_COLD);
		return EXIT_OK;
	case CHURN_PAGEOUT:
		madvise(c->set + off, len, MADV_PAGEOUT);
		return EXIT_OK;
	default:
		return churn_fork(c);
	}
}

/*
 * Churn until @end; check every page after each step. With @retry, a step
 * that ran out of memory (injected faults) starts over with a new set
 * rather than ending the worker.
 */
static int churn_until(double end, bool retry)
{
	struct churn c = { .len = WORKER_SIZE, .seed = rng() };
	int ret = EXIT_OK;

	while (tier_now() < end) {
		if (!c.set)
			c.set = alloc_stamped(c.len, false, c.seed);
		if (!c.set) {
			if (!retry)
				return EXIT_NOMEM;
			continue;
		}
		touch(c.set, c.len);
		ret = churn_step(&c);
		if (ret == EXIT_NOMEM && retry) {
			/* The set may have a hole now: start over */
			munmap(c.set, c.len);
			c.set = NULL;
			continue;
		}
		if (ret)
			return ret;
		if (check_stamp(c.set, 0, c.len, c.seed, STAMP_EXACT))
			return EXIT_CORRUPT;
		count_op();
	}
	return EXIT_OK;
}

static int churn_worker(void *arg)
{
	return churn_until(*(double *)arg, false);
}

static bool run_workers(const char *name, worker_fn fn, int nr, bool nomem_ok)
{
	double end = tier_now() + env.case_seconds;
	struct pool p = { 0 };
	int i;

	for (i = 0; i < nr; i++)
		pool_add(&p, fn, &end, 0);
	pool_drain(&p, end + REAP_TIMEOUT_MS / 1000.0);
	return outcome_ok(name, &p.out, nomem_ok);
}

static bool case_vma_churn(void)
{
	return run_workers("vma_churn", churn_worker, CHURN_WORKERS, false);
}

/* ------------------------------------------------------------ THP */

enum thp_op {
	THP_MPROTECT, THP_MUNMAP, THP_NOHUGEPAGE, THP_COLLAPSE, THP_DONTNEED,
	NR_THP_OPS
};

static int thp_step(char *set, size_t len, unsigned long seed)
{
	size_t psz = page_size();
	size_t thp = rng_range(0, len / THP_SIZE - 1) * THP_SIZE;
	size_t off = thp + rng_range(1, THP_SIZE / psz - 2) * psz;

	switch (rng() % NR_THP_OPS) {
	case THP_MPROTECT:
		/* Part of a THP read-only: the PMD is split */
		if (mprotect(set + off, psz, PROT_READ) ||
		    mprotect(set + off, psz, PROT_READ | PROT_WRITE))
			return sys_fail();
		return EXIT_OK;
	case THP_MUNMAP:
		if (munmap(set + off, psz) ||
		    mmap(set + off, psz, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1,
			 0) == MAP_FAILED)
			return sys_fail();
		madvise(set + off, psz, MADV_HUGEPAGE);
		break;
	case THP_NOHUGEPAGE:
		madvise(set + thp, THP_SIZE, MADV_NOHUGEPAGE);
		madvise(set + thp, THP_SIZE, MADV_HUGEPAGE);
		return EXIT_OK;
	case THP_COLLAPSE:
		/* EAGAIN, ENOMEM, EINVAL: no THP this time, which is fine */
		madvise(set, len, MADV_COLLAPSE);
		return EXIT_OK;
	default:
		if (madvise(set + off, psz, MADV_DONTNEED))
			return sys_fail();
		break;
	}
	return stamp_on_node(set, off, psz, seed) ? EXIT_NOMEM : EXIT_OK;
}

static int thp_worker(void *arg)
{
	double end = *(double *)arg;
	size_t len = THP_COUNT * THP_SIZE;
	struct tier_region r;
	unsigned long seed = rng();
	int ret;

	r.addr = alloc_stamped(len, true, seed);
	if (!r.addr)
		return EXIT_NOMEM;
	r.size = len;
	while (tier_now() < end) {
		touch(r.addr, len);
		/* A THP's translation hides later accesses: see tiering_util */
		tier_flush_tlb(&r, 1);
		ret = thp_step(r.addr, len, seed);
		if (ret)
			return ret;
		if (check_stamp(r.addr, 0, len, seed, STAMP_EXACT))
			return EXIT_CORRUPT;
		count_op();
	}
	return EXIT_OK;
}

static bool case_thp_split_collapse(void)
{
	struct stats a, b;
	bool ok;

	stats_read(&a);
	ok = run_workers("thp_split_collapse", thp_worker, 2, false);
	stats_read(&b);
	ksft_print_msg("thp_split_collapse: thp_split_pmd +%lu, thp_migration_success +%lu\n",
		       delta(&a, &b, THP_SPLIT_PMD),
		       delta(&a, &b, THP_MIGRATION_SUCCESS));
	return ok;
}

static int thp_span_worker(void *arg)
{
	double end = *(double *)arg;
	unsigned long seed = rng();
	struct tier_region r;

	r.addr = alloc_stamped(THP_SPAN, true, seed);
	if (!r.addr)
		return EXIT_NOMEM;
	r.size = THP_SPAN;
	while (tier_now() < end) {
		touch(r.addr, r.size);
		tier_flush_tlb(&r, 1);
		if (check_stamp(r.addr, 0, r.size, seed, STAMP_EXACT))
			return EXIT_CORRUPT;
		count_op();
	}
	return EXIT_OK;
}

static bool case_thp_mid_step(void)
{
	char saved[TIER_VALUE_LEN];
	struct stats a, b;
	bool ok;

	if (tier_read_str(KMM_DIR "/pages_to_scan", saved, sizeof(saved)))
		return false;
	knob_set("pages_to_scan", THP_ODD_PAGES);
	stats_read(&a);
	ok = run_workers("thp_mid_step", thp_span_worker, THP_SPAN_WORKERS,
			 false);
	stats_read(&b);
	knob_set("pages_to_scan", saved);
	ksft_print_msg("thp_mid_step: thp_migration_success +%lu\n",
		       delta(&a, &b, THP_MIGRATION_SUCCESS));
	return ok;
}

/* ------------------------------------------------------------ exec */

static void *exec_reader(void *arg)
{
	for (;;)
		tier_touch(arg, 1);
	return NULL;
}

/*
 * One generation of an exec_storm process, the stress binary run again
 * with EXEC_ENV set to "slow-node end seed": it shares nothing with the
 * test any more, so it checks its stamp itself and tells by its exit code.
 */
__attribute__((constructor)) static void exec_generation(void)
{
	const char *val = getenv(EXEC_ENV);
	size_t psz = page_size(), off;
	struct tier_region r;
	unsigned long seed;
	pthread_t thread;
	double end, hold;
	char next[96];
	int slow, i;

	if (!val)
		return;
	if (sscanf(val, "%d %lf %lu", &slow, &end, &seed) != 3)
		_exit(EXIT_ERROR);
	if (tier_alloc_on_node(&r, EXEC_SIZE, slow, false))
		_exit(EXIT_NOMEM);
	stamp(r.addr, 0, r.size, seed);
	for (i = 0; i < EXEC_THREADS; i++)
		if (pthread_create(&thread, NULL, exec_reader, &r))
			_exit(EXIT_NOMEM);
	hold = tier_now() + EXEC_HOLD_MS / 1000.0;
	do {
		touch(r.addr, r.size);
	} while (tier_now() < hold);
	for (off = 0; off < r.size; off += psz)
		if (!page_matches((const unsigned long *)(r.addr + off), off,
				  seed, STAMP_EXACT))
			_exit(EXIT_CORRUPT);
	if (tier_now() >= end)
		_exit(EXIT_OK);
	/* The readers are still reading: the exec() ends them */
	snprintf(next, sizeof(next), "%d %.3f %lu", slow, end, seed + 1);
	setenv(EXEC_ENV, next, 1);
	execl("/proc/self/exe", "kmmscand_stress", (char *)NULL);
	_exit(EXIT_ERROR);
}

static int exec_worker(void *arg)
{
	char val[96];

	snprintf(val, sizeof(val), "%d %.3f %lu", env.slow, *(double *)arg,
		 rng());
	setenv(EXEC_ENV, val, 1);
	execl("/proc/self/exe", "kmmscand_stress", (char *)NULL);
	return sys_fail();
}

static bool case_exec_storm(void)
{
	return run_workers("exec_storm", exec_worker, EXEC_WORKERS, false);
}

/* ------------------------------------------------------------ KSM */

/* Pages of the KSM set repeat KSM_PATTERNS contents. */
static void ksm_stamp(char *set, size_t len, size_t from, size_t n)
{
	size_t psz = page_size(), off;

	for (off = from; off < from + n; off += psz)
		stamp(set, off, psz, (off / psz) % KSM_PATTERNS);
}

static unsigned long ksm_check(const char *set, size_t len)
{
	size_t psz = page_size(), off;
	unsigned long bad = 0;

	for (off = 0; off < len; off += psz) {
		/* Each page's stamp is that of its pattern, at its offset */
		bad += check_stamp(set, off, psz, (off / psz) % KSM_PATTERNS,
				   STAMP_EXACT);
	}
	return bad;
}

/* Keep the most pages_sharing seen while the workers run. */
static void ksm_note_sharing(void)
{
	unsigned long max = __atomic_load_n(&env.sh->ksm_sharing_max,
					    __ATOMIC_RELAXED);
	long now;

	if (tier_read_long(KSM_DIR "/pages_sharing", &now) || now <= 0)
		return;
	while ((unsigned long)now > max &&
	       !__atomic_compare_exchange_n(&env.sh->ksm_sharing_max, &max,
					    now, false, __ATOMIC_RELAXED,
					    __ATOMIC_RELAXED))
		;
}

static int ksm_worker(void *arg)
{
	double end = *(double *)arg;
	size_t len = WORKER_SIZE, psz = page_size();
	struct tier_region r;

	if (tier_alloc_on_node(&r, len, env.slow, false))
		return EXIT_NOMEM;
	ksm_stamp(r.addr, len, 0, len);
	if (madvise(r.addr, len, MADV_MERGEABLE))
		return sys_fail();
	while (tier_now() < end) {
		size_t off = rng_range(0, len / psz - 1) * psz;
		size_t i;

		/* Read-only touches leave merged pages merged */
		for (i = 0; i < len; i += psz)
			tier_keep(*(unsigned long *)(r.addr + i));
		/* A write breaks COW; ksmd merges the page again later */
		ksm_stamp(r.addr, len, off, psz);
		ksm_note_sharing();
		if (ksm_check(r.addr, len))
			return EXIT_CORRUPT;
		count_op();
	}
	if (madvise(r.addr, len, MADV_UNMERGEABLE) || ksm_check(r.addr, len))
		return EXIT_CORRUPT;
	return EXIT_OK;
}

static bool case_ksm_merged(void)
{
	char run[TIER_VALUE_LEN], pages[TIER_VALUE_LEN], sleep[TIER_VALUE_LEN];
	bool ok;

	if (tier_read_str(KSM_DIR "/run", run, sizeof(run)) ||
	    tier_read_str(KSM_DIR "/pages_to_scan", pages, sizeof(pages)) ||
	    tier_read_str(KSM_DIR "/sleep_millisecs", sleep, sizeof(sleep)))
		return case_skip("no KSM in this kernel");
	tier_write_long(KSM_DIR "/pages_to_scan", KSM_PAGES_TO_SCAN);
	tier_write_long(KSM_DIR "/sleep_millisecs", KSM_SLEEP_MS);
	write_file(KSM_DIR "/run", "1");
	ok = run_workers("ksm_merged", ksm_worker, KSM_WORKERS, false);
	/* run=2 unmerges whatever is left */
	write_file(KSM_DIR "/run", "2");
	write_file(KSM_DIR "/run", run);
	write_file(KSM_DIR "/pages_to_scan", pages);
	write_file(KSM_DIR "/sleep_millisecs", sleep);
	ksft_print_msg("ksm_merged: pages_sharing up to %lu while hot\n",
		       env.sh->ksm_sharing_max);
	if (ok && !env.sh->ksm_sharing_max)
		return case_skip("KSM merged no page while the workers ran");
	return ok;
}

/* ------------------------------------------------------------ shmem, file */

struct shared_set {
	int memfd, filefd;
	char *mem, *file;
};

static struct shared_set shared_set;

/*
 * Every worker maps the memfd and the file, keeps both hot, and now and
 * then punches a hole in the memfd and restamps it: others may see the
 * hole's pages as zero meanwhile, never as anything else.
 */
static int shared_worker(void *arg)
{
	double end = *(double *)arg;
	size_t len = SHARED_SIZE, psz = page_size();
	char *mem, *file;

	mem = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED,
		   shared_set.memfd, 0);
	file = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED,
		    shared_set.filefd, 0);
	if (mem == MAP_FAILED || file == MAP_FAILED)
		return EXIT_NOMEM;
	while (tier_now() < end) {
		size_t hole = SHARED_HOLE_PAGES * psz;
		size_t off = rng_range(0, len / psz - SHARED_HOLE_PAGES) * psz;

		tier_touch(&(struct tier_region){ mem, len }, 1);
		tier_touch(&(struct tier_region){ file, len }, 1);
		if (rng() % SHARED_PUNCH_ONE_IN == 0) {
			if (fallocate(shared_set.memfd, FALLOC_FL_PUNCH_HOLE |
				      FALLOC_FL_KEEP_SIZE, off, hole))
				return sys_fail();
			if (stamp_on_node(mem, off, hole, 0))
				return EXIT_NOMEM;
		}
		if (check_stamp(mem, 0, len, 0, STAMP_OR_ZERO_WORDS) ||
		    check_stamp(file, 0, len, 1, STAMP_EXACT))
			return EXIT_CORRUPT;
		count_op();
	}
	return EXIT_OK;
}

static int shared_open(void)
{
	size_t len = SHARED_SIZE;
	char path[] = "/tmp/kmm-stress-XXXXXX";

	shared_set.memfd = memfd_create("kmm-stress", 0);
	shared_set.filefd = mkstemp(path);
	if (shared_set.memfd < 0 || shared_set.filefd < 0)
		return -1;
	unlink(path);
	if (ftruncate(shared_set.memfd, len) ||
	    ftruncate(shared_set.filefd, len))
		return -1;
	shared_set.mem = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED,
			      shared_set.memfd, 0);
	shared_set.file = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED,
			       shared_set.filefd, 0);
	if (shared_set.mem == MAP_FAILED || shared_set.file == MAP_FAILED)
		return -1;
	if (stamp_on_node(shared_set.mem, 0, len, 0) ||
	    stamp_on_node(shared_set.file, 0, len, 1))
		return -1;
	return 0;
}

static void shared_close(void)
{
	munmap(shared_set.mem, SHARED_SIZE);
	munmap(shared_set.file, SHARED_SIZE);
	close(shared_set.memfd);
	close(shared_set.filefd);
}

static bool case_shmem_and_file(void)
{
	struct statfs fs;
	bool ok;

	if (shared_open()) {
		ksft_print_msg("shmem_and_file: cannot set up: %s\n",
			       strerror(errno));
		return false;
	}
	if (!fstatfs(shared_set.filefd, &fs))
		ksft_print_msg("shmem_and_file: file on a filesystem of type %#lx\n",
			       (unsigned long)fs.f_type);
	ok = run_workers("shmem_and_file", shared_worker, SHARED_WORKERS,
			 false);
	/* Every hole was refilled: now each page must be its stamp */
	if (check_stamp(shared_set.mem, 0, SHARED_SIZE, 0, STAMP_EXACT) ||
	    check_stamp(shared_set.file, 0, SHARED_SIZE, 1, STAMP_EXACT))
		ok = false;
	/* Shrink and regrow: a truncation races with any scan still going */
	if (ftruncate(shared_set.memfd, 0) ||
	    ftruncate(shared_set.memfd, SHARED_SIZE))
		ok = false;
	shared_close();
	return ok;
}

/* ------------------------------------------------------------ kills */

/* Keep a hot set hot until killed. */
static int hot_forever(void *arg)
{
	unsigned long seed = rng();
	char *set = alloc_stamped(WORKER_SIZE, false, seed);

	(void)arg;
	if (!set)
		return EXIT_NOMEM;
	tier_clear_refs(&(struct tier_region){ set, WORKER_SIZE }, 1);
	for (;;) {
		touch(set, WORKER_SIZE);
		count_op();
	}
	return EXIT_OK;
}

static bool case_kill_mid_promotion(void)
{
	double end = tier_now() + env.case_seconds;
	unsigned long mid = 0, rounds = 0;
	struct pool p = { 0 };

	while (tier_now() < end) {
		unsigned long base = vmstat_now(MIGRATED);
		double give_up = tier_now() + KILL_MAX_WAIT_MS / 1000.0;

		if (!pool_add(&p, hot_forever, NULL, 0))
			break;
		/* Kill it as soon as the daemon migrates anything */
		while (tier_now() < give_up && vmstat_now(MIGRATED) == base)
			usleep(KILL_POLL_US);
		if (vmstat_now(MIGRATED) != base)
			mid++;
		kill(p.pid[p.nr - 1], SIGKILL);
		pool_drain(&p, tier_now());
		rounds++;
	}
	ksft_print_msg("kill_mid_promotion: %lu kills, %lu while migrating\n",
		       rounds, mid);
	return outcome_ok("kill_mid_promotion", &p.out, false);
}

/* ------------------------------------------------------------ cgroups */

static bool cgroup2_ready(void)
{
	struct statfs fs;

	if (!statfs(CGROUP_ROOT, &fs) && fs.f_type == CGROUP2_SUPER_MAGIC)
		return true;
	mkdir(CGROUP_ROOT, 0755);
	return !mount("none", CGROUP_ROOT, "cgroup2", 0, NULL);
}

static bool cgroup_enable(const char *controller)
{
	char buf[512], ctl[32];

	snprintf(ctl, sizeof(ctl), "+%s", controller);
	write_file(CGROUP_ROOT "/cgroup.subtree_control", ctl);
	if (tier_read_str(CGROUP_ROOT "/cgroup.subtree_control", buf,
			  sizeof(buf)))
		return false;
	return strstr(buf, controller);
}

static int cgroup_join(const char *cg)
{
	char path[256];

	snprintf(path, sizeof(path), "%s/cgroup.procs", cg);
	return tier_write_long(path, getpid());
}

/* The hot set is promoted a while, then a hog overflows the memcg. */
static int oom_victim(void *arg)
{
	double delay = rng_range(0, OOM_MAX_DELAY_MS) / 1000.0;
	unsigned long seed = rng();
	char *set, *hog;
	size_t off;

	(void)arg;
	if (cgroup_join(OOM_CGROUP))
		return sys_fail();
	set = alloc_stamped(OOM_HOT_SIZE, false, seed);
	if (!set)
		return EXIT_NOMEM;
	tier_clear_refs(&(struct tier_region){ set, OOM_HOT_SIZE }, 1);
	touch_for(set, OOM_HOT_SIZE, delay);
	hog = mmap(NULL, OOM_HOG_MAX, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (hog == MAP_FAILED)
		return EXIT_NOMEM;
	for (off = 0; off < OOM_HOG_MAX; off += OOM_HOG_STEP) {
		memset(hog + off, 1, OOM_HOG_STEP);
		touch(set, OOM_HOT_SIZE);
		count_op();
	}
	/* Not killed: the limit did not hold */
	return EXIT_ERROR;
}

static unsigned long oom_kills(void)
{
	char buf[1024], *p;

	if (tier_read_str(OOM_CGROUP "/memory.events", buf, sizeof(buf)))
		return 0;
	p = strstr(buf, "oom_kill ");
	return p ? strtoul(p + strlen("oom_kill "), NULL, 10) : 0;
}

static bool case_oom_mid_promotion(void)
{
	double end = tier_now() + env.case_seconds;
	struct pool p = { 0 };
	unsigned long rounds = 0;
	bool ok;

	if (!cgroup2_ready() || !cgroup_enable("memory"))
		return case_skip("no cgroup v2 memory controller");
	mkdir(OOM_CGROUP, 0755);
	if (tier_write_long(OOM_CGROUP "/memory.max", OOM_LIMIT)) {
		ksft_print_msg("oom_mid_promotion: cannot set memory.max\n");
		return false;
	}
	while (tier_now() < end) {
		pool_add(&p, oom_victim, NULL, 0);
		pool_drain(&p, end + REAP_TIMEOUT_MS / 1000.0);
		rounds++;
	}
	ksft_print_msg("oom_mid_promotion: %lu rounds, %lu OOM kills\n",
		       rounds, oom_kills());
	ok = outcome_ok("oom_mid_promotion", &p.out, false);
	/* Every victim must have been killed, by the OOM killer */
	if (p.out.killed != rounds || oom_kills() < rounds)
		ok = false;
	rmdir(OOM_CGROUP);
	return ok;
}

/* ------------------------------------------------------------ full node */

/*
 * What allocations may still take from @node: its zones' free memory above
 * their high watermarks and the lowmem reserves kept from allocations that
 * could use a higher zone.  MemFree counts those reserves too, which a
 * filler can never take.
 */
static unsigned long node_room(int node)
{
	struct tier_node_marks marks;

	if (tier_node_marks(node, &marks))
		return 0;
	return marks.room * page_size();
}

/*
 * Fill the top node down to FULL_MARGIN of room and hold it there: memory
 * freed later, by the processes of the cases before or by kswapd, is
 * taken again, so that the room left stays the margin.
 */
static int filler(void *arg)
{
	unsigned long mask = 1UL << env.top;

	(void)arg;
	if (set_mempolicy(MPOL_BIND, &mask, TIER_MAX_NODES + 1))
		return sys_fail();
	for (;;) {
		while (node_room(env.top) > FULL_MARGIN) {
			bool big = node_room(env.top) > FULL_MARGIN + 2 * FILL_CHUNK;
			size_t len = big ? FILL_CHUNK : FILL_STEP;
			char *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
				       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

			if (p == MAP_FAILED)
				return EXIT_NOMEM;
			/* THPs: a gigabyte in few faults, which TCG makes slow */
			madvise(p, len, big ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
			memset(p, 1, len);
		}
		usleep(FILL_POLL_US);
	}
	return EXIT_OK;
}

/* Keep a hot set larger than the room left on the top node hot */
static int full_hot_worker(void *arg)
{
	unsigned long seed = rng();
	char *set = alloc_stamped(FULL_HOT_SIZE, false, seed);

	(void)arg;
	if (!set)
		return EXIT_NOMEM;
	while (!__atomic_load_n(&env.sh->stop_workers, __ATOMIC_RELAXED)) {
		touch(set, FULL_HOT_SIZE);
		if (check_stamp(set, 0, FULL_HOT_SIZE, seed, STAMP_EXACT))
			return EXIT_CORRUPT;
		count_op();
	}
	return EXIT_OK;
}

/* Condition for tier_wait(): kmmscand met the full node, the case ran. */
struct full_cond {
	struct tier_counter no_room;
	double end;
};

static bool full_met(void *arg)
{
	struct full_cond *c = arg;

	return tier_now() >= c->end && tier_counter_reached(&c->no_room);
}

static bool case_target_node_full(void)
{
	double end = tier_now() + FILL_TIMEOUT_MS / 1000.0;
	struct full_cond met = { .no_room.name = stat_name[NO_ROOM] };
	struct pool fill = { 0 }, p = { 0 };
	struct stats a, b;
	bool ok = true;
	int i;

	stats_read(&a);
	met.no_room.min = a.v[NO_ROOM] + 1;
	pool_add(&fill, filler, NULL, 0);
	while (node_room(env.top) > FULL_MARGIN + FILL_STEP &&
	       tier_now() < end)
		usleep(REAP_POLL_US);
	ksft_print_msg("target_node_full: node %d room %lu MiB, margin %lu MiB\n",
		       env.top, node_room(env.top) / MIB, FULL_MARGIN / MIB);
	/* A node that was never full tests nothing */
	if (node_room(env.top) > FULL_MARGIN + FILL_STEP) {
		ksft_print_msg("target_node_full: node %d not filled in %d s\n",
			       env.top, FILL_TIMEOUT_MS / 1000);
		ok = false;
	} else {
		end = tier_now() + env.case_seconds;
		met.end = end;
		env.sh->stop_workers = 0;
		pool_add(&p, full_hot_worker, NULL, 0);
		for (i = 0; i < CHURN_WORKERS; i++)
			pool_add(&p, churn_worker, &end, 0);
		/* Not an assertion: the count of no room below is */
		tier_wait(NULL, 0, full_met, &met,
			  env.case_seconds * 1000 + FULL_WAIT_MS);
		__atomic_store_n(&env.sh->stop_workers, 1, __ATOMIC_RELAXED);
		pool_drain(&p, tier_now() + REAP_TIMEOUT_MS / 1000.0);
		ok = outcome_ok("target_node_full", &p.out, false);
	}
	stats_read(&b);
	pool_drain(&fill, tier_now());
	ksft_print_msg("target_node_full: promoted %lu, kswapd runs +%lu\n",
		       delta(&a, &b, PGPROMOTE_SUCCESS),
		       delta(&a, &b, PAGEOUTRUN));
	ksft_print_msg("target_node_full: no room %lu, back-offs %lu\n",
		       delta(&a, &b, NO_ROOM), delta(&a, &b, NODE_FULL));
	/* The workers ending well is not enough: kmmscand met a full node */
	if (!delta(&a, &b, NO_ROOM)) {
		ksft_print_msg("target_node_full: kmmscand never found node %d full\n",
			       env.top);
		ok = false;
	}
	/* The filler only ever ends by our SIGKILL */
	return ok && fill.out.killed == 1;
}

/* ------------------------------------------------------------ hotplug */

/*
 * Write @state to a memory block from a child, which is interrupted if
 * the write has not returned within @timeout_ms.
 */
static int block_set_state_within(const char *block, const char *state,
				  unsigned int timeout_ms)
{
	char path[256];
	int status;
	pid_t pid;
	double until = tier_now() + timeout_ms / 1000.0;

	snprintf(path, sizeof(path), MEMORY_DIR "/%s/state", block);
	pid = fork_flushed();
	if (pid == 0)
		child_exit(write_file(path, state) ? 1 : 0);
	if (pid < 0)
		return -1;
	env.started++;
	while (waitpid(pid, &status, WNOHANG) == 0) {
		if (tier_now() > until)
			kill(pid, SIGKILL);
		usleep(REAP_POLL_US);
	}
	return WIFEXITED(status) && !WEXITSTATUS(status) ? 0 : -1;
}

static int block_set_state(const char *block, const char *state)
{
	return block_set_state_within(block, state, OFFLINE_TIMEOUT_MS);
}

static bool block_online(const char *block)
{
	char path[256], buf[TIER_VALUE_LEN];

	snprintf(path, sizeof(path), MEMORY_DIR "/%s/state", block);
	return !tier_read_str(path, buf, sizeof(buf)) &&
	       !strcmp(buf, "online");
}

/* Try to offline and online again up to HOTPLUG_MAX_BLOCKS slow blocks. */
static int hotplug_cycle(unsigned long *tried, unsigned long *cycled)
{
	char dir[128];
	struct dirent *de;
	DIR *d;
	int ret = 0;

	snprintf(dir, sizeof(dir), NODE_DIR "/node%d", env.slow);
	d = opendir(dir);
	if (!d)
		return -1;
	while ((de = readdir(d)) && *tried < HOTPLUG_MAX_BLOCKS) {
		int nr;

		if (sscanf(de->d_name, "memory%d", &nr) != 1 ||
		    !block_online(de->d_name))
			continue;
		(*tried)++;
		if (block_set_state(de->d_name, "offline"))
			continue;
		count_op();
		if (block_set_state(de->d_name, "online") ||
		    !block_online(de->d_name)) {
			ksft_print_msg("memory_hotplug: %s stays offline\n",
				       de->d_name);
			ret = -1;
			break;
		}
		(*cycled)++;
		count_op();
	}
	closedir(d);
	return ret;
}

static bool case_memory_hotplug(void)
{
	double end = tier_now() + env.case_seconds;
	unsigned long tried = 0, cycled = 0;
	struct pool p = { 0 };
	bool ok = true;
	int i;

	if (access(MEMORY_DIR, F_OK))
		return case_skip("no %s: kernel without memory hotplug",
				 MEMORY_DIR);
	for (i = 0; i < CHURN_WORKERS; i++)
		pool_add(&p, churn_worker, &end, 0);
	/* Not an assertion: the workers' sets are placed meanwhile */
	sleep_ms(HOTPLUG_SETTLE_MS);
	if (hotplug_cycle(&tried, &cycled))
		ok = false;
	pool_drain(&p, end + REAP_TIMEOUT_MS / 1000.0);
	ok = outcome_ok("memory_hotplug", &p.out, false) && ok;
	if (ok && !cycled)
		return case_skip("no node-%d block of %lu tried went offline",
				 env.slow, tried);
	ksft_print_msg("memory_hotplug: %lu of %lu node-%d blocks off and on again\n",
		       cycled, tried, env.slow);
	return ok;
}

/*
 * Whether a memory block is online, all of it in ZONE_MOVABLE (an online
 * block shows the one zone it is in, or "none"), and not said to be
 * unremovable: what can go offline whatever it holds.
 */
static bool block_movable(const char *block)
{
	char path[256], buf[TIER_VALUE_LEN];
	long removable;

	if (!block_online(block))
		return false;
	snprintf(path, sizeof(path), MEMORY_DIR "/%s/valid_zones", block);
	if (tier_read_str(path, buf, sizeof(buf)) || strcmp(buf, "Movable"))
		return false;
	/* Only kept for old tools, which is why its absence is no answer */
	snprintf(path, sizeof(path), MEMORY_DIR "/%s/removable", block);
	return tier_read_long(path, &removable) || removable;
}

/* Up to @max movable blocks of @node, named in @names; how many. */
static int movable_blocks(int node, char (*names)[BLOCK_NAME_LEN], int max)
{
	char dir[128];
	struct dirent *de;
	int nr, found = 0;
	size_t len;
	DIR *d;

	snprintf(dir, sizeof(dir), NODE_DIR "/node%d", node);
	d = opendir(dir);
	if (!d)
		return 0;
	while ((de = readdir(d)) && found < max) {
		len = strlen(de->d_name);
		if (sscanf(de->d_name, "memory%d", &nr) != 1 ||
		    len >= BLOCK_NAME_LEN || !block_movable(de->d_name))
			continue;
		memcpy(names[found++], de->d_name, len + 1);
	}
	closedir(d);
	return found;
}

/*
 * Keep a set hot on the slow node until the case says stop: hold it hot a
 * while and check it, then drop its pages and fault them in on the slow
 * node again, so that kmmscand keeps promoting it, into the top node's
 * movable blocks among others.
 */
static int bounce_worker(void *arg)
{
	unsigned long seed = rng();
	char *set = alloc_stamped(FAST_OFFLINE_SIZE, false, seed);

	(void)arg;
	if (!set)
		return EXIT_NOMEM;
	while (!__atomic_load_n(&env.sh->stop_workers, __ATOMIC_RELAXED)) {
		touch_for(set, FAST_OFFLINE_SIZE, FAST_OFFLINE_HOLD_MS / 1000.0);
		if (check_stamp(set, 0, FAST_OFFLINE_SIZE, seed, STAMP_EXACT))
			return EXIT_CORRUPT;
		if (madvise(set, FAST_OFFLINE_SIZE, MADV_DONTNEED))
			return sys_fail();
		if (stamp_on_node(set, 0, FAST_OFFLINE_SIZE, seed))
			return EXIT_NOMEM;
		count_op();
	}
	touch(set, FAST_OFFLINE_SIZE);
	return check_stamp(set, 0, FAST_OFFLINE_SIZE, seed, STAMP_EXACT) ?
	       EXIT_CORRUPT : EXIT_OK;
}

/* What the rounds of fast_tier_offline did. */
struct offline_tally {
	unsigned long offlined, cycled, rounds;
	double slowest;
};

/*
 * Take @nr movable blocks offline one after the other, so that promotions
 * land in those still online meanwhile, then bring back, movable as they
 * were, every one that went, also after a failure.  False if an offline
 * was not done by its deadline or a block did not come back.
 */
static bool offline_round(char (*blocks)[BLOCK_NAME_LEN], int nr,
			  struct offline_tally *t)
{
	bool ok = true;
	int i, off;

	for (off = 0; off < nr; off++) {
		double start = tier_now(), took;

		if (block_set_state_within(blocks[off], "offline",
					   FAST_OFFLINE_TIMEOUT_MS)) {
			ksft_print_msg("fast_tier_offline: %s still online after %.1f s\n",
				       blocks[off], tier_now() - start);
			ok = false;
			break;
		}
		took = tier_now() - start;
		if (took > t->slowest)
			t->slowest = took;
		t->offlined++;
		count_op();
	}
	/* "online" alone may pick ZONE_NORMAL once the movable zone is empty */
	for (i = 0; i < off; i++) {
		if (block_set_state(blocks[i], "online_movable") ||
		    !block_movable(blocks[i])) {
			ksft_print_msg("fast_tier_offline: %s does not come back online movable\n",
				       blocks[i]);
			ok = false;
			continue;
		}
		t->cycled++;
		count_op();
	}
	t->rounds++;
	return ok;
}

/* Pages of @node isolated from the LRU now; ULONG_MAX if unreadable. */
static unsigned long node_isolated(int node)
{
	char path[128], key[TIER_VALUE_LEN];
	unsigned long val, sum = 0;
	int fields = 0;
	FILE *f;

	snprintf(path, sizeof(path), NODE_DIR "/node%d/vmstat", node);
	f = fopen(path, "r");
	if (!f)
		return ULONG_MAX;
	while (fscanf(f, "%63s %lu", key, &val) == 2) {
		if (strcmp(key, "nr_isolated_anon") &&
		    strcmp(key, "nr_isolated_file"))
			continue;
		sum += val;
		fields++;
	}
	fclose(f);
	/* Both counters, or the kernel's names changed under us */
	return fields == 2 ? sum : ULONG_MAX;
}

/* Condition for tier_wait(): neither node has a page isolated. */
struct isolated_cond {
	unsigned long top, slow;
};

static bool none_isolated(void *arg)
{
	struct isolated_cond *c = arg;

	/* The per-CPU deltas folded in: a zero that does not lag */
	tier_vmstat_refresh();
	c->top = node_isolated(env.top);
	c->slow = node_isolated(env.slow);
	return !c->top && !c->slow;
}

/*
 * Whether both nodes' isolated counts fall to zero within
 * ISOLATED_TIMEOUT_MS, once @name's workers are gone; if not, say what is
 * left.
 */
static bool isolated_drained(const char *name)
{
	struct isolated_cond iso = { 0 };

	if (tier_wait(NULL, 0, none_isolated, &iso, ISOLATED_TIMEOUT_MS))
		return true;
	ksft_print_msg("%s: %d s on, isolated: node %d %lu, node %d %lu\n",
		       name, ISOLATED_TIMEOUT_MS / 1000, env.top, iso.top,
		       env.slow, iso.slow);
	return false;
}

static bool case_fast_tier_offline(void)
{
	char blocks[FAST_OFFLINE_MAX_BLOCKS][BLOCK_NAME_LEN];
	struct tier_counter first = { .name = stat_name[MIGRATED] };
	struct offline_tally t = { 0 };
	unsigned long before, during;
	struct pool p = { 0 };
	bool ok = true;
	double end;
	int i, nr;

	if (access(MEMORY_DIR, F_OK))
		return case_skip("no %s: kernel without memory hotplug",
				 MEMORY_DIR);
	nr = movable_blocks(env.top, blocks, FAST_OFFLINE_MAX_BLOCKS);
	if (!nr)
		return case_skip("no online movable memory block on node %d to offline",
				 env.top);
	env.sh->stop_workers = 0;
	for (i = 0; i < FAST_OFFLINE_WORKERS; i++)
		pool_add(&p, bounce_worker, NULL, 0);
	/* Not an assertion: the offlines start when promotion runs, or anyway */
	first.min = vmstat_now(MIGRATED) + 1;
	tier_wait(NULL, 0, tier_counter_reached, &first, FAST_OFFLINE_START_MS);
	before = vmstat_now(MIGRATED);
	end = tier_now() + env.case_seconds;
	do {
		ok = offline_round(blocks, nr, &t);
	} while (ok && tier_now() < end);
	tier_vmstat_refresh();
	during = vmstat_now(MIGRATED) - before;
	__atomic_store_n(&env.sh->stop_workers, 1, __ATOMIC_RELAXED);
	pool_drain(&p, tier_now() + REAP_TIMEOUT_MS / 1000.0);
	ok = outcome_ok("fast_tier_offline", &p.out, false) && ok;
	ksft_print_msg("fast_tier_offline: %d node-%d blocks, %lu rounds\n",
		       nr, env.top, t.rounds);
	ksft_print_msg("fast_tier_offline: %lu offline, %lu back, slowest %.1f s\n",
		       t.offlined, t.cycled, t.slowest);
	ksft_print_msg("fast_tier_offline: %lu pages promoted meanwhile\n",
		       during);
	if (!t.cycled) {
		ksft_print_msg("fast_tier_offline: no node-%d block went offline and came back\n",
			       env.top);
		ok = false;
	}
	if (!during) {
		ksft_print_msg("fast_tier_offline: nothing promoted during the offlines\n");
		ok = false;
	}
	if (!isolated_drained("fast_tier_offline"))
		ok = false;
	return ok;
}

/* ------------------------------------------------------------ refused */

/* Take and give up the mmap lock for write, in a loop, until told to stop */
static void *lock_churn(void *arg)
{
	size_t psz = page_size();
	char *p;

	(void)arg;
	while (!__atomic_load_n(&env.sh->stop_workers, __ATOMIC_RELAXED)) {
		p = mmap(NULL, psz, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED)
			continue;
		*p = 1;
		munmap(p, psz);
	}
	return NULL;
}

/*
 * Keep a set hot on the slow node, of which the pipe holds the head, and
 * keep faulting the rest in there again, as bounce_worker() does; a
 * thread contends for the mmap lock meanwhile.
 */
static int refused_worker(void *arg)
{
	unsigned long seed = rng();
	char *set = alloc_stamped(REFUSED_SIZE, false, seed);
	struct iovec iov;
	pthread_t churn;
	int pipefd[2];
	ssize_t n;

	(void)arg;
	if (!set)
		return EXIT_NOMEM;
	if (pipe(pipefd) ||
	    fcntl(pipefd[1], F_SETPIPE_SZ, REFUSED_HELD) < (int)REFUSED_HELD)
		return sys_fail();
	/* Not read until exit: the pipe keeps a reference to each page */
	iov.iov_base = set;
	iov.iov_len = REFUSED_HELD;
	while (iov.iov_len) {
		n = vmsplice(pipefd[1], &iov, 1, 0);
		if (n <= 0)
			return sys_fail();
		iov.iov_base = (char *)iov.iov_base + n;
		iov.iov_len -= n;
	}
	if (pthread_create(&churn, NULL, lock_churn, NULL))
		return EXIT_NOMEM;
	while (!__atomic_load_n(&env.sh->stop_workers, __ATOMIC_RELAXED)) {
		touch_for(set, REFUSED_SIZE, FAST_OFFLINE_HOLD_MS / 1000.0);
		if (check_stamp(set, 0, REFUSED_SIZE, seed, STAMP_EXACT))
			return EXIT_CORRUPT;
		if (madvise(set + REFUSED_HELD, REFUSED_SIZE - REFUSED_HELD,
			    MADV_DONTNEED))
			return sys_fail();
		if (stamp_on_node(set, REFUSED_HELD,
				  REFUSED_SIZE - REFUSED_HELD, seed))
			return EXIT_NOMEM;
		count_op();
	}
	pthread_join(churn, NULL);
	return check_stamp(set, 0, REFUSED_SIZE, seed, STAMP_EXACT) ?
	       EXIT_CORRUPT : EXIT_OK;
}

/*
 * The most kmmscand may hold isolated at once: a batch for each context
 * that copies, the thread and its workers (no more than the online CPUs).
 */
static unsigned long isolated_bound(void)
{
	long threads = 1, cpus = sysconf(_SC_NPROCESSORS_ONLN);

	tier_read_long(KMM_DIR "/migrate_threads", &threads);
	if (threads < 1)
		threads = 1;
	if (cpus > 0 && threads > cpus)
		threads = cpus;
	return threads * (BATCH_BYTES / page_size()) + ISOLATED_SLACK;
}

static bool case_migrate_refused(void)
{
	unsigned long bound = isolated_bound(), most = 0, now;
	unsigned long failed, moved;
	struct pool p = { 0 };
	bool ok = true;
	double end;
	int i;

	failed = vmstat_now(MIGRATE_FAILED);
	moved = vmstat_now(MIGRATED);
	env.sh->stop_workers = 0;
	for (i = 0; i < REFUSED_WORKERS; i++)
		pool_add(&p, refused_worker, NULL, 0);
	end = tier_now() + env.case_seconds;
	while (tier_now() < end) {
		tier_vmstat_refresh();
		now = node_isolated(env.slow);
		if (now != ULONG_MAX && now > most)
			most = now;
		pool_poll(&p);
		usleep(REFUSED_POLL_US);
	}
	__atomic_store_n(&env.sh->stop_workers, 1, __ATOMIC_RELAXED);
	pool_drain(&p, tier_now() + REAP_TIMEOUT_MS / 1000.0);
	ok = outcome_ok("migrate_refused", &p.out, false);
	tier_vmstat_refresh();
	failed = vmstat_now(MIGRATE_FAILED) - failed;
	moved = vmstat_now(MIGRATED) - moved;
	ksft_print_msg("migrate_refused: %lu pages migrated, %lu failed\n",
		       moved, failed);
	ksft_print_msg("migrate_refused: at most %lu pages of node %d isolated, bound %lu\n",
		       most, env.slow, bound);
	if (most > bound) {
		ksft_print_msg("migrate_refused: more isolated than the copiers migrate\n");
		ok = false;
	}
	if (!isolated_drained("migrate_refused"))
		ok = false;
	if (ok && !failed)
		return case_skip("no migration failed: nothing was refused");
	return ok;
}

/* ------------------------------------------------------------ faults */

static const char * const fault_dirs[] = {
	DEBUGFS "/failslab", DEBUGFS "/fail_page_alloc",
};

static void fault_dir_set(const char *dir, const char *file, const char *val)
{
	char path[256];

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	write_file(path, val);
}

static long fault_times_left(const char *dir)
{
	char path[256];
	long v = 0;

	snprintf(path, sizeof(path), "%s/times", dir);
	tier_read_long(path, &v);
	return v;
}

/*
 * Arm failslab and fail_page_alloc for the tasks that set make-it-fail
 * alone.  Sleeping page allocations stay exempt: a failed page fault only
 * retries, but non-sleeping ones, the daemon's migration targets among
 * them, fail.  The task filter goes on before the probability, so that
 * no other task ever sees an injected failure.
 */
static void faults_arm(void)
{
	char times[TIER_VALUE_LEN];
	size_t i;

	snprintf(times, sizeof(times), "%ld", FAULT_TIMES);
	fault_dir_set(DEBUGFS "/failslab", "ignore-gfp-wait", "N");
	fault_dir_set(DEBUGFS "/fail_page_alloc", "ignore-gfp-wait", "Y");
	fault_dir_set(DEBUGFS "/fail_page_alloc", "ignore-gfp-highmem", "N");
	fault_dir_set(DEBUGFS "/fail_page_alloc", "min-order", "0");
	for (i = 0; i < ARRAY_SIZE(fault_dirs); i++) {
		fault_dir_set(fault_dirs[i], "verbose", "0");
		fault_dir_set(fault_dirs[i], "task-filter", "Y");
		fault_dir_set(fault_dirs[i], "interval", "1");
		fault_dir_set(fault_dirs[i], "times", times);
		fault_dir_set(fault_dirs[i], "probability",
			      FAULT_PROBABILITY_STR);
	}
}

/*
 * Disarm in the reverse order: probability 0 while the filter still
 * spares this task, and only then lift the filter.  Lifting it first
 * would let the next write fail, and leave every task in the machine
 * failing allocations until the end of the run.  Returns false if a
 * probability could not be zeroed.
 */
static bool faults_disarm(void)
{
	bool ok = true;
	size_t i;

	for (i = 0; i < ARRAY_SIZE(fault_dirs); i++) {
		char path[256];
		long v = -1;

		fault_dir_set(fault_dirs[i], "probability", "0");
		fault_dir_set(fault_dirs[i], "times", "0");
		snprintf(path, sizeof(path), "%s/probability", fault_dirs[i]);
		if (tier_read_long(path, &v) || v) {
			ksft_print_msg("%s: probability %ld, not 0\n",
				       fault_dirs[i], v);
			ok = false;
			continue;
		}
		fault_dir_set(fault_dirs[i], "task-filter", "N");
	}
	return ok;
}

/* The pid of the kmmscand thread, or -1. */
static pid_t daemon_pid(void)
{
	char path[300], comm[TIER_VALUE_LEN];
	struct dirent *de;
	pid_t pid = -1;
	DIR *d = opendir("/proc");

	if (!d)
		return -1;
	while ((de = readdir(d))) {
		if (de->d_name[0] < '0' || de->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/comm", de->d_name);
		if (!tier_read_str(path, comm, sizeof(comm)) &&
		    !strcmp(comm, "kmmscand")) {
			pid = atoi(de->d_name);
			break;
		}
	}
	closedir(d);
	return pid;
}

static int set_make_it_fail(pid_t pid, bool on)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/make-it-fail", pid);
	return write_file(path, on ? "1" : "0");
}

/*
 * A churn worker whose own allocations fail now and then.  Its text and
 * libraries are locked in first: earlier cases' pressure may have
 * reclaimed them, and a read of the executable that fails under injection
 * ends in SIGBUS from the fault, a failure of the test and not of the
 * kernel under test.  Its sets are mapped later, so they stay unlocked and
 * scanned.
 */
static int faulty_worker(void *arg)
{
	if (mlockall(MCL_CURRENT))
		return sys_fail();
	if (set_make_it_fail(getpid(), true))
		return sys_fail();
	return churn_until(*(double *)arg, true);
}

static bool case_fault_injection(unsigned long *injected)
{
	unsigned long before = *injected;
	pid_t daemon = daemon_pid();
	bool ok;
	size_t i;

	if (access(DEBUGFS "/failslab", F_OK) ||
	    access(DEBUGFS "/fail_page_alloc", F_OK))
		return case_skip("no failslab/fail_page_alloc in %s", DEBUGFS);
	faults_armed = true;
	faults_arm();
	if (daemon > 0)
		set_make_it_fail(daemon, true);
	ok = run_workers("fault_injection", faulty_worker, FAULT_WORKERS, true);
	if (daemon > 0)
		set_make_it_fail(daemon, false);
	for (i = 0; i < ARRAY_SIZE(fault_dirs); i++) {
		long left = fault_times_left(fault_dirs[i]);

		ksft_print_msg("fault_injection: %s: %ld failures injected\n",
			       fault_dirs[i], FAULT_TIMES - left);
		*injected += FAULT_TIMES - left;
	}
	faults_armed = !faults_disarm();
	ok = ok && !faults_armed;
	if (ok && *injected == before)
		return case_skip("no failure was injected");
	return ok;
}

/* ------------------------------------------------------------ knobs */

static const char * const bad_inputs[] = {
	"abc", "-5", "99999999999999999999999", "18446744073709551616",
	"\n", " ", "1x",
};

#define NR_BAD	((int)ARRAY_SIZE(bad_inputs))

static char long_input[LONG_INPUT_LEN + 1], huge_input[HUGE_INPUT_LEN + 1];

static void bad_inputs_init(void)
{
	memset(long_input, '9', LONG_INPUT_LEN);
	memset(huge_input, '7', HUGE_INPUT_LEN);
}

/* Knob-specific bad values, beyond the generic ones. */
static const char *special_bad(int k)
{
	const char *name = knobs[k].name;

	if (!strcmp(name, "scan_enabled") || !strcmp(name, "smart_scan") ||
	    !strcmp(name, "pmd_young") || !strcmp(name, "skip_idle_mm") ||
	    !strcmp(name, "scan_by_default"))
		return "2";
	if (!strcmp(name, "target_node"))
		return "4096";
	if (!strcmp(name, "/proc/sys/kernel/numa_balancing"))
		return "5";
	if (!strcmp(name, "scan_sleep_ms"))
		return "0";
	if (!strcmp(name, "nice"))
		return "20";
	if (!strcmp(name, "migrate_threads"))
		return "9";
	return NULL;
}

/*
 * Bad input @i for knob @k: the generic ones, a long and a huge number,
 * then one the knob's own range refuses (NULL if it has none).
 */
static const char *bad_input(int k, int i)
{
	/* A negative nice level is a good one */
	if (i < NR_BAD && bad_inputs[i][0] == '-' &&
	    !strcmp(knobs[k].name, "nice"))
		return NULL;
	if (i < NR_BAD)
		return bad_inputs[i];
	if (i == NR_BAD)
		return long_input;
	if (i == NR_BAD + 1)
		return huge_input;
	return special_bad(k);
}

/* Inputs bad_input() knows for each knob. */
#define NR_BAD_INPUTS	(NR_BAD + 3)

/*
 * Feed knob @k every bad input: each must fail with EINVAL and leave the
 * value as it was. Returns the number of violations.
 */
static int knob_bad_round(int k, bool quiet)
{
	char before[TIER_VALUE_LEN], after[TIER_VALUE_LEN];
	int i, ret, bad = 0;

	if (knob_read(k, before, sizeof(before)))
		return 1;
	for (i = 0; i < NR_BAD_INPUTS; i++) {
		const char *in = bad_input(k, i);

		if (!in)
			continue;
		ret = knob_write(k, in);
		count_op();
		if (knob_read(k, after, sizeof(after)))
			return bad + 1;
		if (ret == -EINVAL && !strcmp(before, after))
			continue;
		bad++;
		if (!quiet)
			ksft_print_msg("%s: '%.24s%s' returned %d, value '%s' -> '%s'\n",
				       knobs[k].name, in,
				       strlen(in) > 24 ? "..." : "", ret,
				       before, after);
	}
	/* A zero-length write may succeed, but changes nothing either */
	ret = knob_write(k, "");
	if ((ret && ret != -EINVAL) || knob_read(k, after, sizeof(after)) ||
	    strcmp(before, after)) {
		bad++;
		if (!quiet)
			ksft_print_msg("%s: empty write returned %d, value '%s' -> '%s'\n",
				       knobs[k].name, ret, before, after);
	}
	return bad;
}

/*
 * Write good values to random knobs until @arg's deadline: every write
 * succeeds, or gets EINVAL for a range knob (the other end of the range
 * may be in the way), and every read is a number.
 */
static int knob_writer(void *arg)
{
	double end = *(double *)arg;
	char buf[TIER_VALUE_LEN], *e;

	while (tier_now() < end) {
		int k = rng() % NR_KNOBS;
		int ret;

		if (!knob_present[k])
			continue;
		ret = knob_write(k, knobs[k].good[rng() % 3]);
		count_op();
		if (ret && !(ret == -EINVAL && knobs[k].range)) {
			ksft_print_msg("%s: good write returned %d\n",
				       knobs[k].name, ret);
			return EXIT_ERROR;
		}
		if (knob_read(k, buf, sizeof(buf)))
			return EXIT_ERROR;
		strtol(buf, &e, 10);
		if (e == buf || *e)
			return EXIT_ERROR;
	}
	return EXIT_OK;
}

/* Hammer every knob with bad input from several writers at once. */
static int bad_writer(void *arg)
{
	int round, k, bad = 0;

	(void)arg;
	for (round = 0; round < BAD_ROUNDS; round++)
		for (k = 0; k < NR_KNOBS; k++)
			if (knob_present[k])
				bad += knob_bad_round(k, true);
	return bad ? EXIT_ERROR : EXIT_OK;
}

static bool knobs_ranges_sane(void)
{
	const char *names[][3] = {
		{ "scan_period_min_ms", "mm_scan_period_ms",
		  "scan_period_max_ms" },
		{ "scan_size_min_mb", "scan_size_mb", "scan_size_max_mb" },
	};
	char buf[TIER_VALUE_LEN];
	long v[3];
	int r, i;

	for (r = 0; r < 2; r++) {
		for (i = 0; i < 3; i++) {
			int k = knob_index(names[r][i]);

			if (k < 0 || knob_read(k, buf, sizeof(buf)))
				return false;
			v[i] = strtol(buf, NULL, 10);
		}
		if (v[0] > v[1] || v[1] > v[2]) {
			ksft_print_msg("knobs: %s %ld > %s %ld > %s %ld broken\n",
				       names[r][0], v[0], names[r][1], v[1],
				       names[r][2], v[2]);
			return false;
		}
	}
	return true;
}

/* Name every knob in KMM_DIR this program does not know: not covered. */
static void knobs_report_unknown(void)
{
	struct dirent *de;
	DIR *d = opendir(KMM_DIR);

	if (!d)
		return;
	while ((de = readdir(d)))
		if (de->d_name[0] != '.' && knob_index(de->d_name) < 0)
			ksft_print_msg("knobs_under_load: %s/%s not covered\n",
				       KMM_DIR, de->d_name);
	closedir(d);
}

static bool case_knobs_under_load(void)
{
	double end = tier_now() + env.case_seconds / 2;
	struct pool p = { 0 };
	int i, k, bad = 0;
	bool ok;

	knobs_report_unknown();
	/* Good values from several writers while workers are scanned */
	for (i = 0; i < CHURN_WORKERS; i++)
		pool_add(&p, churn_worker, &end, 0);
	for (i = 0; i < KNOB_WRITERS; i++)
		pool_add(&p, knob_writer, &end, 0);
	pool_drain(&p, end + REAP_TIMEOUT_MS / 1000.0);
	ok = outcome_ok("knobs_under_load: good writers", &p.out, false);
	ok &= knobs_ranges_sane();

	/* Bad input, one writer: EINVAL and the value of the last good write */
	knobs_fastest();
	for (k = 0; k < NR_KNOBS; k++) {
		if (!knob_present[k])
			continue;
		knob_write(k, knobs[k].good[1]);
		bad += knob_bad_round(k, false);
	}
	ksft_print_msg("knobs_under_load: %d bad writes not refused as they should\n",
		       bad);
	ok &= !bad;

	/* Bad input, several writers at once, under load */
	knobs_fastest();
	memset(&p, 0, sizeof(p));
	end = tier_now() + env.case_seconds / 2;
	for (i = 0; i < CHURN_WORKERS; i++)
		pool_add(&p, churn_worker, &end, 0);
	for (i = 0; i < KNOB_WRITERS; i++)
		pool_add(&p, bad_writer, NULL, 0);
	pool_drain(&p, end + REAP_TIMEOUT_MS / 1000.0);
	ok &= outcome_ok("knobs_under_load: bad writers", &p.out, false);
	knobs_fastest();
	return ok;
}

/* ------------------------------------------------------------ isolation */

struct isolation_cond {
	struct tier_region control;
	long moved;
};

static bool control_promoted(void *arg)
{
	struct isolation_cond *c = arg;

	c->moved = tier_pages_on_node(&c->control, env.top);
	return c->moved > 0;
}

/*
 * Keep @kept hot with @control beside it, until the control set has
 * promotions and at least ISOLATION_MIN_MS passed; return the pages of
 * @kept that left the slow node, or -1 if the control never moved.
 */
static long watch_isolation(struct tier_region *kept)
{
	struct isolation_cond c;
	struct tier_region both[2];
	double until = tier_now() + ISOLATION_MIN_MS / 1000.0;
	bool moved;

	if (tier_alloc_on_node(&c.control, WORKER_SIZE, env.slow, false))
		return -1;
	both[0] = c.control;
	both[1] = *kept;
	tier_clear_refs(both, 2);
	moved = tier_wait(both, 2, control_promoted, &c, ISOLATION_MAX_MS);
	while (tier_now() < until)
		tier_touch(both, 2);
	tier_free(&c.control);
	if (!moved)
		return -1;
	return tier_nr_pages(kept) - tier_pages_on_node(kept, env.slow);
}

static int bound_worker(void *arg)
{
	unsigned long mask = 1UL << env.slow;
	struct tier_region r = { .size = WORKER_SIZE };
	long left;

	(void)arg;
	r.addr = mmap(NULL, r.size, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (r.addr == MAP_FAILED)
		return EXIT_NOMEM;
	madvise(r.addr, r.size, MADV_NOHUGEPAGE);
	if (mbind(r.addr, r.size, MPOL_BIND, &mask, TIER_MAX_NODES + 1, 0))
		return sys_fail();
	stamp(r.addr, 0, r.size, 1);
	left = watch_isolation(&r);
	ksft_print_msg("isolation: MPOL_BIND: %ld of %lu pages left node %d\n",
		       left, tier_nr_pages(&r), env.slow);
	if (check_stamp(r.addr, 0, r.size, 1, STAMP_EXACT))
		return EXIT_CORRUPT;
	return left == 0 ? EXIT_OK : EXIT_MOVED;
}

/* In a cpuset whose mems are the slow node only. */
static int cpuset_worker(void *arg)
{
	struct tier_region r;
	long left;

	(void)arg;
	if (cgroup_join(CPUSET_CGROUP))
		return sys_fail();
	/*
	 * The control set must be allowed on the top node to show that the
	 * daemon runs; the cpuset confines this whole task, so watch a
	 * sibling's promotions instead: the kept set is judged alone.
	 */
	if (tier_alloc_on_node(&r, WORKER_SIZE, env.slow, false))
		return EXIT_NOMEM;
	stamp(r.addr, 0, r.size, 2);
	tier_clear_refs(&r, 1);
	touch_for(r.addr, r.size, *(double *)arg);
	left = tier_nr_pages(&r) - tier_pages_on_node(&r, env.slow);
	ksft_print_msg("isolation: cpuset.mems=%d: %ld of %lu pages left node %d\n",
		       env.slow, left, tier_nr_pages(&r), env.slow);
	if (check_stamp(r.addr, 0, r.size, 2, STAMP_EXACT))
		return EXIT_CORRUPT;
	return left == 0 ? EXIT_OK : EXIT_MOVED;
}

static bool cpuset_create(void)
{
	char mems[16];

	if (!cgroup2_ready() || !cgroup_enable("cpuset"))
		return false;
	mkdir(CPUSET_CGROUP, 0755);
	snprintf(mems, sizeof(mems), "%d", env.slow);
	return !write_file(CPUSET_CGROUP "/cpuset.mems", mems);
}

static bool case_isolation(void)
{
	double watch = ISOLATION_MIN_MS / 1000.0;
	struct pool p = { 0 };
	bool ok;

	if (env.case_seconds > watch)
		watch = env.case_seconds;
	pool_add(&p, bound_worker, NULL, 0);
	if (cpuset_create())
		pool_add(&p, cpuset_worker, &watch, 0);
	else
		ksft_print_msg("isolation: no cgroup v2 cpuset controller: cpuset part not run\n");
	pool_drain(&p, tier_now() + ISOLATION_MAX_MS / 1000.0 + watch);
	ok = outcome_ok("isolation", &p.out, false);
	rmdir(CPUSET_CGROUP);
	return ok;
}

/* ------------------------------------------------------------ main */

struct stress_case {
	const char *name;
	bool (*run)(void);
	/* Its share of the run, relative to the other cases' weights. */
	unsigned int weight;
};

static unsigned long faults_injected;

static bool case_faults(void)
{
	return case_fault_injection(&faults_injected);
}

static const struct stress_case cases[] = {
	{ "fork_exit_storm",	case_fork_exit_storm,	20 },
	{ "vma_churn",		case_vma_churn,		15 },
	{ "thp_split_collapse",	case_thp_split_collapse, 10 },
	{ "thp_mid_step",	case_thp_mid_step,	5 },
	{ "exec_storm",		case_exec_storm,	10 },
	{ "ksm_merged",		case_ksm_merged,	10 },
	{ "shmem_and_file",	case_shmem_and_file,	10 },
	{ "kill_mid_promotion",	case_kill_mid_promotion, 10 },
	{ "oom_mid_promotion",	case_oom_mid_promotion,	10 },
	{ "target_node_full",	case_target_node_full,	10 },
	{ "memory_hotplug",	case_memory_hotplug,	5 },
	{ "fast_tier_offline",	case_fast_tier_offline,	5 },
	{ "migrate_refused",	case_migrate_refused,	5 },
	{ "fault_injection",	case_faults,		15 },
	{ "knobs_under_load",	case_knobs_under_load,	10 },
	{ "isolation",		case_isolation,		5 },
};

#define NR_CASES	((int)ARRAY_SIZE(cases))

/* Condition for tier_wait(): the daemon's counters stood still a while. */
struct idle_cond {
	unsigned long last;
	double since;
};

static bool daemon_idle(void *arg)
{
	struct idle_cond *idle = arg;
	unsigned long sum = vmstat_now(MM_SCANS) + vmstat_now(MIGRATED) +
			    vmstat_now(MIGRATE_FAILED);

	if (sum != idle->last) {
		idle->last = sum;
		idle->since = tier_now();
		return false;
	}
	return tier_now() - idle->since >= IDLE_QUIET_MS / 1000.0;
}

/*
 * The counters a promotion touches must agree once the daemon is idle:
 * every folio kmmscand migrated counts in pgpromote_success (NUMA
 * balancing, switched on by the knob writers now and then, only adds to
 * it).  pgpromote_candidate is NUMA balancing's alone.
 */
static bool counters_consistent(const struct stats *a, const struct stats *b)
{
	unsigned long migrated = delta(a, b, MIGRATED);
	bool ok = true;

	if (migrated > delta(a, b, PGPROMOTE_SUCCESS)) {
		ksft_print_msg("kmmscand_migrated %lu > pgpromote_success %lu\n",
			       migrated, delta(a, b, PGPROMOTE_SUCCESS));
		ok = false;
	}
	return ok;
}

/* The report's figures, on one line the harness looks for. */
static void print_summary(double seconds, unsigned long migrated,
			  unsigned long promoted, int failed)
{
	printf("# STRESS-SUMMARY seconds=%.0f processes=%lu operations=%lu",
	       seconds, env.started, env.sh->ops);
	printf(" pages_migrated=%lu pgpromote_success=%lu", migrated,
	       promoted);
	printf(" faults_injected=%lu corrupt_pages=%lu failed_cases=%d\n",
	       faults_injected, env.sh->corrupt_pages, failed);
}

static void setup(double seconds)
{
	struct tier_layout layout;
	unsigned int weights = 0;
	int i;

	if (getuid())
		ksft_exit_skip("needs root\n");
	if (access(KMM_DIR, F_OK))
		ksft_exit_skip("no %s: kernel without kmmscand\n", KMM_DIR);
	if (tier_read_layout(&layout) ||
	    tier_pick_nodes(&layout, &env.top, &env.slow))
		ksft_exit_skip("no two memory tiers with memory\n");
	env.sh = mmap(NULL, sizeof(*env.sh), PROT_READ | PROT_WRITE,
		      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (env.sh == MAP_FAILED)
		ksft_exit_fail_msg("mmap: %s\n", strerror(errno));
	for (i = 0; i < NR_CASES; i++)
		weights += cases[i].weight;
	env.case_seconds = seconds / weights;
	bad_inputs_init();
	knobs_save();
	atexit(cleanup_at_exit);
	signal(SIGTERM, on_signal);
	signal(SIGINT, on_signal);
	knobs_fastest();
	rng_seed();
	if (access(DEBUGFS "/failslab", F_OK))
		mount("none", DEBUGFS, "debugfs", 0, NULL);
}

int main(int argc, char **argv)
{
	const char *from_env = getenv("KMM_STRESS_SECONDS");
	double seconds = DEFAULT_SECONDS, start, unit;
	struct idle_cond idle = { 0 };
	struct stats a, b;
	int i, opt, failed = 0;
	bool ok;

	/* Whole lines: children print too, and the output is a file */
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (from_env && atof(from_env) > 0)
		seconds = atof(from_env);
	while ((opt = getopt(argc, argv, "t:")) != -1) {
		if (opt != 't' || atof(optarg) <= 0) {
			fprintf(stderr, "usage: %s [-t SECONDS]\n", argv[0]);
			return KSFT_FAIL;
		}
		seconds = atof(optarg);
	}
	ksft_print_header();
	setup(seconds);
	ksft_set_plan(NR_CASES + 1);
	ksft_print_msg("top node %d, slow node %d, %.0f s of stress\n",
		       env.top, env.slow, seconds);
	unit = env.case_seconds;
	stats_read(&a);
	start = tier_now();
	for (i = 0; i < NR_CASES; i++) {
		env.case_seconds = unit * cases[i].weight;
		if (env.case_seconds < MIN_CASE_SECONDS)
			env.case_seconds = MIN_CASE_SECONDS;
		knobs_fastest();
		case_skip_reason[0] = '\0';
		ok = cases[i].run();
		failed += !ok;
		if (ok && case_skip_reason[0])
			ksft_test_result_skip("%s: %s\n", cases[i].name,
					      case_skip_reason);
		else
			ksft_test_result(ok, "%s\n", cases[i].name);
	}
	/* Let the daemon finish what it queued before the counters are read */
	knob_set("scan_enabled", "0");
	idle.since = tier_now();
	tier_wait(NULL, 0, daemon_idle, &idle, IDLE_TIMEOUT_MS);
	stats_read(&b);
	ok = counters_consistent(&a, &b);
	failed += !ok;
	ksft_test_result(ok, "counters_consistent\n");
	for (i = 0; i < NR_STATS; i++)
		ksft_print_msg("%s +%lu\n", stat_name[i], delta(&a, &b, i));
	if (knobs_restore())
		ksft_print_msg("could not restore every knob\n");
	print_summary(tier_now() - start, delta(&a, &b, MIGRATED),
		      delta(&a, &b, PGPROMOTE_SUCCESS), failed);
	ksft_finished();
}
