/* SPDX-License-Identifier: GPL-2.0 */
/*
 * KUnit tests for the pure parts of kmmscand: the adaptive scan update, the
 * knob validation, the choice of the promotion target, the smart scan
 * schedule and the region history.
 *
 * Included at the end of mm/kmmscand.c, so that the static helpers can be
 * called directly.
 */

#ifdef CONFIG_KMMSCAND_KUNIT_TEST

#ifndef _KMMSCAND_KUNIT_H
#define _KMMSCAND_KUNIT_H

#include <kunit/test.h>

/* The default knobs, independent of what sysfs may have been set to */
static const struct kmmscand_tuning kmmscand_test_tuning = {
	.period_ms = { .min = 400, .init = 2000, .max = 5000 },
	.size_mb = { .min = 512, .init = 4096, .max = 16384 },
	.min_accessed = 100,
};

static void kmmscand_test_state(struct kunit *test, unsigned long period,
				unsigned long size, unsigned long x,
				unsigned long y, unsigned long want_period,
				unsigned long want_size, unsigned long want_x)
{
	struct kmmscand_scan_state st = {
		.period_ms = period,
		.size_mb = size,
		.prev_accessed = x,
	};

	kmmscand_update_scan_state(&st, y, 0, false, &kmmscand_test_tuning);
	KUNIT_EXPECT_EQ(test, st.period_ms, want_period);
	KUNIT_EXPECT_EQ(test, st.size_mb, want_size);
	KUNIT_EXPECT_EQ(test, st.prev_accessed, want_x);
}

/* X = 0, Y = 0: period up by SCAN_PERIOD_TUNE_PERCENT, size halved */
static void kmmscand_test_idle_stays_idle(struct kunit *test)
{
	kmmscand_test_state(test, 2000, 4096, 0, 0, 2300, 2048, 0);
	kmmscand_test_state(test, 2300, 2048, 0, 0, 2645, 1024, 0);
}

/* X = 0, Y > 0: period shifted down by SCAN_PERIOD_CHANGE_SCALE, size max */
static void kmmscand_test_idle_turns_busy(struct kunit *test)
{
	kmmscand_test_state(test, 4000, 1024, 0, 1000, 500, 16384, 1000);
	/* 2000 >> 3 = 250, clamped to the minimum */
	kmmscand_test_state(test, 2000, 4096, 0, 1000, 400, 16384, 1000);
}

/* X > 0, Y = 0: period shifted up by SCAN_PERIOD_CHANGE_SCALE, same size */
static void kmmscand_test_busy_turns_idle(struct kunit *test)
{
	kmmscand_test_state(test, 400, 4096, 500, 0, 3200, 4096, 0);
	/* 2000 << 3 = 16000, clamped to the maximum */
	kmmscand_test_state(test, 2000, 1024, 500, 0, 5000, 1024, 0);
}

/*
 * X > 0, Y = 0 after a scan that isolated most of what it found: the hot
 * pages left the slow tier; the period grows by SCAN_PERIOD_TUNE_PERCENT
 * only, the size is kept, and from then on the mm is idle as usual.
 */
static void kmmscand_test_moved_up_stays_short(struct kunit *test)
{
	const struct kmmscand_tuning *t = &kmmscand_test_tuning;
	struct kmmscand_scan_state st = {
		.period_ms = 400,
		.size_mb = 4096,
		.prev_accessed = 500,
		.prev_isolated_most = true,
	};

	kmmscand_update_scan_state(&st, 0, 0, false, t);
	KUNIT_EXPECT_EQ(test, st.period_ms, 460UL);
	KUNIT_EXPECT_EQ(test, st.size_mb, 4096UL);
	KUNIT_EXPECT_FALSE(test, st.prev_isolated_most);
	kmmscand_update_scan_state(&st, 0, 0, false, t);
	KUNIT_EXPECT_EQ(test, st.period_ms, 529UL);
	KUNIT_EXPECT_EQ(test, st.size_mb, 2048UL);

	/* A busy scan records what it isolated, for the next one */
	st = (struct kmmscand_scan_state){ .period_ms = 400, .size_mb = 4096 };
	kmmscand_update_scan_state(&st, 500, 0, true, t);
	KUNIT_EXPECT_TRUE(test, st.prev_isolated_most);
	kmmscand_update_scan_state(&st, 500, 0, false, t);
	KUNIT_EXPECT_FALSE(test, st.prev_isolated_most);
	/* Then Y = 0 is activity vanishing */
	kmmscand_update_scan_state(&st, 0, 0, false, t);
	KUNIT_EXPECT_EQ(test, st.period_ms, 3200UL);

	/* Below min_accessed nothing was found that counts */
	st = (struct kmmscand_scan_state){ .period_ms = 400, .size_mb = 4096 };
	kmmscand_update_scan_state(&st, 99, 0, true, t);
	KUNIT_EXPECT_FALSE(test, st.prev_isolated_most);
}

/*
 * The young pages of a priming scan are activity for the period that
 * follows it, not accesses that the next scan compares with: an mm that
 * populated its memory and then waits is still idle when the next scan
 * finds nothing, and its period grows by SCAN_PERIOD_TUNE_PERCENT only.
 */
static void kmmscand_test_primed_then_idle(struct kunit *test)
{
	const struct kmmscand_tuning *t = &kmmscand_test_tuning;
	struct kmmscand_scan_state st = { .period_ms = 2000, .size_mb = 4096 };

	kmmscand_update_scan_state(&st, 0, 2048, false, t);
	KUNIT_EXPECT_EQ(test, st.period_ms, 400UL);
	KUNIT_EXPECT_EQ(test, st.size_mb, 16384UL);
	KUNIT_EXPECT_EQ(test, st.prev_accessed, 0UL);
	kmmscand_update_scan_state(&st, 0, 0, false, t);
	KUNIT_EXPECT_EQ(test, st.period_ms, 460UL);

	/* Accesses found after the priming are a busy mm as before */
	st = (struct kmmscand_scan_state){ .period_ms = 2000, .size_mb = 4096 };
	kmmscand_update_scan_state(&st, 0, 2048, false, t);
	kmmscand_update_scan_state(&st, 512, 0, true, t);
	KUNIT_EXPECT_EQ(test, st.period_ms, 400UL);
	KUNIT_EXPECT_EQ(test, st.prev_accessed, 512UL);
	KUNIT_EXPECT_TRUE(test, st.prev_isolated_most);
}

/* Most is at least half of a count that is not zero */
static void kmmscand_test_isolated_most(struct kunit *test)
{
	KUNIT_EXPECT_TRUE(test, kmmscand_isolated_most(500, 250));
	KUNIT_EXPECT_TRUE(test, kmmscand_isolated_most(500, 500));
	KUNIT_EXPECT_FALSE(test, kmmscand_isolated_most(500, 249));
	KUNIT_EXPECT_FALSE(test, kmmscand_isolated_most(501, 250));
	KUNIT_EXPECT_TRUE(test, kmmscand_isolated_most(501, 251));
	KUNIT_EXPECT_TRUE(test, kmmscand_isolated_most(1, 1));
	KUNIT_EXPECT_FALSE(test, kmmscand_isolated_most(0, 0));
}

/* X > 0, Y > 0: period down by SCAN_PERIOD_TUNE_PERCENT, size doubled */
static void kmmscand_test_busy_stays_busy(struct kunit *test)
{
	kmmscand_test_state(test, 2000, 4096, 500, 700, 1700, 8192, 700);
	kmmscand_test_state(test, 1700, 8192, 700, 700, 1445, 16384, 700);
}

static void kmmscand_test_clamps(struct kunit *test)
{
	/* Idle at the longest period and the smallest size stays there */
	kmmscand_test_state(test, 5000, 512, 0, 0, 5000, 512, 0);
	/* Busy at the shortest period and the largest size stays there */
	kmmscand_test_state(test, 400, 16384, 500, 500, 400, 16384, 500);
	/* A state left outside new knob ranges is pulled back in */
	kmmscand_test_state(test, 100, 100000, 500, 500, 400, 16384, 500);
	kmmscand_test_state(test, 90000, 1, 0, 0, 5000, 512, 0);
}

