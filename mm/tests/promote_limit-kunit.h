/* SPDX-License-Identifier: GPL-2.0 */
/*
 * KUnit tests for the promotion rate limit: the window arithmetic, bursts,
 * a limit of zero, jiffies wrap, the per-CPU stocks, the bound over any
 * second, and callers racing on one node.  The tests drive the time
 * themselves, passing "now" to the window functions, and use windows and
 * stocks of their own rather than a node's and a CPU's.
 *
 * Included at the end of mm/promote_limit.c, so that the static helpers can
 * be called directly.
 */

#ifdef CONFIG_NUMA_PROMOTE_LIMIT_KUNIT_TEST

#ifndef _PROMOTE_LIMIT_KUNIT_H
#define _PROMOTE_LIMIT_KUNIT_H

#include <kunit/test.h>
#include <linux/completion.h>
#include <linux/err.h>
#include <linux/kthread.h>
#include <linux/minmax.h>
#include <linux/sched.h>
#include <linux/sizes.h>

/* Pages in a PMD-sized THP with 4 KiB pages: the largest usual request. */
#define PROMOTE_TEST_THP		512UL

/* Any time will do; this one is far from the wraps the wrap test uses. */
#define PROMOTE_TEST_T0			(1000UL * PROMOTE_WINDOW_JIFFIES)

/* A window that ended long before the time a test starts at. */
static void promote_test_init(struct numa_promote_window *win,
			      unsigned long now)
{
	atomic64_set(&win->word,
		     promote_word(now - 10 * PROMOTE_WINDOW_JIFFIES, 0));
}

static u32 promote_test_start(struct numa_promote_window *win)
{
	return promote_word_start(atomic64_read(&win->word));
}

static long promote_test_used(struct numa_promote_window *win)
{
	return promote_word_used(atomic64_read(&win->word));
}

static bool promote_test_charge(struct numa_promote_window *win,
				unsigned long now, unsigned long limit,
				unsigned long nr)
{
	u32 start;

	return promote_window_charge(win, now, limit, nr, &start);
}

static void promote_test_mbps_to_pages(struct kunit *test)
{
	const unsigned long per_mb = SZ_1M / PAGE_SIZE;

	KUNIT_EXPECT_EQ(test, promote_limit_mbps_to_pages(0), 0UL);
	KUNIT_EXPECT_EQ(test, promote_limit_mbps_to_pages(1), per_mb);
	KUNIT_EXPECT_EQ(test,
			promote_limit_mbps_to_pages(PROMOTE_LIMIT_DEFAULT_MBPS),
			PROMOTE_LIMIT_DEFAULT_MBPS * per_mb);
	/* The largest values saturate rather than wrap on 32-bit. */
	KUNIT_EXPECT_EQ(test, promote_limit_mbps_to_pages(INT_MAX),
			(unsigned long)min_t(u64, (u64)INT_MAX * per_mb,
					     LONG_MAX));
	KUNIT_EXPECT_EQ(test, promote_limit_mbps_to_pages(UINT_MAX),
			(unsigned long)min_t(u64, (u64)UINT_MAX * per_mb,
					     LONG_MAX));
}

static void promote_test_window(struct kunit *test)
{
	const unsigned long t0 = PROMOTE_TEST_T0, limit = 100;
	const unsigned long t1 = t0 + PROMOTE_WINDOW_JIFFIES;
	const unsigned long pause = 5 * PROMOTE_WINDOW_JIFFIES / 2;
	struct numa_promote_window win;

	promote_test_init(&win, t0);

	/* The first request opens a window and may take all of it. */
	KUNIT_EXPECT_TRUE(test, promote_test_charge(&win, t0, limit, limit));
	KUNIT_EXPECT_EQ(test, promote_test_start(&win), (u32)t0);
	KUNIT_EXPECT_EQ(test, promote_window_end(&win, t0), t1);
	KUNIT_EXPECT_EQ(test, promote_window_end(&win, t1 - 1), t1);

	/* Full up to its last jiffy ... */
	KUNIT_EXPECT_FALSE(test, promote_test_charge(&win, t0 + 1, limit, 1));
	KUNIT_EXPECT_FALSE(test, promote_test_charge(&win, t1 - 1, limit, 1));
	KUNIT_EXPECT_EQ(test, promote_test_used(&win), (long)limit);

	/* ... and the next one starts empty at its end. */
	KUNIT_EXPECT_EQ(test, promote_window_end(&win, t1), t1);
	KUNIT_EXPECT_TRUE(test, promote_test_charge(&win, t1, limit, 1));
	KUNIT_EXPECT_EQ(test, promote_test_start(&win), (u32)t1);
	KUNIT_EXPECT_EQ(test, promote_test_used(&win), 1L);

	/* After a pause, a window opens with the first request. */
	KUNIT_EXPECT_TRUE(test, promote_test_charge(&win, t1 + pause, limit, 7));
	KUNIT_EXPECT_EQ(test, promote_test_start(&win), (u32)(t1 + pause));
	KUNIT_EXPECT_EQ(test, promote_test_used(&win), 7L);
}

