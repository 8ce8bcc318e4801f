// SPDX-License-Identifier: GPL-2.0
/*
 * Memory tiering rig tests: the machine has a top memory tier and a lower
 * one, and NUMA balancing in tiering mode (kernel.numa_balancing=2) moves a
 * hot set from the lower tier to the top one. These hold on an unpatched
 * kernel; the kmmscand tests stand on them.
 *
 * two_tiers:              a node with memory is in the top tier, and one
 *                         with memory and no CPUs in a lower one, whatever
 *                         their numbers (a two-socket machine with CXL
 *                         memory has its slow nodes after both sockets)
 * numab_promotes_hot_set: a hot set placed on the slow node moves to the top
 *                         node and pgpromote_success grows; a cold set stays
 * numab_off_no_promotion: with kernel.numa_balancing=0 nothing moves
 *
 * The tests skip on a machine without two memory tiers, unless
 * NUMA_TIERING_REQUIRE_TIERS=1 in the environment makes that a failure (for
 * a rig that is meant to have them).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../kselftest_harness.h"
#include "tiering_util.h"

#define MIB			(1024 * 1024UL)

/*
 * Hot and cold set sizes: thousands of pages, so that a share is a
 * meaningful figure, yet small enough for the slow debug kernel under TCG
 * to promote in seconds.
 */
#define HOT_SIZE		(32 * MIB)
#define COLD_SIZE		(32 * MIB)

/*
 * On a debug kernel under TCG, NUMA balancing promotes such a hot set in 2
 * to 20 s; the deadline leaves room for a slower host.
 */
#define PROMOTE_TIMEOUT_MS	(120 * 1000)
/* Share of the hot set that must reach the top tier. */
#define PROMOTE_PERCENT		50
/*
 * Share of the cold set that must stay: nothing touches it, so no hint
 * fault ever asks for it to move; the slack is for pages the kernel itself
 * may touch.
 */
#define COLD_STAY_PERCENT	90
/*
 * Access time in the control test: NUMA balancing starts scanning a task
 * after a second (numa_balancing_scan_delay_ms), so 5 s of access would
 * show promotions were it on.
 */
#define CONTROL_MS		(5 * 1000)

/* Harness timeouts: the deadlines above, placement and census, and margin. */
#define PROMOTE_TEST_TIMEOUT_S	300
#define CONTROL_TEST_TIMEOUT_S	60

#define KMMSCAND_ENABLED	"/sys/kernel/mm/kmmscand/scan_enabled"
#define REQUIRE_TIERS_ENV	"NUMA_TIERING_REQUIRE_TIERS"

/*
 * Read pgpromote_success exactly: it is a node counter, with deltas
 * pending on each CPU until they are folded in.
 */
static int read_promotions(unsigned long *value)
{
	tier_vmstat_refresh();
	return tier_vmstat("pgpromote_success", value);
}

/* Whether the environment asks for a missing tier layout to fail. */
static bool tiers_required(void)
{
	const char *env = getenv(REQUIRE_TIERS_ENV);

	return env && !strcmp(env, "1");
}

TEST(two_tiers)
{
	struct tier_layout layout;
	int ret, i, top, slow;

	ret = tier_read_layout(&layout);
	if (ret == -ENOENT && !tiers_required())
		SKIP(return, "no %s: kernel without memory tiers",
		     TIER_MEMORY_TIERING_DIR);
	ASSERT_EQ(0, ret);
	for (i = 0; i < layout.nr_tiers; i++)
		TH_LOG("memory_tier%d: node mask %#llx", layout.tier_id[i],
		       layout.nodes[i]);
	ret = tier_pick_nodes(&layout, &top, &slow);
	if (ret && !tiers_required())
		SKIP(return, "no top and lower tier that both have memory");
	ASSERT_EQ(0, ret) {
		TH_LOG("%d memory tiers: no top node and slow node with memory",
		       layout.nr_tiers);
	}
	TH_LOG("top node %d, slow node %d", top, slow);
	ASSERT_EQ(0, tier_of_node(&layout, top));
	ASSERT_GT(tier_of_node(&layout, slow), 0);
	ASSERT_FALSE(tier_node_has_cpus(slow)) {
		TH_LOG("node %d has CPUs: it is not CPU-less memory", slow);
	}
}

FIXTURE(numab)
{
	int top;
	int slow;
	char numab[TIER_VALUE_LEN];
	char kmmscand[TIER_VALUE_LEN];
	bool has_kmmscand;
	int setup_err;
};