static void kmmscand_test_threshold(struct kunit *test)
{
	struct kmmscand_tuning t = kmmscand_test_tuning;
	struct kmmscand_scan_state st = {
		.period_ms = 2000,
		.size_mb = 4096,
	};

	/* One page short of the threshold is idle, and is remembered as 0 */
	kmmscand_test_state(test, 2000, 4096, 0, 99, 2300, 2048, 0);
	/* The threshold itself counts */
	kmmscand_test_state(test, 2000, 4096, 0, 100, 400, 16384, 100);
	/* A busy mm falling below the threshold is treated as turning idle */
	kmmscand_test_state(test, 2000, 4096, 300, 99, 5000, 4096, 0);

	/* With no threshold, a single page is activity */
	t.min_accessed = 0;
	kmmscand_update_scan_state(&st, 1, 0, false, &t);
	KUNIT_EXPECT_EQ(test, st.period_ms, 400UL);
	KUNIT_EXPECT_EQ(test, st.size_mb, 16384UL);
	KUNIT_EXPECT_EQ(test, st.prev_accessed, 1UL);
}

static void kmmscand_test_parse_ulong(struct kunit *test)
{
	unsigned long val = 7;

	KUNIT_EXPECT_EQ(test, kmmscand_parse_ulong("42\n", 1, 100, &val), 0);
	KUNIT_EXPECT_EQ(test, val, 42UL);
	KUNIT_EXPECT_EQ(test, kmmscand_parse_ulong("1", 1, 100, &val), 0);
	KUNIT_EXPECT_EQ(test, kmmscand_parse_ulong("100", 1, 100, &val), 0);
	KUNIT_EXPECT_EQ(test, val, 100UL);

	val = 7;
	KUNIT_EXPECT_EQ(test, kmmscand_parse_ulong("0", 1, 100, &val), -EINVAL);
	KUNIT_EXPECT_EQ(test, kmmscand_parse_ulong("101", 1, 100, &val), -EINVAL);
	KUNIT_EXPECT_EQ(test, kmmscand_parse_ulong("-1", 0, 100, &val), -EINVAL);
	KUNIT_EXPECT_EQ(test, kmmscand_parse_ulong("abc", 0, 100, &val), -EINVAL);
	KUNIT_EXPECT_EQ(test, kmmscand_parse_ulong("12abc", 0, 100, &val), -EINVAL);
	KUNIT_EXPECT_EQ(test, kmmscand_parse_ulong("", 0, 100, &val), -EINVAL);
	KUNIT_EXPECT_EQ(test, kmmscand_parse_ulong("99999999999999999999999", 0,
						   ULONG_MAX, &val), -EINVAL);
	KUNIT_EXPECT_EQ(test, val, 7UL);
}

static void kmmscand_test_range_set(struct kunit *test)
{
	struct kmmscand_range r = { .min = 400, .init = 2000, .max = 5000 };

	/* Each field may move within its neighbours */
	KUNIT_EXPECT_EQ(test, kmmscand_range_set(&r, KMMSCAND_RANGE_MIN, 2000), 0);
	KUNIT_EXPECT_EQ(test, kmmscand_range_set(&r, KMMSCAND_RANGE_MAX, 2000), 0);
	KUNIT_EXPECT_EQ(test, kmmscand_range_set(&r, KMMSCAND_RANGE_MAX, 6000), 0);
	KUNIT_EXPECT_EQ(test, kmmscand_range_set(&r, KMMSCAND_RANGE_INIT, 6000), 0);
	KUNIT_EXPECT_EQ(test, r.min, 2000UL);
	KUNIT_EXPECT_EQ(test, r.init, 6000UL);
	KUNIT_EXPECT_EQ(test, r.max, 6000UL);

	/* min above init or max, init outside, max below: refused, unchanged */
	KUNIT_EXPECT_EQ(test, kmmscand_range_set(&r, KMMSCAND_RANGE_MIN, 6001),
			-EINVAL);
	KUNIT_EXPECT_EQ(test, kmmscand_range_set(&r, KMMSCAND_RANGE_INIT, 1999),
			-EINVAL);
	KUNIT_EXPECT_EQ(test, kmmscand_range_set(&r, KMMSCAND_RANGE_INIT, 6001),
			-EINVAL);
	KUNIT_EXPECT_EQ(test, kmmscand_range_set(&r, KMMSCAND_RANGE_MAX, 5999),
			-EINVAL);
	KUNIT_EXPECT_EQ(test, r.min, 2000UL);
	KUNIT_EXPECT_EQ(test, r.init, 6000UL);
	KUNIT_EXPECT_EQ(test, r.max, 6000UL);
}

static void kmmscand_test_parse_target_node(struct kunit *test)
{
	nodemask_t eligible = NODE_MASK_NONE;
	int nid = 5;

	node_set(0, eligible);

	KUNIT_EXPECT_EQ(test, kmmscand_parse_target_node("-1\n", &eligible, &nid), 0);
	KUNIT_EXPECT_EQ(test, nid, NUMA_NO_NODE);
	KUNIT_EXPECT_EQ(test, kmmscand_parse_target_node("0", &eligible, &nid), 0);
	KUNIT_EXPECT_EQ(test, nid, 0);

	KUNIT_EXPECT_EQ(test, kmmscand_parse_target_node("-2", &eligible, &nid),
			-EINVAL);
	KUNIT_EXPECT_EQ(test, kmmscand_parse_target_node("node0", &eligible, &nid),
			-EINVAL);
	KUNIT_EXPECT_EQ(test, kmmscand_parse_target_node("", &eligible, &nid),
			-EINVAL);
	KUNIT_EXPECT_EQ(test, kmmscand_parse_target_node("4096", &eligible, &nid),
			-EINVAL);
	KUNIT_EXPECT_EQ(test, nid, 0);

	/* A node that is not eligible (not online, or not top tier) */
	KUNIT_EXPECT_EQ(test, kmmscand_parse_target_node("1", &eligible, &nid),
			-EINVAL);
	KUNIT_EXPECT_EQ(test, nid, 0);
}

static void kmmscand_test_pick_node(struct kunit *test)
{
	/* Nodes 2, 0 and 1 as seen from somewhere nearest to node 2 */
	static const int order[] = { 2, 0, 1 };
	nodemask_t allowed = NODE_MASK_NONE, room = NODE_MASK_NONE;
	int full;

	if (MAX_NUMNODES < 3)
		kunit_skip(test, "needs at least 3 possible nodes");

	node_set(0, allowed);
	node_set(1, allowed);
	node_set(2, allowed);

	/* Nothing has room: no target, wake the nearest */
	KUNIT_EXPECT_EQ(test, kmmscand_pick_node(order, 3, &allowed, &room, &full),
			NUMA_NO_NODE);
	KUNIT_EXPECT_EQ(test, full, 2);

	/* The nearest with room wins */
	node_set(1, room);
	KUNIT_EXPECT_EQ(test, kmmscand_pick_node(order, 3, &allowed, &room, &full), 1);
	KUNIT_EXPECT_EQ(test, full, NUMA_NO_NODE);
	node_set(0, room);
	KUNIT_EXPECT_EQ(test, kmmscand_pick_node(order, 3, &allowed, &room, &full), 0);
	node_set(2, room);
	KUNIT_EXPECT_EQ(test, kmmscand_pick_node(order, 3, &allowed, &room, &full), 2);

	/* A node outside the allowed set never is a target */
	node_clear(2, allowed);
	KUNIT_EXPECT_EQ(test, kmmscand_pick_node(order, 3, &allowed, &room, &full), 0);
	nodes_clear(room);
	node_set(2, room);
	KUNIT_EXPECT_EQ(test, kmmscand_pick_node(order, 3, &allowed, &room, &full),
			NUMA_NO_NODE);
	/* ...and its kswapd is not the one to wake */
	KUNIT_EXPECT_EQ(test, full, 0);

	/* Nothing allowed: no target and nothing to wake */
	nodes_clear(allowed);
	KUNIT_EXPECT_EQ(test, kmmscand_pick_node(order, 3, &allowed, &room, &full),
			NUMA_NO_NODE);
	KUNIT_EXPECT_EQ(test, full, NUMA_NO_NODE);

	/* An empty candidate list */
	KUNIT_EXPECT_EQ(test, kmmscand_pick_node(order, 0, &allowed, &room, &full),
			NUMA_NO_NODE);
	KUNIT_EXPECT_EQ(test, full, NUMA_NO_NODE);
}

