/* SPDX-License-Identifier: GPL-2.0 */
/*
 * KUnit tests for the promotion rate limit: the window arithmetic, bursts,
 * a limit of zero, jiffies wrap and callers racing on one node.  The tests
 * drive the time themselves, passing "now" to the window functions, and use
 * windows of their own rather than a node's.
 *
 * Included at the end of mm/promote_limit.c, so that the static helpers can
 * be called directly.
 */

#ifdef CONFIG_NUMA_PROMOTE_LIMIT_KUNIT_TEST

#ifndef _PROMOTE_LIMIT_KUNIT_H
#define _PROMOTE_LIMIT_KUNIT_H

#include <kunit/test.h>
#include <linux/completion.h>
#include <linux/bitops.h>
#include <linux/err.h>
#include <linux/kthread.h>
#include <linux/minmax.h>
#include <linux/sched.h>
#include <linux/sizes.h>

/* Pages in a PMD-sized THP with 4 KiB pages: the largest usual request. */
#define PROMOTE_TEST_THP		512UL

/* Any time will do; this one is far from the wrap the wrap test uses. */
#define PROMOTE_TEST_T0			(1000UL * PROMOTE_WINDOW_JIFFIES)

/* A window that ended long before the time a test starts at. */
static void promote_test_init(struct numa_promote_window *win,
			      unsigned long now)
{
	win->start = now - 10 * PROMOTE_WINDOW_JIFFIES;
	atomic_long_set(&win->used, 0);
	win->flags = 0;
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
	KUNIT_EXPECT_TRUE(test, promote_window_charge(&win, t0, limit, limit));
	KUNIT_EXPECT_EQ(test, win.start, t0);
	KUNIT_EXPECT_EQ(test, promote_window_end(&win), t1);

	/* Full up to its last jiffy ... */
	KUNIT_EXPECT_FALSE(test, promote_window_charge(&win, t0 + 1, limit, 1));
	KUNIT_EXPECT_FALSE(test, promote_window_charge(&win, t1 - 1, limit, 1));
	KUNIT_EXPECT_EQ(test, atomic_long_read(&win.used), (long)limit);

	/* ... and the next one starts empty at its end. */
	KUNIT_EXPECT_TRUE(test, promote_window_charge(&win, t1, limit, 1));
	KUNIT_EXPECT_EQ(test, win.start, t1);
	KUNIT_EXPECT_EQ(test, atomic_long_read(&win.used), 1L);

	/* After a pause, a window opens with the first request. */
	KUNIT_EXPECT_TRUE(test, promote_window_charge(&win, t1 + pause,
						      limit, 7));
	KUNIT_EXPECT_EQ(test, win.start, t1 + pause);
	KUNIT_EXPECT_EQ(test, atomic_long_read(&win.used), 7L);
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
			if (promote_window_charge(&win, now, limit, limit / 3))
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
		if (promote_window_charge(&win, t0, limit, PROMOTE_TEST_THP))
			granted += PROMOTE_TEST_THP;
	KUNIT_EXPECT_EQ(test, granted, 3 * PROMOTE_TEST_THP);

	/* A THP that does not fit is refused whole and charged nothing, */
	KUNIT_EXPECT_FALSE(test, promote_window_charge(&win, t0, limit,
						       PROMOTE_TEST_THP));
	KUNIT_EXPECT_EQ(test, atomic_long_read(&win.used),
			(long)(3 * PROMOTE_TEST_THP));
	/* so smaller folios may still use what is left. */
	KUNIT_EXPECT_TRUE(test, promote_window_charge(&win, t0, limit, 100));
	KUNIT_EXPECT_FALSE(test, promote_window_charge(&win, t0, limit, 1));
	KUNIT_EXPECT_EQ(test, atomic_long_read(&win.used), (long)limit);

	/* A request larger than the whole limit never fits. */
	KUNIT_EXPECT_FALSE(test, promote_window_charge(&win, t1, limit,
						       limit + 1));
	KUNIT_EXPECT_EQ(test, atomic_long_read(&win.used), 0L);
}

