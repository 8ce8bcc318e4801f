// SPDX-License-Identifier: GPL-2.0
/*
 * The promotion rate limit of each target node, shared by every path that
 * promotes pages from slower memory tiers: NUMA balancing in tiering mode
 * and kmmscand.
 */

/**
 * DOC: promotion rate limit
 *
 * Promotion costs the workload whose pages move: the copy, the locks and
 * the TLB flushes.  kernel.numa_balancing_rate_limit_mbps bounds it: at
 * most that many MB of candidate pages per second may be promoted to any
 * one node, whichever path asks.  Its first name,
 * kernel.numa_balancing_promote_rate_limit_MBps, reads and writes the same
 * value.
 *
 * Each target node counts its grants in windows of one second.  A window
 * opens with the first request after the previous one ended.  A request
 * that fits in what is left of the window is granted and charged whole; one
 * that does not fit is refused whole and charged nothing, since a folio is
 * promoted whole or not at all.  The window's count only grows by a
 * compare-and-exchange that checks the limit, so callers racing on a node
 * cannot push it past the limit.  Opening the next window zeroes the count
 * and then publishes its start; one caller at a time does it, and a caller
 * that still sees the old window charges its request to whichever count it
 * finds, which can only make it stricter.
 *
 * A refused caller can learn from numa_promote_window_end() when requests
 * to the node may be granted again, and leave the node alone until then.
 */

#include <linux/atomic.h>
#include <linux/bitops.h>
#include <linux/build_bug.h>
#include <linux/init.h>
#include <linux/jiffies.h>
#include <linux/limits.h>
#include <linux/memory-tiers.h>
#include <linux/mm.h>
#include <linux/mmzone.h>
#include <linux/overflow.h>
#include <linux/sysctl.h>
#include <linux/vmstat.h>

/* The limit is a rate per second: each window lasts one second. */
#define PROMOTE_WINDOW_JIFFIES		HZ

/* Bit of numa_promote_window.flags held while the next window opens. */
#define PROMOTE_WINDOW_OPENING		0

/* The limit is set in MB (2^20 bytes) per second. */
#define PROMOTE_LIMIT_MB_SHIFT		20

/*
 * The default, in MB/s per target node: 64 GiB/s, more than any memory
 * node copies today, so that promotion is only throttled when the
 * administrator asks for it.  It is the default NUMA balancing has always
 * had.
 */
#define PROMOTE_LIMIT_DEFAULT_MBPS	65536

static unsigned int numa_promote_rate_limit_mbps = PROMOTE_LIMIT_DEFAULT_MBPS;

/*
 * The limit in pages per window for @mbps, saturated at LONG_MAX so that a
 * window's count, which stays at or below it, never overflows.
 */
static unsigned long promote_limit_mbps_to_pages(unsigned int mbps)
{
	unsigned long pages;

	BUILD_BUG_ON(PAGE_SHIFT > PROMOTE_LIMIT_MB_SHIFT);
	if (check_shl_overflow((unsigned long)mbps,
			       PROMOTE_LIMIT_MB_SHIFT - PAGE_SHIFT, &pages) ||
	    pages > LONG_MAX)
		return LONG_MAX;
	return pages;
}

/*
 * Whether @now falls in the window that opened at @start.  A caller that
 * read jiffies just before another one opened the window sees @now a
 * little before @start: that is still the current window.  Any @now from
 * one window length on, including one so far past @start that the
 * difference wrapped, is past it.
 */
static bool promote_window_current(unsigned long start, unsigned long now)
{
	return time_in_range_open(now, start - PROMOTE_WINDOW_JIFFIES,
				  start + PROMOTE_WINDOW_JIFFIES);
}

/* Open a window at @now, unless another caller is opening or has opened one. */
static void promote_window_open(struct numa_promote_window *win,
				unsigned long now)
{
	if (test_and_set_bit_lock(PROMOTE_WINDOW_OPENING, &win->flags))
		return;
	if (!promote_window_current(READ_ONCE(win->start), now)) {
		atomic_long_set(&win->used, 0);
		/* Whoever sees the new start sees the count zeroed. */
		smp_store_release(&win->start, now);
	}
	clear_bit_unlock(PROMOTE_WINDOW_OPENING, &win->flags);
}