static void kmmscand_test_mpol_allows(struct kunit *test)
{
	struct mempolicy pol = { };

	/* The default policy of a task: local preference that may move */
	pol.mode = MPOL_PREFERRED;
	pol.flags = MPOL_F_MOF | MPOL_F_MORON;
	KUNIT_EXPECT_TRUE(test, kmmscand_mpol_allows(&pol));

	/* Any policy that does not opt in to migration on fault */
	pol.flags = 0;
	KUNIT_EXPECT_FALSE(test, kmmscand_mpol_allows(&pol));
	pol.mode = MPOL_INTERLEAVE;
	KUNIT_EXPECT_FALSE(test, kmmscand_mpol_allows(&pol));
	pol.mode = MPOL_BIND;
	KUNIT_EXPECT_FALSE(test, kmmscand_mpol_allows(&pol));

	/* Node sets chosen by the user, even with MPOL_F_NUMA_BALANCING */
	pol.flags = MPOL_F_MOF | MPOL_F_MORON;
	KUNIT_EXPECT_FALSE(test, kmmscand_mpol_allows(&pol));
	pol.mode = MPOL_PREFERRED_MANY;
	KUNIT_EXPECT_FALSE(test, kmmscand_mpol_allows(&pol));
}

/* KSM's schedule before it was shared, for ages up to its u8 limit */
static unsigned int kmmscand_test_ksm_skip_age(unsigned int age)
{
	if (age <= 3)
		return 1;
	if (age <= 5)
		return 2;
	if (age <= 8)
		return 4;
	return 8;
}

static void kmmscand_test_skips_ksm(struct kunit *test)
{
	unsigned int age;

	for (age = SMART_SCAN_MIN_AGE; age <= U8_MAX; age++)
		KUNIT_EXPECT_EQ_MSG(test, smart_scan_skips(age, 8),
				    kmmscand_test_ksm_skip_age(age),
				    "age %u", age);
}

static void kmmscand_test_skips_doubling(struct kunit *test)
{
	/* Last age of each count, up to the kmmscand limit */
	static const struct {
		unsigned int age, skips;
	} last[] = {
		{ 3, 1 }, { 5, 2 }, { 8, 4 }, { 13, 8 }, { 22, 16 }, { 39, 32 },
	};
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(last); i++) {
		KUNIT_EXPECT_EQ(test, smart_scan_skips(last[i].age, 32),
				last[i].skips);
		KUNIT_EXPECT_EQ(test, smart_scan_skips(last[i].age + 1, 32),
				min(last[i].skips * 2, 32U));
	}
	KUNIT_EXPECT_EQ(test, smart_scan_skips(UINT_MAX, 32), 32U);
	/* The cap cuts any step, and no cap means no skip */
	KUNIT_EXPECT_EQ(test, smart_scan_skips(6, 3), 3U);
	KUNIT_EXPECT_EQ(test, smart_scan_skips(100, 1), 1U);
	KUNIT_EXPECT_EQ(test, smart_scan_skips(100, 0), 0U);
}

/*
 * The schedule reaches its cap within the age field.  That the fields are
 * disjoint and hold their largest values is checked at build time, in
 * kmmscand_hist_lookup().
 */
static void kmmscand_test_hist_encoding(struct kunit *test)
{
	KUNIT_EXPECT_EQ(test, smart_scan_skips(FIELD_MAX(KMMSCAND_HIST_AGE),
					       KMMSCAND_SMART_SCAN_SKIPS_LIMIT),
			KMMSCAND_SMART_SCAN_SKIPS_LIMIT);
}

/*
 * A scan that finds nothing mapped over a range forgets the regions wholly
 * inside it, not those it only touches, and frees a chunk once none of its
 * regions has a history left.
 */
static void kmmscand_test_forget_unmapped(struct kunit *test)
{
	unsigned long i, nr = 2 * KMMSCAND_HIST_CHUNK_REGIONS;
	struct kmmscand_mm_slot *ms;
	u32 *hist;

	ms = kunit_kzalloc(test, sizeof(*ms), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, ms);
	ms->region.index = KMMSCAND_NO_REGION;
	xa_init(&ms->history);
	xa_init(&ms->heat);
	for (i = 0; i < nr; i++) {
		hist = kmmscand_hist_lookup(ms, i);
		KUNIT_ASSERT_NOT_NULL(test, hist);
		*hist = KMMSCAND_HIST_PRIMED;
	}

	/* From inside region 1 to inside region 600: 2 to 599 go */
	kmmscand_forget_unmapped(ms, PMD_SIZE + PAGE_SIZE,
				 600 * PMD_SIZE + PAGE_SIZE);
	KUNIT_EXPECT_EQ(test, *kmmscand_hist_lookup(ms, 1),
			KMMSCAND_HIST_PRIMED);
	KUNIT_EXPECT_EQ(test, *kmmscand_hist_lookup(ms, 2), 0);
	KUNIT_EXPECT_EQ(test, *kmmscand_hist_lookup(ms, 599), 0);
	KUNIT_EXPECT_EQ(test, *kmmscand_hist_lookup(ms, 600),
			KMMSCAND_HIST_PRIMED);

	/* From region 1 to the end: the second chunk is freed, not the first */
	kmmscand_forget_unmapped(ms, PMD_SIZE, ULONG_MAX);
	KUNIT_EXPECT_NOT_NULL(test, xa_load(&ms->history, 0));
	KUNIT_EXPECT_NULL(test, xa_load(&ms->history, 1));

	kmmscand_forget_unmapped(ms, 0, ULONG_MAX);
	KUNIT_EXPECT_TRUE(test, xa_empty(&ms->history));
	xa_destroy(&ms->history);
}

/*
 * Visit a region @nr times with nothing found in it, and record in @runs
 * the lengths of the runs of visits that passed over it.  Return the
 * number of runs.
 */
static unsigned int kmmscand_test_cold_runs(struct kunit *test, u32 *hist,
					    unsigned int max_skips,
					    unsigned int nr,
					    unsigned int *runs,
					    unsigned int max_runs)
{
	unsigned int i, n = 0, run = 0;
	enum kmmscand_visit v;

	for (i = 0; i < nr; i++) {
		v = kmmscand_region_visit(hist, true, max_skips);
		if (v == KMMSCAND_VISIT_SKIP) {
			run++;
			continue;
		}
		KUNIT_EXPECT_EQ(test, v, KMMSCAND_VISIT_SCAN);
		kmmscand_region_done(hist, v, true, false);
		if (run && n < max_runs)
			runs[n++] = run;
		run = 0;
	}
	return n;
}