static void promote_test_zero(struct kunit *test)
{
	const unsigned long t0 = PROMOTE_TEST_T0;
	struct numa_promote_window win;
	unsigned int i;

	KUNIT_EXPECT_EQ(test, promote_limit_mbps_to_pages(0), 0UL);
	promote_test_init(&win, t0);
	for (i = 0; i < 3; i++) {
		unsigned long now = t0 + i * PROMOTE_WINDOW_JIFFIES;

		KUNIT_EXPECT_FALSE(test, promote_window_charge(&win, now, 0, 1));
		KUNIT_EXPECT_FALSE(test, promote_window_charge(&win, now, 0,
							       PROMOTE_TEST_THP));
		KUNIT_EXPECT_EQ(test, atomic_long_read(&win.used), 0L);
	}
}

/* Lowering the limit below what a window granted must not underflow. */
static void promote_test_lowered(struct kunit *test)
{
	const unsigned long t0 = PROMOTE_TEST_T0;
	struct numa_promote_window win;

	promote_test_init(&win, t0);
	KUNIT_EXPECT_TRUE(test, promote_window_charge(&win, t0, 1000, 1000));
	KUNIT_EXPECT_FALSE(test, promote_window_charge(&win, t0, 500, 1));
	KUNIT_EXPECT_FALSE(test, promote_window_charge(&win, t0, 0, 1));
	KUNIT_EXPECT_TRUE(test, promote_window_charge(&win, t0, 1001, 1));
}

static void promote_test_wrap(struct kunit *test)
{
	/* A window that opens half a second before jiffies wrap */
	const unsigned long t0 = ULONG_MAX - PROMOTE_WINDOW_JIFFIES / 2;
	const unsigned long end = t0 + PROMOTE_WINDOW_JIFFIES;
	const unsigned long limit = 10;
	struct numa_promote_window win;

	promote_test_init(&win, t0);
	KUNIT_EXPECT_TRUE(test, promote_window_charge(&win, t0, limit, limit));
	KUNIT_EXPECT_EQ(test, promote_window_end(&win), end);
	KUNIT_EXPECT_LT(test, end, t0);

	/* The window goes on across the wrap ... */
	KUNIT_EXPECT_FALSE(test, promote_window_charge(&win, ULONG_MAX, limit, 1));
	KUNIT_EXPECT_FALSE(test, promote_window_charge(&win, 0, limit, 1));
	KUNIT_EXPECT_FALSE(test, promote_window_charge(&win, end - 1, limit, 1));
	KUNIT_EXPECT_EQ(test, win.start, t0);

	/* ... and ends one window length after it opened. */
	KUNIT_EXPECT_TRUE(test, promote_window_charge(&win, end, limit, 1));
	KUNIT_EXPECT_EQ(test, win.start, end);
}

/* Callers that read the time just before the window opened stay in it. */
static void promote_test_late_caller(struct kunit *test)
{
	const unsigned long t0 = PROMOTE_TEST_T0, limit = 10;
	const unsigned long earliest = t0 - PROMOTE_WINDOW_JIFFIES + 1;
	struct numa_promote_window win;

	promote_test_init(&win, t0);
	KUNIT_EXPECT_TRUE(test, promote_window_charge(&win, t0, limit, limit));
	KUNIT_EXPECT_FALSE(test, promote_window_charge(&win, t0 - 1, limit, 1));
	KUNIT_EXPECT_FALSE(test, promote_window_charge(&win, earliest, limit,
						       1));
	KUNIT_EXPECT_EQ(test, win.start, t0);
	KUNIT_EXPECT_EQ(test, atomic_long_read(&win.used), (long)limit);
}

/*
 * A node left alone for so long that jiffies moved more than half their
 * range: time_after() would see its window start in the future, but the
 * window is over.
 */
