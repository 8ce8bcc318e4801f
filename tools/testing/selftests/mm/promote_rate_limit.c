// SPDX-License-Identifier: GPL-2.0
/*
 * The promotion rate limit, kernel.numa_balancing_rate_limit_mbps: one limit
 * per target node that every promotion path obeys, together.
 *
 * old_name_mirrors:  kernel.numa_balancing_promote_rate_limit_MBps, the
 *                    first name, reads and writes the same value
 * bad_input:         negative, non-numeric, empty and out-of-range writes
 *                    to either name fail with EINVAL and change nothing
 * rate.holds:        with a hot set on the slow node that wants more than
 *                    the limit, pgpromote_success grows at the limit
 *                    (at most 10% above it, at most 25% below it where
 *                    the paths can reach it) over RATE_MEASURE_MS
 * rate.zero_stops:   a limit of 0 promotes nothing
 * rate.own_candidates: pgpromote_candidate counts NUMA balancing's
 *                    candidates only: it grows at least as much as NUMA
 *                    balancing promotes, and not at all while kmmscand
 *                    alone promotes (NUMA balancing's hot threshold
 *                    follows that counter)
 *
 * The rate tests run for NUMA balancing in tiering mode alone
 * (kernel.numa_balancing=2), for kmmscand alone and for both at once; the
 * kmmscand variants skip on a kernel without it.  Every knob a test touches
 * is restored after it, and once more when the program exits, in case a
 * test was killed on a timeout before it could restore it.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../kselftest_harness.h"
#include "tiering_util.h"

#define MIB			(1024 * 1024UL)

#define RATE_LIMIT_MBPS		"/proc/sys/kernel/numa_balancing_rate_limit_mbps"
#define RATE_LIMIT_OLD		"/proc/sys/kernel/numa_balancing_promote_rate_limit_MBps"
#define KMMSCAND_ENABLED	"/sys/kernel/mm/kmmscand/scan_enabled"

/*
 * The limit the rate tests set, in MB/s: 512 pages a second.  Low enough
 * that the debug kernel under TCG offers more candidates than that every
 * second, by either path, so that the limit and not the machine sets the
 * rate.
 */
#define TEST_LIMIT_MBPS		2
/*
 * The hot set: 64 seconds' worth at the limit, so that it is still mostly
 * on the slow node, and still asking, when the measurement ends.
 */
#define HOT_SIZE		(128 * MIB)
/*
 * How long the rate is measured.  Windows of one second start at the first
 * request after the last one ended, so an interval of N seconds holds N or
 * N + 1 windows' grants: 20 s keeps that edge to 5%, half the tolerance.
 */
#define RATE_MEASURE_MS		(20 * 1000)
/* How far above the limit the measured rate may be, in percent. */
#define RATE_TOLERANCE_PCT	10
/*
 * How far below the limit a path that can reach it may stay, in percent.
 * Wider than above: a shortfall only means that promotion paused (under
 * TCG a run with both paths once measured 1.72 MB/s against 2), while the
 * upper bound is what the limit promises.
 */
#define RATE_SHORTFALL_PCT	25
/*
 * How long a path may take to start promoting: NUMA balancing waits
 * numa_balancing_scan_delay_ms and a scan period before its first hint
 * fault, kmmscand a scan period; the debug kernel under TCG is slow.
 */
#define START_TIMEOUT_MS	(60 * 1000)
/*
 * After the first promotion, let the windows settle into their pace before
 * measuring: a few seconds, each one window.
 */
#define SETTLE_MS		(3 * 1000)
/*
 * own_candidates: promotions to wait for, a few seconds at the limit;
 * NUMA balancing alone reaches it slowly (see the rate fixture).
 */
#define OWN_PROMOTED_PAGES	256
/* Access time with a limit of 0: ample time for either path to promote. */
#define ZERO_MS			(10 * 1000)

/* Harness timeouts: start, settle and measure, placement, and margin. */
#define RATE_TEST_TIMEOUT_S	180
#define ZERO_TEST_TIMEOUT_S	120

/* Values of the knobs before the program ran, restored when it exits. */
static struct {
	char limit[TIER_VALUE_LEN];
	char numab[TIER_VALUE_LEN];
	char kmmscand[TIER_VALUE_LEN];
	bool has_limit;
	bool has_numab;
	bool has_kmmscand;
} saved;