static void kmmscand_test_schedule(struct kunit *test)
{
	static const unsigned int ksm[] = { 1, 2, 4, 8, 8, 8 };
	static const unsigned int limit[] = { 1, 2, 4, 8, 16, 32, 32 };
	unsigned int runs[8], n, i;
	enum kmmscand_visit v;
	u32 h = 0;

	/* A new region is primed, and is not aged by that */
	v = kmmscand_region_visit(&h, true, 8);
	KUNIT_EXPECT_EQ(test, v, KMMSCAND_VISIT_PRIME);
	kmmscand_region_done(&h, v, true, true);
	KUNIT_EXPECT_EQ(test, h, (u32)KMMSCAND_HIST_PRIMED);

	/* Read at ages 0 to 3, then passed over for 1, 2, 4, 8, 8, ... */
	for (i = 0; i < SMART_SCAN_MIN_AGE + 1; i++) {
		v = kmmscand_region_visit(&h, true, 8);
		KUNIT_EXPECT_EQ(test, v, KMMSCAND_VISIT_SCAN);
		kmmscand_region_done(&h, v, true, false);
	}
	n = kmmscand_test_cold_runs(test, &h, 8, 60, runs, ARRAY_SIZE(ksm));
	KUNIT_ASSERT_EQ(test, n, (unsigned int)ARRAY_SIZE(ksm));
	for (i = 0; i < n; i++)
		KUNIT_EXPECT_EQ(test, runs[i], ksm[i]);

	/* Up to the largest cap, through a saturated age */
	h = KMMSCAND_HIST_PRIMED;
	n = kmmscand_test_cold_runs(test, &h, KMMSCAND_SMART_SCAN_SKIPS_LIMIT,
				    200, runs, ARRAY_SIZE(limit));
	KUNIT_ASSERT_EQ(test, n, (unsigned int)ARRAY_SIZE(limit));
	for (i = 0; i < n; i++)
		KUNIT_EXPECT_EQ(test, runs[i], limit[i]);
	KUNIT_EXPECT_EQ(test, u32_get_bits(h, KMMSCAND_HIST_AGE),
			FIELD_MAX(KMMSCAND_HIST_AGE));
}

static void kmmscand_test_access_starts_over(struct kunit *test)
{
	unsigned int i;
	enum kmmscand_visit v;
	u32 h = KMMSCAND_HIST_PRIMED;

	for (i = 0; i < 20; i++) {
		v = kmmscand_region_visit(&h, true, 8);
		if (v != KMMSCAND_VISIT_SKIP)
			kmmscand_region_done(&h, v, true, false);
	}
	KUNIT_EXPECT_GT(test, u32_get_bits(h, KMMSCAND_HIST_AGE), 8);

	/* Run the region out of skips, then find an access in it */
	do {
		v = kmmscand_region_visit(&h, true, 8);
	} while (v == KMMSCAND_VISIT_SKIP);
	kmmscand_region_done(&h, v, true, true);
	KUNIT_EXPECT_EQ(test, h, (u32)KMMSCAND_HIST_PRIMED);
	for (i = 0; i < SMART_SCAN_MIN_AGE + 1; i++)
		KUNIT_EXPECT_EQ(test, kmmscand_region_visit(&h, true, 8),
				KMMSCAND_VISIT_SCAN);
}

static void kmmscand_test_no_slow_tier(struct kunit *test)
{
	unsigned int i, skipped = 0, run = 0, longest = 0;
	enum kmmscand_visit v;
	u32 h = 0;

	/* No slow-tier memory: remembered, and aged like a cold region */
	for (i = 0; i < 30; i++) {
		v = kmmscand_region_visit(&h, true, 8);
		if (v == KMMSCAND_VISIT_SKIP) {
			skipped++;
			continue;
		}
		KUNIT_EXPECT_EQ(test, v, KMMSCAND_VISIT_PRIME);
		kmmscand_region_done(&h, v, false, false);
		KUNIT_EXPECT_TRUE(test, h & KMMSCAND_HIST_NO_SLOW);
		KUNIT_EXPECT_FALSE(test, h & KMMSCAND_HIST_PRIMED);
	}
	KUNIT_EXPECT_GT(test, skipped, 15U);

	/* Passed over for KMMSCAND_NO_SLOW_SKIPS_SCALE times the cap */
	for (i = 0; i < 100; i++) {
		v = kmmscand_region_visit(&h, true, 8);
		if (v == KMMSCAND_VISIT_SKIP) {
			longest = max(longest, ++run);
			continue;
		}
		run = 0;
		kmmscand_region_done(&h, v, false, false);
	}
	KUNIT_EXPECT_EQ(test, longest,
			min(KMMSCAND_NO_SLOW_SKIPS_SCALE * 8,
			    KMMSCAND_SMART_SCAN_SKIPS_LIMIT));

	/* Slow-tier memory shows up: primed, and the region starts over */
	do {
		v = kmmscand_region_visit(&h, true, 8);
	} while (v == KMMSCAND_VISIT_SKIP);
	KUNIT_EXPECT_EQ(test, v, KMMSCAND_VISIT_PRIME);
	kmmscand_region_done(&h, v, true, true);
	KUNIT_EXPECT_EQ(test, h, (u32)KMMSCAND_HIST_PRIMED);
	KUNIT_EXPECT_EQ(test, kmmscand_region_visit(&h, true, 8),
			KMMSCAND_VISIT_SCAN);

	/* ...and when it goes, the region must be primed again */
	kmmscand_region_done(&h, KMMSCAND_VISIT_SCAN, false, false);
	KUNIT_EXPECT_EQ(test, kmmscand_region_visit(&h, true, 8),
			KMMSCAND_VISIT_PRIME);
}

static void kmmscand_test_smart_scan_off(struct kunit *test)
{
	u32 h = u32_replace_bits(KMMSCAND_HIST_PRIMED, 20, KMMSCAND_HIST_AGE);
	u32 before;

	h = u32_replace_bits(h, 5, KMMSCAND_HIST_SKIPS);
	before = h;
	/* Read every time, and the history does not move */
	KUNIT_EXPECT_EQ(test, kmmscand_region_visit(&h, false, 8),
			KMMSCAND_VISIT_SCAN);
	KUNIT_EXPECT_EQ(test, h, before);

	/* Skips left from a higher cap are cut to the current one */
	h = u32_replace_bits(h, 30, KMMSCAND_HIST_SKIPS);
	KUNIT_EXPECT_EQ(test, kmmscand_region_visit(&h, true, 2),
			KMMSCAND_VISIT_SKIP);
	KUNIT_EXPECT_EQ(test, u32_get_bits(h, KMMSCAND_HIST_SKIPS), 1);
}

static void kmmscand_test_pmd_old(struct kunit *test)
{
	u32 h = KMMSCAND_HIST_PRIMED, rest;
	unsigned int i, round;

	h = u32_replace_bits(h, 7, KMMSCAND_HIST_AGE);
	h = u32_replace_bits(h, 2, KMMSCAND_HIST_SKIPS);
	rest = h;

	/* Young: read, every time */
	for (i = 0; i < 5; i++)
		KUNIT_EXPECT_TRUE(test, kmmscand_pmd_visit(&h, true, true));
	KUNIT_EXPECT_EQ(test, h, rest);

	/*
	 * Old, while MGLRU clears the bit too: passed over at most
	 * KMMSCAND_PMD_OLD_MAX_SKIPS in a row
	 */
	for (round = 0; round < 3; round++) {
		for (i = 0; i < KMMSCAND_PMD_OLD_MAX_SKIPS; i++)
			KUNIT_EXPECT_FALSE(test,
					   kmmscand_pmd_visit(&h, false, true));
		KUNIT_EXPECT_TRUE(test, kmmscand_pmd_visit(&h, false, true));
		KUNIT_EXPECT_EQ(test, h, rest);
	}

	/* A young entry resets the count */
	KUNIT_EXPECT_FALSE(test, kmmscand_pmd_visit(&h, false, true));
	KUNIT_EXPECT_TRUE(test, kmmscand_pmd_visit(&h, true, true));
	KUNIT_EXPECT_EQ(test, h, rest);

	/* Otherwise passed over for as long as it stays old */
	for (i = 0; i < 4 * KMMSCAND_PMD_OLD_MAX_SKIPS; i++)
		KUNIT_EXPECT_FALSE(test, kmmscand_pmd_visit(&h, false, false));
	/* and read at once if MGLRU has begun to clear it meanwhile */
	KUNIT_EXPECT_TRUE(test, kmmscand_pmd_visit(&h, false, true));
	KUNIT_EXPECT_EQ(test, h, rest);
	KUNIT_EXPECT_FALSE(test, kmmscand_pmd_visit(&h, false, false));
	KUNIT_EXPECT_TRUE(test, kmmscand_pmd_visit(&h, true, false));
	KUNIT_EXPECT_EQ(test, h, rest);
}