/*
 * Charge @nr pages to @win at time @now if they fit under @limit pages in
 * the current window, opening a new window first if the last one ended.
 * Returns whether they were granted; a refused request charges nothing.
 */
static bool promote_window_charge(struct numa_promote_window *win,
				  unsigned long now, unsigned long limit,
				  unsigned long nr)
{
	unsigned long start;
	long used;

	/* Pairs with promote_window_open(): a new start has a zeroed count. */
	start = smp_load_acquire(&win->start);
	if (!promote_window_current(start, now))
		promote_window_open(win, now);

	used = atomic_long_read(&win->used);
	do {
		/* The limit may have been lowered below what was granted. */
		if ((unsigned long)used > limit || nr > limit - used)
			return false;
	} while (!atomic_long_try_cmpxchg(&win->used, &used, used + nr));
	return true;
}

/* When the window current in @win ends. */
static unsigned long promote_window_end(const struct numa_promote_window *win)
{
	return READ_ONCE(win->start) + PROMOTE_WINDOW_JIFFIES;
}

/**
 * numa_promote_limit_pages - the promotion rate limit in pages
 *
 * Return: how many pages may be promoted to each node per second.
 */
unsigned long numa_promote_limit_pages(void)
{
	return promote_limit_mbps_to_pages(READ_ONCE(numa_promote_rate_limit_mbps));
}

/**
 * numa_promote_allowed - ask the rate limit to promote pages to a node
 * @pgdat: the node the pages would be promoted to
 * @nr: the number of pages, folio_nr_pages() of the candidate folio
 *
 * Count the @nr pages as promotion candidates of @pgdat (pgpromote_candidate)
 * and charge them to its current window if they fit in it.  Ask before
 * isolating the folio: a refused folio must be left where it is.
 *
 * Context: Any context; does not sleep.
 * Return: true if the pages may be promoted, false if they are over the
 * limit (and were not charged).
 */
bool numa_promote_allowed(struct pglist_data *pgdat, unsigned long nr)
{
#ifdef CONFIG_NUMA_BALANCING
	mod_node_page_state(pgdat, PGPROMOTE_CANDIDATE, nr);
#endif
	return promote_window_charge(&pgdat->promote_window, jiffies,
				     numa_promote_limit_pages(), nr);
}

/**
 * numa_promote_window_end - when a node's current rate limit window ends
 * @pgdat: the target node
 *
 * A caller refused by numa_promote_allowed() may leave the node alone until
 * then rather than offer it more candidates that would be refused too.  If
 * the time returned is already past, the next request opens a new window.
 *
 * Return: the jiffies at which the window current at the call ends.
 */
unsigned long numa_promote_window_end(struct pglist_data *pgdat)
{
	return promote_window_end(&pgdat->promote_window);
}

#ifdef CONFIG_SYSCTL
/*
 * Both names read and write the same value, in MB/s per target node.  The
 * range is the one the value always had: 0, which promotes nothing, to
 * INT_MAX, which is more than any machine can copy.
 */
static struct ctl_table numa_promote_limit_sysctls[] = {
	{
		.procname	= "numa_balancing_rate_limit_mbps",
		.data		= &numa_promote_rate_limit_mbps,
		.maxlen		= sizeof(unsigned int),
		.mode		= 0644,
		.proc_handler	= proc_douintvec_minmax,
		.extra1		= SYSCTL_ZERO,
		.extra2		= SYSCTL_INT_MAX,
	},
#ifdef CONFIG_NUMA_BALANCING
	/* The first name, from NUMA balancing: it is ABI, keep it. */
	{
		.procname	= "numa_balancing_promote_rate_limit_MBps",
		.data		= &numa_promote_rate_limit_mbps,
		.maxlen		= sizeof(unsigned int),
		.mode		= 0644,
		.proc_handler	= proc_douintvec_minmax,
		.extra1		= SYSCTL_ZERO,
		.extra2		= SYSCTL_INT_MAX,
	},
#endif
};

static int __init numa_promote_limit_sysctl_init(void)
{
	register_sysctl_init("kernel", numa_promote_limit_sysctls);
	return 0;
}
late_initcall(numa_promote_limit_sysctl_init);
#endif /* CONFIG_SYSCTL */

#include "tests/promote_limit-kunit.h"