static void __attribute__((constructor)) save_knobs(void)
{
	saved.has_limit = !tier_read_str(RATE_LIMIT_MBPS, saved.limit,
					 sizeof(saved.limit));
	saved.has_numab = !tier_read_str(TIER_NUMA_BALANCING, saved.numab,
					 sizeof(saved.numab));
	saved.has_kmmscand = !tier_read_str(KMMSCAND_ENABLED, saved.kmmscand,
					    sizeof(saved.kmmscand));
}

/* Restore every knob; the number of knobs that could not be restored. */
static int restore_knobs(void)
{
	int failed = 0;

	if (saved.has_limit && tier_write_str(RATE_LIMIT_MBPS, saved.limit))
		failed++;
	if (saved.has_numab && tier_write_str(TIER_NUMA_BALANCING, saved.numab))
		failed++;
	if (saved.has_kmmscand &&
	    tier_write_str(KMMSCAND_ENABLED, saved.kmmscand))
		failed++;
	return failed;
}

static void __attribute__((destructor)) restore_knobs_at_exit(void)
{
	restore_knobs();
}

/* Skip unless the kernel has NUMA balancing, which the limit comes with. */
static bool have_numa_balancing(void)
{
	return !access(TIER_NUMA_BALANCING, F_OK);
}

static long read_limit(const char *path)
{
	long value = -1;

	if (tier_read_long(path, &value))
		return -1;
	return value;
}

TEST(old_name_mirrors)
{
	if (!have_numa_balancing())
		SKIP(return, "kernel without NUMA balancing");
	ASSERT_TRUE(saved.has_limit) {
		TH_LOG("no %s", RATE_LIMIT_MBPS);
	}
	ASSERT_EQ(read_limit(RATE_LIMIT_MBPS), read_limit(RATE_LIMIT_OLD));

	ASSERT_EQ(0, tier_write_long(RATE_LIMIT_MBPS, 1234));
	EXPECT_EQ(1234, read_limit(RATE_LIMIT_OLD));
	ASSERT_EQ(0, tier_write_long(RATE_LIMIT_OLD, 4321));
	EXPECT_EQ(4321, read_limit(RATE_LIMIT_MBPS));
	ASSERT_EQ(0, tier_write_long(RATE_LIMIT_OLD, 0));
	EXPECT_EQ(0, read_limit(RATE_LIMIT_MBPS));

	EXPECT_EQ(0, restore_knobs());
}

/*
 * Writes both names must refuse.  "\n" is what "echo > file" writes; a
 * write of no bytes at all is a no-op for every sysctl, not an error.
 * 2147483648 is one past the largest limit (INT_MAX), 4294967296 past
 * what an unsigned int holds.
 */
static const char * const bad_limits[] = {
	"-1", "abc", "\n", " ", "12abc", "2147483648", "4294967296",
};

TEST(bad_input)
{
	const char * const paths[] = { RATE_LIMIT_MBPS, RATE_LIMIT_OLD };
	unsigned int p, i;

	if (!have_numa_balancing())
		SKIP(return, "kernel without NUMA balancing");
	ASSERT_TRUE(saved.has_limit) {
		TH_LOG("no %s", RATE_LIMIT_MBPS);
	}
	for (p = 0; p < ARRAY_SIZE(paths); p++) {
		ASSERT_EQ(0, tier_write_long(RATE_LIMIT_MBPS, 777));
		for (i = 0; i < ARRAY_SIZE(bad_limits); i++) {
			EXPECT_EQ(-EINVAL, tier_write_str(paths[p],
							  bad_limits[i])) {
				TH_LOG("%s accepted \"%s\"", paths[p],
				       bad_limits[i]);
			}
			EXPECT_EQ(777, read_limit(RATE_LIMIT_MBPS));
			EXPECT_EQ(777, read_limit(RATE_LIMIT_OLD));
		}
	}
	EXPECT_EQ(0, restore_knobs());
}

/* Start the promotion paths a variant names. */
static int start_paths(bool numab, bool kmmscand)
{
	int ret = 0;

	if (numab)
		ret = tier_write_long(TIER_NUMA_BALANCING, TIER_NUMAB_TIERING);
	if (!ret && kmmscand)
		ret = tier_write_str(KMMSCAND_ENABLED, "1");
	return ret;
}

static const char *paths_name(bool numab, bool kmmscand)
{
	if (numab && kmmscand)
		return "NUMA balancing + kmmscand";
	return numab ? "NUMA balancing" : "kmmscand";
}

FIXTURE(rate)
{
	int top;
	int slow;
	int setup_err;
};