/* Age a primed region until smart scan passes over it */
static void kmmscand_test_make_cold(struct kunit *test, u32 *hist)
{
	enum kmmscand_visit v;
	unsigned int i;

	*hist = KMMSCAND_HIST_PRIMED;
	for (i = 0; i < 40; i++) {
		v = kmmscand_region_visit(hist, true, 8);
		if (v == KMMSCAND_VISIT_SKIP)
			continue;
		kmmscand_region_done(hist, v, true, false);
		kmmscand_pmd_read_done(hist, v, false, true, false);
	}
	/* End on a read, with the longest run of skips ahead */
	do {
		v = kmmscand_region_visit(hist, true, 8);
	} while (v == KMMSCAND_VISIT_SKIP);
	kmmscand_region_done(hist, v, true, false);
	kmmscand_pmd_read_done(hist, v, false, true, false);
	KUNIT_ASSERT_EQ(test, u32_get_bits(*hist, KMMSCAND_HIST_SKIPS), 8);
}

static void kmmscand_test_pmd_recalls(struct kunit *test)
{
	enum kmmscand_visit v;
	u32 h;

	/* A cold region whose PMD entry turns young is read, and primed */
	kmmscand_test_make_cold(test, &h);
	KUNIT_EXPECT_FALSE(test, kmmscand_pmd_recalls(h, false));
	KUNIT_EXPECT_TRUE(test, kmmscand_pmd_recalls(h, true));
	KUNIT_EXPECT_EQ(test, kmmscand_read_visit(h), KMMSCAND_VISIT_SCAN);

	/* Found accessed: it starts over, and the entry is no noise */
	kmmscand_region_done(&h, KMMSCAND_VISIT_SCAN, true, true);
	kmmscand_pmd_read_done(&h, KMMSCAND_VISIT_SCAN, true, true, true);
	KUNIT_EXPECT_EQ(test, h, (u32)KMMSCAND_HIST_PRIMED);

	/* Young, yet nothing slow accessed: noise, no more recalls */
	kmmscand_test_make_cold(test, &h);
	kmmscand_region_done(&h, KMMSCAND_VISIT_SCAN, true, false);
	kmmscand_pmd_read_done(&h, KMMSCAND_VISIT_SCAN, true, true, false);
	KUNIT_EXPECT_TRUE(test, h & KMMSCAND_HIST_PMD_NOISY);
	KUNIT_EXPECT_FALSE(test, kmmscand_pmd_recalls(h, true));
	KUNIT_EXPECT_EQ(test, kmmscand_region_visit(&h, true, 8),
			KMMSCAND_VISIT_SKIP);

	/* ...until a read finds the entry old again */
	kmmscand_pmd_read_done(&h, KMMSCAND_VISIT_SCAN, false, true, false);
	KUNIT_EXPECT_FALSE(test, h & KMMSCAND_HIST_PMD_NOISY);
	KUNIT_EXPECT_TRUE(test, kmmscand_pmd_recalls(h, true));

	/* A priming read says nothing about the entry */
	v = KMMSCAND_VISIT_PRIME;
	h = 0;
	kmmscand_region_done(&h, v, true, false);
	kmmscand_pmd_read_done(&h, v, true, true, false);
	KUNIT_EXPECT_FALSE(test, h & KMMSCAND_HIST_PMD_NOISY);

	/* No slow-tier memory at the last read: nothing to recall it for */
	h = KMMSCAND_HIST_NO_SLOW;
	KUNIT_EXPECT_FALSE(test, kmmscand_pmd_recalls(h, true));
}

/*
 * kswapd keeps the promotion watermark free only on a node where kmmscand
 * found no room lately: never on one it never found full, as on every
 * node of a machine without a slow tier, where nothing is a candidate.
 */
static void kmmscand_test_wants_room(struct kunit *test)
{
	int nid = MAX_NUMNODES - 1;
	struct kmmscand_node *n = &kmmscand_nodes[nid];
	unsigned long saved = n->room_wanted_until;

	if (node_online(nid))
		kunit_skip(test, "node %d is online", nid);
	if (!READ_ONCE(kmmscand_scan_enabled))
		kunit_skip(test, "scanning is disabled");

	KUNIT_EXPECT_FALSE(test, kmmscand_wants_room(nid));
	n->room_wanted_until = jiffies +
			       msecs_to_jiffies(KMMSCAND_ROOM_WANTED_MS);
	KUNIT_EXPECT_TRUE(test, kmmscand_wants_room(nid));
	n->room_wanted_until = jiffies - 1;
	KUNIT_EXPECT_FALSE(test, kmmscand_wants_room(nid));
	n->room_wanted_until = saved;
}

/* Back-offs from a full node double, from the shortest to the longest */
static void kmmscand_test_backoff(struct kunit *test)
{
	unsigned int ms = 0;
	int steps = 0;

	KUNIT_EXPECT_EQ(test, kmmscand_next_backoff(0), KMMSCAND_BACKOFF_MIN_MS);
	KUNIT_EXPECT_EQ(test, kmmscand_next_backoff(KMMSCAND_BACKOFF_MIN_MS),
			2 * KMMSCAND_BACKOFF_MIN_MS);
	KUNIT_EXPECT_EQ(test, kmmscand_next_backoff(KMMSCAND_BACKOFF_MAX_MS),
			KMMSCAND_BACKOFF_MAX_MS);
	/* A node that stays full reaches the longest in a few back-offs */
	do {
		ms = kmmscand_next_backoff(ms);
		steps++;
	} while (ms < KMMSCAND_BACKOFF_MAX_MS && steps < 32);
	KUNIT_EXPECT_EQ(test, ms, KMMSCAND_BACKOFF_MAX_MS);
	KUNIT_EXPECT_EQ(test, steps,
			order_base_2(DIV_ROUND_UP(KMMSCAND_BACKOFF_MAX_MS,
						  KMMSCAND_BACKOFF_MIN_MS)) + 1);
}

/*
 * A node of two zones as a small machine has them, in pages: ZONE_DMA,
 * kept for other allocations by its lowmem reserve, and ZONE_DMA32, which
 * promotions allocate from.  The watermarks are those of a 2 GiB node.
 */
static pg_data_t *kmmscand_test_node(struct kunit *test,
				     unsigned long dma_free,
				     unsigned long dma32_free)
{
	static const unsigned long marks[][NR_WMARK] = {
		[ZONE_DMA] = { 64, 80, 96, 112 },
		[ZONE_DMA32] = { 8211, 10263, 12315, 14367 },
	};
	const unsigned long free[] = {
		[ZONE_DMA] = dma_free,
		[ZONE_DMA32] = dma32_free,
	};
	pg_data_t *pgdat = kunit_kzalloc(test, sizeof(*pgdat), GFP_KERNEL);
	int z;

	KUNIT_ASSERT_NOT_NULL(test, pgdat);
	pgdat->nr_zones = ZONE_DMA32 + 1;
	for (z = ZONE_DMA; z <= ZONE_DMA32; z++) {
		struct zone *zone = &pgdat->node_zones[z];

		memcpy(zone->_watermark, marks[z], sizeof(marks[z]));
		atomic_long_set(&zone->managed_pages, SZ_2G >> PAGE_SHIFT);
		atomic_long_set(&zone->vm_stat[NR_FREE_PAGES], free[z]);
	}
	pgdat->node_zones[ZONE_DMA].lowmem_reserve[ZONE_MOVABLE] = 1919;
	return pgdat;
}