static void promote_test_long_idle(struct kunit *test)
{
	const unsigned long t0 = PROMOTE_TEST_T0, limit = 10;
	const unsigned long later = t0 + ULONG_MAX / 2 + PROMOTE_WINDOW_JIFFIES;
	struct numa_promote_window win;

	promote_test_init(&win, t0);
	KUNIT_EXPECT_TRUE(test, promote_window_charge(&win, t0, limit, limit));
	KUNIT_EXPECT_TRUE(test, time_before(later, t0));
	KUNIT_EXPECT_TRUE(test, promote_window_charge(&win, later, limit, 1));
	KUNIT_EXPECT_EQ(test, win.start, later);
}

/*
 * One caller at a time opens a window, and only one that is over: callers
 * that find another one opening it charge the window they saw, and an
 * opener that comes second leaves the new window alone.
 */
static void promote_test_open_once(struct kunit *test)
{
	const unsigned long t0 = PROMOTE_TEST_T0, limit = 10;
	const unsigned long t1 = t0 + PROMOTE_WINDOW_JIFFIES;
	struct numa_promote_window win;

	promote_test_init(&win, t0);
	KUNIT_EXPECT_TRUE(test, promote_window_charge(&win, t0, limit, limit));

	/* Another caller is opening the next window; this one does not wait. */
	set_bit(PROMOTE_WINDOW_OPENING, &win.flags);
	KUNIT_EXPECT_FALSE(test, promote_window_charge(&win, t1, limit, 1));
	KUNIT_EXPECT_EQ(test, win.start, t0);
	clear_bit(PROMOTE_WINDOW_OPENING, &win.flags);

	KUNIT_EXPECT_TRUE(test, promote_window_charge(&win, t1, limit, 3));
	KUNIT_EXPECT_EQ(test, win.start, t1);

	/* A caller that saw the old window opens nothing now. */
	promote_window_open(&win, t1 + 1);
	KUNIT_EXPECT_EQ(test, win.start, t1);
	KUNIT_EXPECT_EQ(test, atomic_long_read(&win.used), 3L);
	KUNIT_EXPECT_EQ(test, win.flags, 0UL);
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
	atomic_long_t granted;
	atomic_t running;
	struct completion go;
	struct completion done;
};

static int promote_test_racer(void *data)
{
	struct promote_test_race *race = data;
	unsigned long granted = 0;
	unsigned int i;

	wait_for_completion(&race->go);
	for (i = 0; i < PROMOTE_TEST_RACE_REQUESTS; i++) {
		unsigned long nr = promote_test_race_sizes[i %
				ARRAY_SIZE(promote_test_race_sizes)];

		if (promote_window_charge(&race->win, READ_ONCE(race->now),
					  PROMOTE_TEST_RACE_LIMIT, nr))
			granted += nr;
		cond_resched();
	}
	atomic_long_add(granted, &race->granted);
	if (atomic_dec_and_test(&race->running))
		complete(&race->done);
	return 0;
}

/*
 * Several threads hammer one window each second, all starting together
 * when the last window has ended, so that they also race to open the next
 * one.  Each second the window is filled exactly to the limit, never past
 * it.  The seconds cross the wrap of jiffies.
 */
static void promote_test_concurrent(struct kunit *test)
{
	const unsigned long t0 = 0UL - PROMOTE_TEST_RACE_WINDOWS / 2 *
				 PROMOTE_WINDOW_JIFFIES;
	struct promote_test_race *race;
	unsigned int w, i;

	race = kunit_kzalloc(test, sizeof(*race), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, race);
	promote_test_init(&race->win, t0);

	for (w = 0; w < PROMOTE_TEST_RACE_WINDOWS; w++) {
		unsigned int started = 0;

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
		KUNIT_EXPECT_EQ(test, race->win.start, race->now);
		KUNIT_EXPECT_EQ(test, (unsigned long)atomic_long_read(&race->granted),
				PROMOTE_TEST_RACE_LIMIT);
		KUNIT_EXPECT_EQ(test,
				(unsigned long)atomic_long_read(&race->win.used),
				PROMOTE_TEST_RACE_LIMIT);
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
	KUNIT_CASE(promote_test_open_once),
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