/*
 * Which promotion paths run, and whether they keep up with the limit.
 * NUMA balancing alone does not: every hint fault the limit refuses counts
 * as a failed migration, and task_numa_work() doubles the scan period of a
 * task whose migrations fail, so its demand falls far below the limit
 * (0.2 MB/s against 2 MB/s here).  For it the test only checks that the
 * limit is never exceeded.
 */
FIXTURE_VARIANT(rate)
{
	bool numab;
	bool kmmscand;
	bool reaches_limit;
};

FIXTURE_VARIANT_ADD(rate, numab)
{
	.numab = true,
	.kmmscand = false,
	.reaches_limit = false,
};

FIXTURE_VARIANT_ADD(rate, kmmscand)
{
	.numab = false,
	.kmmscand = true,
	.reaches_limit = true,
};

FIXTURE_VARIANT_ADD(rate, both)
{
	.numab = true,
	.kmmscand = true,
	.reaches_limit = true,
};

FIXTURE_SETUP(rate)
{
	struct tier_layout layout;

	if (!have_numa_balancing())
		SKIP(return, "kernel without NUMA balancing");
	ASSERT_TRUE(saved.has_limit) {
		TH_LOG("no %s", RATE_LIMIT_MBPS);
	}
	if (variant->kmmscand && !saved.has_kmmscand)
		SKIP(return, "kernel without kmmscand");
	if (tier_read_layout(&layout) ||
	    tier_pick_nodes(&layout, &self->top, &self->slow))
		SKIP(return, "no two memory tiers with memory");
	/*
	 * The teardown runs only once the setup has returned: from here on,
	 * record failures for the test to assert instead of asserting.
	 * Nothing promotes until the test has placed its hot set.
	 */
	self->setup_err = tier_write_long(TIER_NUMA_BALANCING, 0);
	if (!self->setup_err && saved.has_kmmscand)
		self->setup_err = tier_write_str(KMMSCAND_ENABLED, "0");
	TH_LOG("top node %d, slow node %d, promotion by %s", self->top,
	       self->slow, paths_name(variant->numab, variant->kmmscand));
}

/*
 * Restore in the parent: it runs even when a failed assertion ended the
 * test.  The test's memory went with the test process.
 */
FIXTURE_TEARDOWN_PARENT(rate)
{
	EXPECT_EQ(0, restore_knobs());
}

/* Condition: a time (tier_now()) has come; tier_wait() touches until then. */
static bool time_reached(void *arg)
{
	return tier_now() >= *(double *)arg;
}

/* Keep @hot hot for @ms milliseconds. */
static void touch_for(const struct tier_region *hot, unsigned int ms)
{
	double until = tier_now() + ms / 1000.0;

	tier_wait(hot, 1, time_reached, &until, ms + 1000);
}

TEST_F_TIMEOUT(rate, holds, RATE_TEST_TIMEOUT_S)
{
	struct tier_counter started = { .name = "pgpromote_success" };
	unsigned long page_size = sysconf(_SC_PAGESIZE);
	unsigned long before, after, promoted, expected;
	struct tier_region hot;
	long top0, top1;
	double t0, t1;

	ASSERT_EQ(0, self->setup_err);
	ASSERT_EQ(0, tier_write_long(RATE_LIMIT_MBPS, TEST_LIMIT_MBPS));
	ASSERT_EQ(0, tier_alloc_on_node(&hot, HOT_SIZE, self->slow, false));
	ASSERT_EQ(0, tier_vmstat("pgpromote_success", &before));
	ASSERT_EQ(0, start_paths(variant->numab, variant->kmmscand));

	/* Wait for the first promotions, then for a steady pace. */
	started.min = before + 1;
	ASSERT_TRUE(tier_wait(&hot, 1, tier_counter_reached, &started,
			      START_TIMEOUT_MS)) {
		TH_LOG("nothing promoted in %d s", START_TIMEOUT_MS / 1000);
	}
	touch_for(&hot, SETTLE_MS);

	ASSERT_EQ(0, tier_vmstat("pgpromote_success", &before));
	top0 = tier_pages_on_node(&hot, self->top);
	t0 = tier_now();
	touch_for(&hot, RATE_MEASURE_MS);
	ASSERT_EQ(0, tier_vmstat("pgpromote_success", &after));
	t1 = tier_now();
	top1 = tier_pages_on_node(&hot, self->top);

	promoted = after - before;
	expected = TEST_LIMIT_MBPS * MIB / page_size * (t1 - t0);
	TH_LOG("Measured: limit %d MB/s, %.2f MB/s over %.1f s (%s)",
	       TEST_LIMIT_MBPS, (double)promoted * page_size / MIB / (t1 - t0),
	       t1 - t0, paths_name(variant->numab, variant->kmmscand));
	TH_LOG("hot set: +%ld pages on node %d", top1 - top0, self->top);
	/* Still asking at the end, or the rate measured the hot set. */
	EXPECT_LT(top1, (long)tier_nr_pages(&hot));

	if (variant->reaches_limit)
		EXPECT_GE(promoted * 100, expected * (100 - RATE_SHORTFALL_PCT));
	EXPECT_LE(promoted * 100, expected * (100 + RATE_TOLERANCE_PCT));
	tier_free(&hot);
}