/* Over many seconds of steady demand, the limit is the rate. */
static void promote_test_rate(struct kunit *test)
{
	const unsigned long t0 = PROMOTE_TEST_T0, limit = 1000;
	const unsigned int seconds = 10;
	unsigned long now, granted = 0;
	struct numa_promote_window win;

	promote_test_init(&win, t0);
	for (now = t0; now != t0 + seconds * PROMOTE_WINDOW_JIFFIES; now++) {
		unsigned int i;

		/* More demand per jiffy than the window holds in a second */
		for (i = 0; i < 4; i++)
			if (promote_test_charge(&win, now, limit, limit / 3))
				granted += limit / 3;
	}
	/* Each window takes three requests; the fourth does not fit. */
	KUNIT_EXPECT_EQ(test, granted, seconds * 3 * (limit / 3));
}

/* A whole queue arriving at once gets no more than the window holds. */
static void promote_test_burst(struct kunit *test)
{
	const unsigned long t0 = PROMOTE_TEST_T0;
	const unsigned long t1 = t0 + PROMOTE_WINDOW_JIFFIES;
	const unsigned long limit = 3 * PROMOTE_TEST_THP + 100;
	struct numa_promote_window win;
	unsigned long granted = 0;
	unsigned int i;

	promote_test_init(&win, t0);
	for (i = 0; i < 64; i++)
		if (promote_test_charge(&win, t0, limit, PROMOTE_TEST_THP))
			granted += PROMOTE_TEST_THP;
	KUNIT_EXPECT_EQ(test, granted, 3 * PROMOTE_TEST_THP);

	/* A THP that does not fit is refused whole and charged nothing, */
	KUNIT_EXPECT_FALSE(test, promote_test_charge(&win, t0, limit,
						     PROMOTE_TEST_THP));
	KUNIT_EXPECT_EQ(test, promote_test_used(&win),
			(long)(3 * PROMOTE_TEST_THP));
	/* so smaller folios may still use what is left. */
	KUNIT_EXPECT_TRUE(test, promote_test_charge(&win, t0, limit, 100));
	KUNIT_EXPECT_FALSE(test, promote_test_charge(&win, t0, limit, 1));
	KUNIT_EXPECT_EQ(test, promote_test_used(&win), (long)limit);

	/* A request larger than the whole limit never fits. */
	KUNIT_EXPECT_FALSE(test, promote_test_charge(&win, t1, limit,
						     limit + 1));
	KUNIT_EXPECT_EQ(test, promote_test_used(&win), 0L);
}

/*
 * A limit of zero grants nothing; a refusal still opens the window, so
 * that a refused caller is told to wait for its end, not to ask again.
 */
static void promote_test_zero(struct kunit *test)
{
	const unsigned long t0 = PROMOTE_TEST_T0;
	struct numa_promote_window win;
	unsigned int i;

	KUNIT_EXPECT_EQ(test, promote_limit_mbps_to_pages(0), 0UL);
	promote_test_init(&win, t0);
	for (i = 0; i < 3; i++) {
		unsigned long now = t0 + i * PROMOTE_WINDOW_JIFFIES;

		KUNIT_EXPECT_FALSE(test, promote_test_charge(&win, now, 0, 1));
		KUNIT_EXPECT_FALSE(test, promote_test_charge(&win, now, 0,
							     PROMOTE_TEST_THP));
		KUNIT_EXPECT_EQ(test, promote_test_used(&win), 0L);
		KUNIT_EXPECT_EQ(test, promote_window_end(&win, now),
				now + PROMOTE_WINDOW_JIFFIES);
	}
}