/*
 * Room is checked for the whole batch taken so far, above the high
 * watermark; folio by folio only while a zone holds the node balanced for
 * kswapd, which then makes no room however often it is woken.
 */
static void kmmscand_test_has_room(struct kunit *test)
{
	const unsigned long batch = SZ_16M >> PAGE_SHIFT;
	const unsigned long thp = 1UL << PMD_ORDER;
	pg_data_t *pgdat;

	if (!IS_ENABLED(CONFIG_ZONE_DMA) || !IS_ENABLED(CONFIG_ZONE_DMA32))
		kunit_skip(test, "needs ZONE_DMA and ZONE_DMA32");

	/* The batch fits in ZONE_DMA32 above its high watermark */
	pgdat = kmmscand_test_node(test, 3840, 12315 + batch + 1);
	KUNIT_EXPECT_TRUE(test, kmmscand_has_room(pgdat, batch, 1));
	/*
	 * Not so one page more, though ZONE_DMA32 itself meets its promotion
	 * mark: a folio after others of the batch has no room, however small
	 */
	KUNIT_EXPECT_FALSE(test, kmmscand_has_room(pgdat, batch + 2, 1));
	KUNIT_EXPECT_FALSE(test, kmmscand_has_room(pgdat, batch + 2,
						   batch + 2));

	/* Full ZONE_DMA32, ZONE_DMA balanced through its reserve alone */
	pgdat = kmmscand_test_node(test, 2104, 11701);
	KUNIT_EXPECT_TRUE(test, kmmscand_has_room(pgdat, 88, 88));
	/* As the first folio of a batch only */
	KUNIT_EXPECT_FALSE(test, kmmscand_has_room(pgdat, 89, 1));
	KUNIT_EXPECT_FALSE(test, kmmscand_has_room(pgdat, batch, 1));
	/* A THP does not fit above the high watermark of either zone */
	KUNIT_EXPECT_FALSE(test, kmmscand_has_room(pgdat, batch, thp));

	/*
	 * ZONE_DMA below its promotion mark too: a wakeup makes kswapd
	 * demote, and only what fits above a high watermark goes meanwhile
	 */
	pgdat = kmmscand_test_node(test, 2030, 11701);
	KUNIT_EXPECT_FALSE(test, kmmscand_has_room(pgdat, batch, 1));
	KUNIT_EXPECT_TRUE(test, kmmscand_has_room(pgdat, 14, 14));
}

/*
 * A back-off starts over once the node took, or demotion freed, half the
 * room kswapd makes for promotions; the few pages kswapd frees on a node
 * with nothing to demote, which promotions then take, do not count.
 */
static void kmmscand_test_room_made(struct kunit *test)
{
	const unsigned long headroom = 2048;

	/* Nothing demotable: kswapd freed a few pages, promotions took them */
	KUNIT_EXPECT_FALSE(test, kmmscand_room_made(89, 0, headroom));
	/* Demotion made the room, the node's own allocations took it */
	KUNIT_EXPECT_TRUE(test, kmmscand_room_made(0, headroom, headroom));
	/* Promotions took half the room, whatever made it */
	KUNIT_EXPECT_TRUE(test, kmmscand_room_made(headroom / 2, 0, headroom));
	KUNIT_EXPECT_FALSE(test, kmmscand_room_made(headroom / 2 - 1,
						    headroom / 2 - 1, headroom));
}

/* A node is closed while its rate limit is spent or while backed off */
static void kmmscand_test_node_open(struct kunit *test)
{
	enum kmmscand_skip_reason reason = KMMSCAND_SKIP_COLD;
	const unsigned long now = 1000;
	struct kmmscand_node n = { };
	unsigned long until = 0;

	KUNIT_EXPECT_TRUE(test, kmmscand_node_open(&n, now, &until, &reason));
	/* Windows that ended are no reason */
	n.limited_until = now;
	n.full_until = now - 1;
	KUNIT_EXPECT_TRUE(test, kmmscand_node_open(&n, now, &until, &reason));

	n.full_until = now + 50;
	KUNIT_EXPECT_FALSE(test, kmmscand_node_open(&n, now, &until, &reason));
	KUNIT_EXPECT_EQ(test, until, now + 50);
	KUNIT_EXPECT_EQ(test, reason, KMMSCAND_SKIP_NODE_FULL);

	/* Both: the one that lasts longer decides */
	n.limited_until = now + 80;
	KUNIT_EXPECT_FALSE(test, kmmscand_node_open(&n, now, &until, &reason));
	KUNIT_EXPECT_EQ(test, until, now + 80);
	KUNIT_EXPECT_EQ(test, reason, KMMSCAND_SKIP_RATE_LIMITED);

	n.full_until = now;
	KUNIT_EXPECT_FALSE(test, kmmscand_node_open(&n, now, &until, &reason));
	KUNIT_EXPECT_EQ(test, until, now + 80);
	KUNIT_EXPECT_EQ(test, reason, KMMSCAND_SKIP_RATE_LIMITED);

	/* Across a jiffies wrap */
	n.limited_until = 10;
	n.full_until = 0;
	KUNIT_EXPECT_FALSE(test, kmmscand_node_open(&n, -5UL, &until, &reason));
	KUNIT_EXPECT_EQ(test, until, 10UL);
}

/* Heat counts reads that found an entry accessed, up and down, in 2 bits */
static void kmmscand_test_heat(struct kunit *test)
{
	struct kmmscand_heat heat = { };
	const unsigned int i = 7, j = 8;

	KUNIT_EXPECT_EQ(test, kmmscand_heat_note(&heat, i, false), 0U);
	KUNIT_EXPECT_EQ(test, kmmscand_heat_note(&heat, i, true), 1U);
	KUNIT_EXPECT_EQ(test, kmmscand_heat_note(&heat, i, true), 2U);
	KUNIT_EXPECT_EQ(test, kmmscand_heat_note(&heat, i, true), 3U);
	KUNIT_EXPECT_EQ(test, kmmscand_heat_note(&heat, i, true),
			(unsigned int)KMMSCAND_HEAT_MAX);
	KUNIT_EXPECT_EQ(test, kmmscand_heat_note(&heat, i, false), 2U);
	/* Entries are independent */
	KUNIT_EXPECT_EQ(test, kmmscand_heat_note(&heat, j, true), 1U);
	KUNIT_EXPECT_EQ(test, kmmscand_heat_note(&heat, i, false), 1U);

	/* Every accessed entry is hot at threshold 1, only hotter ones above */
	KUNIT_EXPECT_TRUE(test, kmmscand_heat_hot(&heat, j, 1, 1));
	KUNIT_EXPECT_FALSE(test, kmmscand_heat_hot(&heat, j, 1, 2));
	KUNIT_EXPECT_TRUE(test, kmmscand_heat_hot(&heat, j, 3, 3));
}

/* A promoted entry found on the slow tier again must heat up first */
static void kmmscand_test_heat_pingpong(struct kunit *test)
{
	struct kmmscand_heat heat = { };
	const unsigned int i = 511;
	unsigned int h;

	kmmscand_heat_note(&heat, i, true);
	kmmscand_heat_note(&heat, i, true);
	kmmscand_heat_note(&heat, i, true);
	kmmscand_heat_promoted(&heat, i);

	/* Demoted, then accessed once: not yet, even at threshold 1 */
	h = kmmscand_heat_note(&heat, i, true);
	KUNIT_EXPECT_EQ(test, h, 1U);
	KUNIT_EXPECT_FALSE(test, kmmscand_heat_hot(&heat, i, h, 1));
	/* Accessed at the next read too: promoted, and the mark is gone */
	h = kmmscand_heat_note(&heat, i, true);
	KUNIT_EXPECT_TRUE(test, kmmscand_heat_hot(&heat, i, h, 1));
	KUNIT_EXPECT_FALSE(test, test_bit(i, heat.promoted));
	/* The mark does not lower a higher threshold */
	kmmscand_heat_promoted(&heat, i);
	kmmscand_heat_note(&heat, i, true);
	h = kmmscand_heat_note(&heat, i, true);
	KUNIT_EXPECT_FALSE(test, kmmscand_heat_hot(&heat, i, h, 3));
}