TEST_F_TIMEOUT(rate, zero_stops, ZERO_TEST_TIMEOUT_S)
{
	unsigned long before, after;
	struct tier_region hot;
	long on_top;

	ASSERT_EQ(0, self->setup_err);
	ASSERT_EQ(0, tier_write_long(RATE_LIMIT_MBPS, 0));
	ASSERT_EQ(0, tier_alloc_on_node(&hot, HOT_SIZE, self->slow, false));
	ASSERT_EQ(0, tier_vmstat("pgpromote_success", &before));
	ASSERT_EQ(0, start_paths(variant->numab, variant->kmmscand));

	touch_for(&hot, ZERO_MS);
	on_top = tier_pages_on_node(&hot, self->top);
	ASSERT_EQ(0, tier_vmstat("pgpromote_success", &after));
	TH_LOG("limit 0: %ld hot pages on node %d, pgpromote_success +%lu",
	       on_top, self->top, after - before);
	/*
	 * The census of the hot set is exact; the counter may still fold in
	 * per-CPU deltas of earlier tests, so it is only logged.
	 */
	EXPECT_EQ(0, on_top);
	tier_free(&hot);
}

/* Stop both paths; a candidate counted after this is not the test's. */
static int stop_paths(void)
{
	int ret = tier_write_long(TIER_NUMA_BALANCING, 0);

	if (!ret && saved.has_kmmscand)
		ret = tier_write_str(KMMSCAND_ENABLED, "0");
	return ret;
}

TEST_F_TIMEOUT(rate, own_candidates, RATE_TEST_TIMEOUT_S)
{
	struct tier_counter promoted = { .name = "pgpromote_success" };
	unsigned long cand0, cand1, done0, done1, lo, hi;
	struct tier_region hot;

	if (variant->numab && variant->kmmscand)
		SKIP(return, "two paths: their candidates are not told apart");
	ASSERT_EQ(0, self->setup_err);
	ASSERT_EQ(0, tier_write_long(RATE_LIMIT_MBPS, TEST_LIMIT_MBPS));
	ASSERT_EQ(0, tier_alloc_on_node(&hot, HOT_SIZE, self->slow, false));
	/* The counters are node counters: fold the CPUs' deltas first */
	ASSERT_EQ(0, tier_vmstat_refresh());
	ASSERT_EQ(0, tier_vmstat("pgpromote_candidate", &cand0));
	ASSERT_EQ(0, tier_vmstat("pgpromote_success", &done0));
	ASSERT_EQ(0, start_paths(variant->numab, variant->kmmscand));

	promoted.min = done0 + OWN_PROMOTED_PAGES;
	ASSERT_TRUE(tier_wait(&hot, 1, tier_counter_reached, &promoted,
			      START_TIMEOUT_MS)) {
		TH_LOG("%lu pages promoted in %d s", promoted.last - done0,
		       START_TIMEOUT_MS / 1000);
	}
	ASSERT_EQ(0, stop_paths());
	ASSERT_EQ(0, tier_vmstat_refresh());
	ASSERT_EQ(0, tier_vmstat("pgpromote_candidate", &cand1));
	ASSERT_EQ(0, tier_vmstat("pgpromote_success", &done1));
	TH_LOG("%s: pgpromote_success +%lu, pgpromote_candidate +%lu",
	       paths_name(variant->numab, variant->kmmscand), done1 - done0,
	       cand1 - cand0);
	/* Each page NUMA balancing promoted at least; none of kmmscand's */
	lo = variant->numab ? done1 - done0 : 0;
	hi = variant->numab ? ULONG_MAX : 0;
	EXPECT_GE(cand1 - cand0, lo);
	EXPECT_LE(cand1 - cand0, hi);
	tier_free(&hot);
}

TEST_HARNESS_MAIN