/* Lowering the limit below what a window granted must not underflow. */
static void promote_test_lowered(struct kunit *test)
{
	const unsigned long t0 = PROMOTE_TEST_T0;
	struct numa_promote_window win;

	promote_test_init(&win, t0);
	KUNIT_EXPECT_TRUE(test, promote_test_charge(&win, t0, 1000, 1000));
	KUNIT_EXPECT_FALSE(test, promote_test_charge(&win, t0, 500, 1));
	KUNIT_EXPECT_FALSE(test, promote_test_charge(&win, t0, 0, 1));
	KUNIT_EXPECT_TRUE(test, promote_test_charge(&win, t0, 1001, 1));
}

/*
 * A window that opens half a second before jiffies wrap, and one that
 * opens half a second before their low 32 bits, which the word keeps, do.
 */
static void promote_test_wrap(struct kunit *test)
{
	const unsigned long opens[] = {
		ULONG_MAX - PROMOTE_WINDOW_JIFFIES / 2,
		(unsigned long)U32_MAX - PROMOTE_WINDOW_JIFFIES / 2,
	};
	const unsigned long limit = 10;
	struct numa_promote_window win;
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(opens); i++) {
		const unsigned long t0 = opens[i];
		const unsigned long end = t0 + PROMOTE_WINDOW_JIFFIES;

		promote_test_init(&win, t0);
		KUNIT_EXPECT_TRUE(test, promote_test_charge(&win, t0, limit,
							    limit));
		KUNIT_EXPECT_EQ(test, promote_window_end(&win, t0), end);
		KUNIT_EXPECT_TRUE(test, (u32)end < (u32)t0);

		/* The window goes on across the wrap ... */
		KUNIT_EXPECT_FALSE(test, promote_test_charge(&win, t0 + 1,
							     limit, 1));
		KUNIT_EXPECT_FALSE(test, promote_test_charge(&win, end - 1,
							     limit, 1));
		KUNIT_EXPECT_EQ(test, promote_window_end(&win, end - 1), end);
		KUNIT_EXPECT_EQ(test, promote_test_start(&win), (u32)t0);

		/* ... and ends one window length after it opened. */
		KUNIT_EXPECT_TRUE(test, promote_test_charge(&win, end, limit,
							    1));
		KUNIT_EXPECT_EQ(test, promote_test_start(&win), (u32)end);
	}
}

/* Callers that read the time just before the window opened stay in it. */
static void promote_test_late_caller(struct kunit *test)
{
	const unsigned long t0 = PROMOTE_TEST_T0, limit = 10;
	const unsigned long earliest = t0 - PROMOTE_WINDOW_JIFFIES + 1;
	struct numa_promote_window win;

	promote_test_init(&win, t0);
	KUNIT_EXPECT_TRUE(test, promote_test_charge(&win, t0, limit, limit));
	KUNIT_EXPECT_FALSE(test, promote_test_charge(&win, t0 - 1, limit, 1));
	KUNIT_EXPECT_FALSE(test, promote_test_charge(&win, earliest, limit,
						     1));
	KUNIT_EXPECT_EQ(test, promote_test_start(&win), (u32)t0);
	KUNIT_EXPECT_EQ(test, promote_test_used(&win), (long)limit);
}

/*
 * A node left alone for more than half the range of the word's 32 bits of
 * jiffies: its window is over.  One left alone for exactly that range
 * finds its old window again, and is held to it until that one would
 * have ended, never longer.
 */
static void promote_test_long_idle(struct kunit *test)
{
	const unsigned long t0 = PROMOTE_TEST_T0, limit = 10;
	const unsigned long later = t0 + U32_MAX / 2 + PROMOTE_WINDOW_JIFFIES;
	const unsigned long alias = t0 + (1UL << 16 << 16);
	struct numa_promote_window win;

	promote_test_init(&win, t0);
	KUNIT_EXPECT_TRUE(test, promote_test_charge(&win, t0, limit, limit));
	KUNIT_EXPECT_TRUE(test, promote_test_charge(&win, later, limit, 1));
	KUNIT_EXPECT_EQ(test, promote_test_start(&win), (u32)later);

	if (alias == t0)
		return;
	promote_test_init(&win, t0);
	KUNIT_EXPECT_TRUE(test, promote_test_charge(&win, t0, limit, limit));
	KUNIT_EXPECT_FALSE(test, promote_test_charge(&win, alias, limit, 1));
	KUNIT_EXPECT_EQ(test, promote_window_end(&win, alias),
			alias + PROMOTE_WINDOW_JIFFIES);
	KUNIT_EXPECT_TRUE(test, promote_test_charge(&win, alias +
						    PROMOTE_WINDOW_JIFFIES,
						    limit, 1));
}