/*
 * A refusal for room asks for more heat always, one for rate only with a
 * candidate hotter than the threshold
 */
static void kmmscand_test_refusal_tightens(struct kunit *test)
{
	enum kmmscand_promote_result room = KMMSCAND_PROMOTE_NO_ROOM;
	enum kmmscand_promote_result rate = KMMSCAND_PROMOTE_RATE_LIMITED;
	struct kmmscand_node n = { };

	KUNIT_EXPECT_TRUE(test, kmmscand_refusal_tightens(&n, room, 1));
	KUNIT_EXPECT_TRUE(test, kmmscand_refusal_tightens(&n, room, 0));
	KUNIT_EXPECT_FALSE(test, kmmscand_refusal_tightens(&n, rate, 1));
	KUNIT_EXPECT_TRUE(test, kmmscand_refusal_tightens(&n, rate, 2));
	n.threshold = 2;
	KUNIT_EXPECT_TRUE(test, kmmscand_refusal_tightens(&n, room, 2));
	KUNIT_EXPECT_FALSE(test, kmmscand_refusal_tightens(&n, rate, 2));
	KUNIT_EXPECT_TRUE(test, kmmscand_refusal_tightens(&n, rate, 3));
}

/*
 * Refusals that ask for more heat raise a node's threshold, paced; quiet
 * lowers it again
 */
static void kmmscand_test_threshold_adapts(struct kunit *test)
{
	unsigned long tighten = msecs_to_jiffies(KMMSCAND_HEAT_TIGHTEN_MS);
	unsigned long relax = msecs_to_jiffies(KMMSCAND_ROOM_WANTED_MS);
	unsigned long now = 100000;
	struct kmmscand_node n = { };

	KUNIT_EXPECT_EQ(test, kmmscand_node_threshold(&n), 1U);
	/* All candidates as hot as the threshold: no choice to make */
	kmmscand_adapt_threshold(&n, now, true, false);
	KUNIT_EXPECT_EQ(test, kmmscand_node_threshold(&n), 1U);
	kmmscand_adapt_threshold(&n, now + 1, true, true);
	KUNIT_EXPECT_EQ(test, kmmscand_node_threshold(&n), 2U);
	/* A second refusal right after does not raise it again */
	kmmscand_adapt_threshold(&n, now + 2, true, true);
	KUNIT_EXPECT_EQ(test, kmmscand_node_threshold(&n), 2U);
	now += 1 + tighten;
	kmmscand_adapt_threshold(&n, now, true, true);
	KUNIT_EXPECT_EQ(test, kmmscand_node_threshold(&n),
			(unsigned int)KMMSCAND_HEAT_MAX);
	kmmscand_adapt_threshold(&n, now + tighten, true, true);
	KUNIT_EXPECT_EQ(test, kmmscand_node_threshold(&n),
			(unsigned int)KMMSCAND_HEAT_MAX);
	now += tighten;

	/* No refusal for less than the quiet time: unchanged */
	kmmscand_adapt_threshold(&n, now + relax - 1, false, false);
	KUNIT_EXPECT_EQ(test, kmmscand_node_threshold(&n),
			(unsigned int)KMMSCAND_HEAT_MAX);
	/* A refusal with no choice to make still restarts the quiet time */
	kmmscand_adapt_threshold(&n, now + relax - 1, true, false);
	KUNIT_EXPECT_EQ(test, kmmscand_node_threshold(&n),
			(unsigned int)KMMSCAND_HEAT_MAX);
	now += 2 * relax - 1;
	kmmscand_adapt_threshold(&n, now - 1, false, false);
	KUNIT_EXPECT_EQ(test, kmmscand_node_threshold(&n),
			(unsigned int)KMMSCAND_HEAT_MAX);
	kmmscand_adapt_threshold(&n, now, false, false);
	KUNIT_EXPECT_EQ(test, kmmscand_node_threshold(&n), 2U);
	/* One step per quiet time */
	kmmscand_adapt_threshold(&n, now + 1, false, false);
	KUNIT_EXPECT_EQ(test, kmmscand_node_threshold(&n), 2U);
	kmmscand_adapt_threshold(&n, now + relax, false, false);
	KUNIT_EXPECT_EQ(test, kmmscand_node_threshold(&n), 1U);
	kmmscand_adapt_threshold(&n, now + 2 * relax, false, false);
	KUNIT_EXPECT_EQ(test, kmmscand_node_threshold(&n), 1U);
}

/* min_heat is where a node's threshold starts and where quiet stops it */
static void kmmscand_test_threshold_floor(struct kunit *test)
{
	unsigned long relax = msecs_to_jiffies(KMMSCAND_ROOM_WANTED_MS);
	unsigned long saved = READ_ONCE(kmmscand_min_heat);
	unsigned long now = 100000;
	struct kmmscand_node n = { };

	WRITE_ONCE(kmmscand_min_heat, 2);
	KUNIT_EXPECT_EQ(test, kmmscand_node_threshold(&n), 2U);
	kmmscand_adapt_threshold(&n, now, true, true);
	KUNIT_EXPECT_EQ(test, kmmscand_node_threshold(&n), 3U);
	kmmscand_adapt_threshold(&n, now + relax, false, false);
	KUNIT_EXPECT_EQ(test, kmmscand_node_threshold(&n), 2U);
	kmmscand_adapt_threshold(&n, now + 2 * relax, false, false);
	KUNIT_EXPECT_EQ(test, kmmscand_node_threshold(&n), 2U);
	/* Lowered again, the knob lets the threshold come down with it */
	WRITE_ONCE(kmmscand_min_heat, 1);
	kmmscand_adapt_threshold(&n, now + 3 * relax, false, false);
	KUNIT_EXPECT_EQ(test, kmmscand_node_threshold(&n), 1U);
	WRITE_ONCE(kmmscand_min_heat, saved);
}

/* Slots leave the queue in the order they fall due, ties as queued */
static void kmmscand_test_due_order(struct kunit *test)
{
	static const unsigned long at[] = { 30, 10, 20, 10, 50 };
	static const unsigned int order[] = { 1, 3, 2, 0 };
	struct rb_root_cached due = RB_ROOT_CACHED;
	struct kmmscand_mm_slot *s, *w;
	unsigned long now = 1000;
	unsigned int i;

	/* Slots are large: off the stack */
	s = kunit_kcalloc(test, ARRAY_SIZE(at) + 2, sizeof(*s), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, s);
	w = s + ARRAY_SIZE(at);
	for (i = 0; i < ARRAY_SIZE(at); i++) {
		s[i].next_scan = now + at[i];
		/* First in the queue: the first slot and the one due at 10 */
		KUNIT_EXPECT_EQ(test, kmmscand_queue(&due, &s[i]), i < 2);
	}
	KUNIT_EXPECT_PTR_EQ(test, kmmscand_first_due(&due, now + 9), NULL);
	KUNIT_EXPECT_EQ(test, kmmscand_count_due(&due, now + 9, 10), 0UL);
	KUNIT_EXPECT_EQ(test, kmmscand_count_due(&due, now + 20, 10), 3UL);
	KUNIT_EXPECT_EQ(test, kmmscand_count_due(&due, now + 50, 10), 5UL);
	KUNIT_EXPECT_EQ(test, kmmscand_count_due(&due, now + 20, 2), 2UL);
	for (i = 0; i < ARRAY_SIZE(order); i++) {
		KUNIT_EXPECT_PTR_EQ(test, kmmscand_first_due(&due, now + 30),
				    &s[order[i]]);
		KUNIT_EXPECT_TRUE(test, RB_EMPTY_NODE(&s[order[i]].due));
	}
	KUNIT_EXPECT_PTR_EQ(test, kmmscand_first_due(&due, now + 30), NULL);
	/* Put back as due now, it goes behind those due before */
	s[1].next_scan = now + 50;
	kmmscand_queue(&due, &s[1]);
	KUNIT_EXPECT_PTR_EQ(test, kmmscand_first_due(&due, now + 50), &s[4]);
	KUNIT_EXPECT_PTR_EQ(test, kmmscand_first_due(&due, now + 50), &s[1]);

	/* Due times compare across a jiffies wrap */
	w[0].next_scan = 5;
	w[1].next_scan = ULONG_MAX - 5;
	kmmscand_queue(&due, &w[0]);
	KUNIT_EXPECT_TRUE(test, kmmscand_queue(&due, &w[1]));
	KUNIT_EXPECT_PTR_EQ(test, kmmscand_first_due(&due, 5), &w[1]);
	KUNIT_EXPECT_PTR_EQ(test, kmmscand_first_due(&due, 5), &w[0]);
}