FIXTURE_SETUP(numab)
{
	struct tier_layout layout;
	int ret;

	ret = tier_read_layout(&layout);
	if (ret == -ENOENT && !tiers_required())
		SKIP(return, "kernel without memory tiers");
	ASSERT_EQ(0, ret);
	ret = tier_pick_nodes(&layout, &self->top, &self->slow);
	if (ret && !tiers_required())
		SKIP(return, "no two memory tiers with memory");
	ASSERT_EQ(0, ret);
	if (access(TIER_NUMA_BALANCING, W_OK))
		SKIP(return, "no kernel.numa_balancing (CONFIG_NUMA_BALANCING=n)");
	ASSERT_EQ(0, tier_read_str(TIER_NUMA_BALANCING, self->numab,
				   sizeof(self->numab)));
	self->has_kmmscand = !tier_read_str(KMMSCAND_ENABLED, self->kmmscand,
					    sizeof(self->kmmscand));
	/*
	 * The teardown runs only once the setup has returned: from here on,
	 * record failures for the test to assert instead of asserting.
	 * With kmmscand in the kernel, stop it: these tests are about NUMA
	 * balancing alone.
	 */
	if (self->has_kmmscand)
		self->setup_err = tier_write_str(KMMSCAND_ENABLED, "0");
	TH_LOG("top node %d, slow node %d", self->top, self->slow);
}

/*
 * Restore in the parent: it runs even when a failed assertion ended the
 * test (this harness then skips a child-side teardown). The test's memory
 * went with the test process.
 */
FIXTURE_TEARDOWN_PARENT(numab)
{
	int ret = 0;

	EXPECT_EQ(0, tier_write_str(TIER_NUMA_BALANCING, self->numab));
	if (self->has_kmmscand)
		ret = tier_write_str(KMMSCAND_ENABLED, self->kmmscand);
	EXPECT_EQ(0, ret);
}

TEST_F_TIMEOUT(numab, numab_promotes_hot_set, PROMOTE_TEST_TIMEOUT_S)
{
	struct tier_counter promoted = { .name = "pgpromote_success" };
	unsigned long before, nr_cold;
	struct tier_region hot, cold;
	struct tier_share share;
	long on_slow;
	bool counted;
	double start;
	bool done;

	ASSERT_EQ(0, self->setup_err);
	ASSERT_EQ(0, tier_alloc_on_node(&hot, HOT_SIZE, self->slow, false));
	ASSERT_EQ(0, tier_alloc_on_node(&cold, COLD_SIZE, self->slow, false));
	ASSERT_EQ((long)tier_nr_pages(&hot),
		  tier_pages_on_node(&hot, self->slow));
	nr_cold = tier_nr_pages(&cold);
	ASSERT_EQ((long)nr_cold, tier_pages_on_node(&cold, self->slow));

	ASSERT_EQ(0, read_promotions(&before));
	ASSERT_EQ(0, tier_write_long(TIER_NUMA_BALANCING, TIER_NUMAB_TIERING));

	tier_share_init(&share, &hot, self->top, PROMOTE_PERCENT);
	start = tier_now();
	done = tier_wait(&hot, 1, tier_share_reached, &share,
			 PROMOTE_TIMEOUT_MS);
	TH_LOG("%lu of %lu hot pages on node %d after %.1f s",
	       share.last_pages, tier_nr_pages(&hot), self->top,
	       tier_now() - start);
	ASSERT_TRUE(done);

	/* Every page that moved up counts as a promotion. */
	promoted.min = before + share.last_pages;
	counted = tier_wait(NULL, 0, tier_counter_reached, &promoted,
			    TIER_VMSTAT_LAG_MS);
	TH_LOG("pgpromote_success +%lu", promoted.last - before);
	ASSERT_TRUE(counted);

	on_slow = tier_pages_on_node(&cold, self->slow);
	TH_LOG("%ld of %lu cold pages still on node %d", on_slow, nr_cold,
	       self->slow);
	ASSERT_GE(on_slow, 0);
	EXPECT_GE((unsigned long)on_slow * 100, nr_cold * COLD_STAY_PERCENT);
}

TEST_F_TIMEOUT(numab, numab_off_no_promotion, CONTROL_TEST_TIMEOUT_S)
{
	unsigned long before, after;
	struct tier_share share;
	struct tier_region hot;
	bool moved;

	ASSERT_EQ(0, self->setup_err);
	ASSERT_EQ(0, tier_write_long(TIER_NUMA_BALANCING, 0));
	ASSERT_EQ(0, tier_alloc_on_node(&hot, HOT_SIZE, self->slow, false));
	ASSERT_EQ(0, read_promotions(&before));

	/* Any page at all on the top node is a promotion. */
	tier_share_init(&share, &hot, self->top, 0);
	share.min_pages = 1;
	moved = tier_wait(&hot, 1, tier_share_reached, &share,
			  CONTROL_MS);
	TH_LOG("%lu hot pages on node %d after %d s of access",
	       share.last_pages, self->top, CONTROL_MS / 1000);
	ASSERT_FALSE(moved);

	ASSERT_EQ(0, read_promotions(&after));
	ASSERT_EQ(before, after);
}

TEST_HARNESS_MAIN