/* A CPU writes the window once per stock, not once per page. */
static void promote_test_stock(struct kunit *test)
{
	const unsigned long t0 = PROMOTE_TEST_T0, limit = 100000;
	const unsigned long batch = promote_stock_pages(limit, 1);
	struct promote_stock stock = {};
	struct numa_promote_window win;
	unsigned int i;
	u64 word;

	KUNIT_ASSERT_EQ(test, batch, (unsigned long)PROMOTE_STOCK_PAGES);
	promote_test_init(&win, t0);

	KUNIT_EXPECT_TRUE(test, promote_stock_charge(&stock, &win, t0, limit,
						     1, batch));
	KUNIT_EXPECT_EQ(test, promote_test_used(&win), (long)batch);
	KUNIT_EXPECT_EQ(test, stock.left, (unsigned int)batch - 1);

	word = atomic64_read(&win.word);
	for (i = 1; i < batch; i++)
		KUNIT_EXPECT_TRUE(test, promote_stock_charge(&stock, &win,
							     t0 + i, limit, 1,
							     batch));
	KUNIT_EXPECT_EQ(test, atomic64_read(&win.word), word);
	KUNIT_EXPECT_EQ(test, stock.left, 0U);

	/* The next page takes a new stock. */
	KUNIT_EXPECT_TRUE(test, promote_stock_charge(&stock, &win, t0, limit,
						     1, batch));
	KUNIT_EXPECT_EQ(test, promote_test_used(&win), (long)(2 * batch));

	/* A THP goes to the window on its own and leaves the stock alone. */
	KUNIT_EXPECT_TRUE(test, promote_stock_charge(&stock, &win, t0, limit,
						     PROMOTE_TEST_THP, batch));
	KUNIT_EXPECT_EQ(test, promote_test_used(&win),
			(long)(2 * batch + PROMOTE_TEST_THP));
	KUNIT_EXPECT_EQ(test, stock.left, (unsigned int)batch - 1);

	/* Giving the stock back leaves the window with what was granted. */
	promote_stock_drain(&stock);
	KUNIT_EXPECT_EQ(test, promote_test_used(&win),
			(long)(batch + 1 + PROMOTE_TEST_THP));
	KUNIT_EXPECT_PTR_EQ(test, stock.win, NULL);
}

/*
 * A stock is given back when its CPU turns to another node, and is lost
 * with its window: it is neither used in the next one nor taken from it.
 */
static void promote_test_stock_switch(struct kunit *test)
{
	const unsigned long t0 = PROMOTE_TEST_T0, limit = 100000;
	const unsigned long t1 = t0 + PROMOTE_WINDOW_JIFFIES;
	const unsigned long batch = PROMOTE_STOCK_PAGES;
	struct numa_promote_window a, b;
	struct promote_stock stock = {};

	promote_test_init(&a, t0);
	promote_test_init(&b, t0);
	KUNIT_EXPECT_TRUE(test, promote_stock_charge(&stock, &a, t0, limit, 1,
						     batch));
	KUNIT_EXPECT_TRUE(test, promote_stock_charge(&stock, &b, t0, limit, 1,
						     batch));
	KUNIT_EXPECT_EQ(test, promote_test_used(&a), 1L);
	KUNIT_EXPECT_EQ(test, promote_test_used(&b), (long)batch);
	KUNIT_EXPECT_PTR_EQ(test, stock.win, &b);

	/* The next window of b: the old stock is not used, nor given back. */
	KUNIT_EXPECT_TRUE(test, promote_test_charge(&b, t1, limit, 5));
	KUNIT_EXPECT_TRUE(test, promote_stock_charge(&stock, &b, t1, limit, 1,
						     batch));
	KUNIT_EXPECT_EQ(test, promote_test_used(&b), (long)(5 + batch));
	KUNIT_EXPECT_EQ(test, stock.start, (u32)t1);

	/* Nor is a stock whose window is over given back to a new one. */
	KUNIT_EXPECT_TRUE(test, promote_test_charge(&b, t1 +
						    PROMOTE_WINDOW_JIFFIES,
						    limit, 3));
	promote_stock_drain(&stock);
	KUNIT_EXPECT_EQ(test, promote_test_used(&b), 3L);
}