/* A pass is split evenly among the due mms, at least a PTE table each */
static void kmmscand_test_step_share(struct kunit *test)
{
	unsigned long pages = KMMSCAND_PAGES_TO_SCAN;

	KUNIT_EXPECT_EQ(test, kmmscand_step_share(pages, 0), pages);
	KUNIT_EXPECT_EQ(test, kmmscand_step_share(pages, 1), pages);
	KUNIT_EXPECT_EQ(test, kmmscand_step_share(pages, 4), pages / 4);
	KUNIT_EXPECT_EQ(test, kmmscand_step_share(pages, 1UL << 20),
			(unsigned long)KMMSCAND_STEP_MIN_PAGES);
	KUNIT_EXPECT_EQ(test, kmmscand_step_share(KMMSCAND_STEP_MIN_PAGES, 3),
			(unsigned long)KMMSCAND_STEP_MIN_PAGES);
}

/* Who is served: the prctl mode first, then scan_by_default */
static void kmmscand_test_mode_serves(struct kunit *test)
{
	KUNIT_EXPECT_TRUE(test, kmmscand_mode_serves(PR_KMMSCAND_DEFAULT, true));
	KUNIT_EXPECT_FALSE(test, kmmscand_mode_serves(PR_KMMSCAND_DEFAULT, false));
	KUNIT_EXPECT_FALSE(test, kmmscand_mode_serves(PR_KMMSCAND_OFF, true));
	KUNIT_EXPECT_FALSE(test, kmmscand_mode_serves(PR_KMMSCAND_OFF, false));
	KUNIT_EXPECT_TRUE(test, kmmscand_mode_serves(PR_KMMSCAND_ON, true));
	KUNIT_EXPECT_TRUE(test, kmmscand_mode_serves(PR_KMMSCAND_ON, false));
}

/*
 * The prctl mode: set and read back, other flags left alone, bad modes
 * refused, and kept by the flags a new mm takes from the old one.
 */
static void kmmscand_test_prctl_mode(struct kunit *test)
{
	unsigned long others = BIT(MMF_VM_KMMSCAND) | BIT(MMF_DISABLE_THP);
	struct mm_struct *mm;

	mm = kunit_kzalloc(test, sizeof(*mm), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, mm);
	mm->flags = others;
	KUNIT_EXPECT_EQ(test, kmmscand_prctl_get(mm), PR_KMMSCAND_DEFAULT);

	KUNIT_EXPECT_EQ(test, kmmscand_prctl_set(mm, PR_KMMSCAND_OFF), 0);
	KUNIT_EXPECT_EQ(test, kmmscand_prctl_get(mm), PR_KMMSCAND_OFF);
	KUNIT_EXPECT_EQ(test, mmf_init_flags(mm->flags) & MMF_KMMSCAND_MASK,
			BIT(MMF_KMMSCAND_OFF));

	KUNIT_EXPECT_EQ(test, kmmscand_prctl_set(mm, PR_KMMSCAND_ON), 0);
	KUNIT_EXPECT_EQ(test, kmmscand_prctl_get(mm), PR_KMMSCAND_ON);
	KUNIT_EXPECT_EQ(test, mm->flags & MMF_KMMSCAND_MASK,
			BIT(MMF_KMMSCAND_ON));

	KUNIT_EXPECT_EQ(test, kmmscand_prctl_set(mm, PR_KMMSCAND_ON + 1),
			-EINVAL);
	KUNIT_EXPECT_EQ(test, kmmscand_prctl_set(mm, ULONG_MAX), -EINVAL);
	KUNIT_EXPECT_EQ(test, kmmscand_prctl_get(mm), PR_KMMSCAND_ON);

	KUNIT_EXPECT_EQ(test, kmmscand_prctl_set(mm, PR_KMMSCAND_DEFAULT), 0);
	KUNIT_EXPECT_EQ(test, kmmscand_prctl_get(mm), PR_KMMSCAND_DEFAULT);
	KUNIT_EXPECT_EQ(test, mm->flags, others);
}

static struct kunit_case kmmscand_test_cases[] = {
	KUNIT_CASE(kmmscand_test_idle_stays_idle),
	KUNIT_CASE(kmmscand_test_idle_turns_busy),
	KUNIT_CASE(kmmscand_test_busy_turns_idle),
	KUNIT_CASE(kmmscand_test_moved_up_stays_short),
	KUNIT_CASE(kmmscand_test_primed_then_idle),
	KUNIT_CASE(kmmscand_test_isolated_most),
	KUNIT_CASE(kmmscand_test_busy_stays_busy),
	KUNIT_CASE(kmmscand_test_clamps),
	KUNIT_CASE(kmmscand_test_threshold),
	KUNIT_CASE(kmmscand_test_parse_ulong),
	KUNIT_CASE(kmmscand_test_range_set),
	KUNIT_CASE(kmmscand_test_parse_target_node),
	KUNIT_CASE(kmmscand_test_pick_node),
	KUNIT_CASE(kmmscand_test_mpol_allows),
	KUNIT_CASE(kmmscand_test_skips_ksm),
	KUNIT_CASE(kmmscand_test_skips_doubling),
	KUNIT_CASE(kmmscand_test_hist_encoding),
	KUNIT_CASE(kmmscand_test_forget_unmapped),
	KUNIT_CASE(kmmscand_test_schedule),
	KUNIT_CASE(kmmscand_test_access_starts_over),
	KUNIT_CASE(kmmscand_test_no_slow_tier),
	KUNIT_CASE(kmmscand_test_smart_scan_off),
	KUNIT_CASE(kmmscand_test_pmd_old),
	KUNIT_CASE(kmmscand_test_pmd_recalls),
	KUNIT_CASE(kmmscand_test_has_room),
	KUNIT_CASE(kmmscand_test_backoff),
	KUNIT_CASE(kmmscand_test_room_made),
	KUNIT_CASE(kmmscand_test_node_open),
	KUNIT_CASE(kmmscand_test_wants_room),
	KUNIT_CASE(kmmscand_test_heat),
	KUNIT_CASE(kmmscand_test_heat_pingpong),
	KUNIT_CASE(kmmscand_test_refusal_tightens),
	KUNIT_CASE(kmmscand_test_threshold_adapts),
	KUNIT_CASE(kmmscand_test_threshold_floor),
	KUNIT_CASE(kmmscand_test_due_order),
	KUNIT_CASE(kmmscand_test_step_share),
	KUNIT_CASE(kmmscand_test_mode_serves),
	KUNIT_CASE(kmmscand_test_prctl_mode),
	{}
};

static struct kunit_suite kmmscand_test_suite = {
	.name = "kmmscand",
	.test_cases = kmmscand_test_cases,
};

kunit_test_suite(kmmscand_test_suite);

#endif /* _KMMSCAND_KUNIT_H */

#endif /* CONFIG_KMMSCAND_KUNIT_TEST */