/* Sizes of the simulated machine of promote_test_stock_bound() */
#define PROMOTE_TEST_CPUS		64
#define PROMOTE_TEST_BOUND_WINDOWS	6
#define PROMOTE_TEST_BOUND_LIMIT	20000UL

/*
 * 64 simulated CPUs, each with its stock, ask for base pages in turn, a
 * few per jiffy each, more than the limit.  In every window the node
 * grants at most the limit, and at least all but what the stocks may hold;
 * over any one second, sliding across the windows, at most twice the
 * limit.
 */
static void promote_test_stock_bound(struct kunit *test)
{
	const unsigned long t0 = PROMOTE_TEST_T0;
	const unsigned long limit = PROMOTE_TEST_BOUND_LIMIT;
	const unsigned long batch = promote_stock_pages(limit,
							PROMOTE_TEST_CPUS);
	const unsigned int jiffies_run = PROMOTE_TEST_BOUND_WINDOWS *
					 PROMOTE_WINDOW_JIFFIES;
	struct promote_stock *stocks;
	struct numa_promote_window win;
	unsigned long *per_jiffy;
	unsigned int j, w;

	KUNIT_ASSERT_GT(test, batch, 1UL);
	KUNIT_ASSERT_LE(test, PROMOTE_TEST_CPUS * batch,
			limit / PROMOTE_STOCK_SHARE);
	stocks = kunit_kcalloc(test, PROMOTE_TEST_CPUS, sizeof(*stocks),
			       GFP_KERNEL);
	per_jiffy = kunit_kcalloc(test, jiffies_run, sizeof(*per_jiffy),
				  GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, stocks);
	KUNIT_ASSERT_NOT_NULL(test, per_jiffy);
	promote_test_init(&win, t0);

	for (j = 0; j < jiffies_run; j++) {
		unsigned int cpu, i;

		for (i = 0; i < 4; i++)
			for (cpu = 0; cpu < PROMOTE_TEST_CPUS; cpu++)
				if (promote_stock_charge(&stocks[cpu], &win,
							 t0 + j, limit, 1,
							 batch))
					per_jiffy[j]++;
	}

	for (w = 0; w < PROMOTE_TEST_BOUND_WINDOWS; w++) {
		unsigned long granted = 0;

		for (j = 0; j < PROMOTE_WINDOW_JIFFIES; j++)
			granted += per_jiffy[w * PROMOTE_WINDOW_JIFFIES + j];
		KUNIT_EXPECT_LE(test, granted, limit);
		KUNIT_EXPECT_GE(test, granted,
				limit - PROMOTE_TEST_CPUS * batch);
	}
	for (j = 0; j + PROMOTE_WINDOW_JIFFIES <= jiffies_run; j++) {
		unsigned long granted = 0, k;

		for (k = j; k < j + PROMOTE_WINDOW_JIFFIES; k++)
			granted += per_jiffy[k];
		KUNIT_EXPECT_LE(test, granted, 2 * limit);
	}
}

/* Threads racing on one window, and the windows they race through */
#define PROMOTE_TEST_RACERS		4
#define PROMOTE_TEST_RACE_WINDOWS	8
#define PROMOTE_TEST_RACE_REQUESTS	4096
/* Not a multiple of any request size: only 1-page requests fill it up. */
#define PROMOTE_TEST_RACE_LIMIT		10000UL

/* The sizes each racer asks for in turn: base pages to a THP */
static const unsigned long promote_test_race_sizes[] = {
	1, 3, 16, PROMOTE_TEST_THP,
};

struct promote_test_race {
	struct numa_promote_window win;
	unsigned long now;
	unsigned long batch;
	atomic_long_t granted;
	atomic_t running;
	struct completion go;
	struct completion done;
};

static int promote_test_racer(void *data)
{
	struct promote_test_race *race = data;
	struct promote_stock stock = {};
	unsigned long granted = 0;
	unsigned int i;

	wait_for_completion(&race->go);
	for (i = 0; i < PROMOTE_TEST_RACE_REQUESTS; i++) {
		unsigned long nr = promote_test_race_sizes[i %
				ARRAY_SIZE(promote_test_race_sizes)];

		if (promote_stock_charge(&stock, &race->win,
					 READ_ONCE(race->now),
					 PROMOTE_TEST_RACE_LIMIT, nr,
					 race->batch))
			granted += nr;
		cond_resched();
	}
	promote_stock_drain(&stock);
	atomic_long_add(granted, &race->granted);
	if (atomic_dec_and_test(&race->running))
		complete(&race->done);
	return 0;
}

/*
 * Several threads, each with its stock, hammer one window each second,
 * all starting together when the last window has ended, so that they also
 * race to open the next one.  Each second the window grants at most the
 * limit, and no less than the limit less what the stocks may hold; once
 * the racers gave their stocks back, its count is exactly what they were
 * granted.  The seconds cross the wrap of jiffies.
 */
static void promote_test_concurrent(struct kunit *test)
{
	const unsigned long t0 = 0UL - PROMOTE_TEST_RACE_WINDOWS / 2 *
				 PROMOTE_WINDOW_JIFFIES;
	const unsigned long limit = PROMOTE_TEST_RACE_LIMIT;
	struct promote_test_race *race;
	unsigned int w, i;

	race = kunit_kzalloc(test, sizeof(*race), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, race);
	promote_test_init(&race->win, t0);
	race->batch = promote_stock_pages(limit, PROMOTE_TEST_RACERS);

	for (w = 0; w < PROMOTE_TEST_RACE_WINDOWS; w++) {
		unsigned int started = 0;
		unsigned long granted;

		WRITE_ONCE(race->now, t0 + w * PROMOTE_WINDOW_JIFFIES);
		atomic_long_set(&race->granted, 0);
		init_completion(&race->go);
		init_completion(&race->done);
		/* The test's own count keeps done from completing early. */
		atomic_set(&race->running, 1);
		for (i = 0; i < PROMOTE_TEST_RACERS; i++) {
			struct task_struct *t;

			atomic_inc(&race->running);
			t = kthread_run(promote_test_racer, race,
					"promote_race/%u", i);
			if (IS_ERR(t)) {
				atomic_dec(&race->running);
				break;
			}
			started++;
		}
		complete_all(&race->go);
		if (!atomic_dec_and_test(&race->running))
			wait_for_completion(&race->done);

		KUNIT_ASSERT_EQ(test, started, PROMOTE_TEST_RACERS);
		granted = atomic_long_read(&race->granted);
		KUNIT_EXPECT_EQ(test, promote_test_start(&race->win),
				(u32)race->now);
		KUNIT_EXPECT_LE(test, granted, limit);
		KUNIT_EXPECT_GE(test, granted,
				limit - PROMOTE_TEST_RACERS * race->batch);
		KUNIT_EXPECT_EQ(test, promote_test_used(&race->win),
				(long)granted);
	}
}

static struct kunit_case promote_limit_test_cases[] = {
	KUNIT_CASE(promote_test_mbps_to_pages),
	KUNIT_CASE(promote_test_window),
	KUNIT_CASE(promote_test_rate),
	KUNIT_CASE(promote_test_burst),
	KUNIT_CASE(promote_test_zero),
	KUNIT_CASE(promote_test_lowered),
	KUNIT_CASE(promote_test_wrap),
	KUNIT_CASE(promote_test_late_caller),
	KUNIT_CASE(promote_test_long_idle),
	KUNIT_CASE(promote_test_stock),
	KUNIT_CASE(promote_test_stock_switch),
	KUNIT_CASE(promote_test_stock_bound),
	KUNIT_CASE(promote_test_concurrent),
	{}
};

static struct kunit_suite promote_limit_test_suite = {
	.name = "numa_promote_limit",
	.test_cases = promote_limit_test_cases,
};

kunit_test_suite(promote_limit_test_suite);

#endif /* _PROMOTE_LIMIT_KUNIT_H */

#endif /* CONFIG_NUMA_PROMOTE_LIMIT_KUNIT_TEST */
