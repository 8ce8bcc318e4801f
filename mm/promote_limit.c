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
 * most that many MB of pages per second may be promoted to any one node,
 * whichever path asks.  Its first name,
 * kernel.numa_balancing_promote_rate_limit_MBps, reads and writes the same
 * value.
 *
 * What is counted is grants, not candidates: a request that fits in what
 * is left of the node's window is granted and charged whole; one that does
 * not fit is refused whole and charged nothing, since a folio is promoted
 * whole or not at all, and a refused folio stays where it is, to be offered
 * again.  Counting refused candidates too would let a burst of large
 * folios that do not fit shut out the small ones that would.  Each path
 * counts its candidates itself: NUMA balancing's hot threshold follows
 * its own, in pgpromote_candidate, and must not move with another path's.
 *
 * Each target node counts its grants in windows of one second.  The start
 * of the current window and the pages granted in it are one 64-bit word,
 * changed only by compare-and-exchange: a window opens, with the first
 * request after the previous one ended, in the same exchange that charges
 * that request, so no grant can be lost to a window being opened (or
 * counted in one that was already over) by a racing caller.  A caller
 * whose jiffies were read just before another one opened the window
 * charges that window.
 *
 * The bound: the pages granted for a node in one window never exceed the
 * limit, so over any one second they stay below twice the limit (the end
 * of one window and the start of the next).  A lowered limit holds from
 * the next request charged to the node's count; what CPUs hold in their
 * stocks (below) may still be granted until the window ends.
 *
 * Hint faults come one page at a time on every CPU.  So that each of them
 * does not write the node's word, a CPU charges a stock of pages at a
 * time, at most PROMOTE_STOCK_PAGES, and grants the next requests of that
 * window for that node from its stock.  The stock is charged when it is
 * taken, so it never lets a window exceed the limit; what a CPU does not
 * use is lost with the window, or given back when the CPU turns to another
 * node.  The stocks of all CPUs together hold at most 1/PROMOTE_STOCK_SHARE
 * of the limit, so that at least the rest is always left to the CPUs that
 * need it.
 *
 * A refused caller can learn from numa_promote_window_end() when requests
 * to the node may be granted again, and leave the node alone until then.
 */

#include <linux/atomic.h>
#include <linux/build_bug.h>
#include <linux/cpumask.h>
#include <linux/init.h>
#include <linux/jiffies.h>
#include <linux/limits.h>
#include <linux/memory-tiers.h>
#include <linux/minmax.h>
#include <linux/mm.h>
#include <linux/mmzone.h>
#include <linux/overflow.h>
#include <linux/percpu.h>
#include <linux/sysctl.h>

/* The limit is a rate per second: each window lasts one second. */
#define PROMOTE_WINDOW_JIFFIES		HZ

/*
 * The window word: the low 32 bits of the jiffies at which the window
 * opened, above the pages granted in it.  32 bits of pages are 16 TiB per
 * second with 4 KiB pages, more than any limit that throttles anything.
 * 32 bits of jiffies wrap after 49 days at HZ=1000: a node left alone for
 * a multiple of that, to within a window, finds its old window current
 * again and is held to what was left of it for at most one second.
 */
#define PROMOTE_USED_BITS		32
#define PROMOTE_USED_MAX		U32_MAX

/* The limit is set in MB (2^20 bytes) per second. */
#define PROMOTE_LIMIT_MB_SHIFT		20

/*
 * The default, in MB/s per target node: 64 GiB/s, more than any memory
 * node copies today, so that promotion is only throttled when the
 * administrator asks for it.  It is the default NUMA balancing has always
 * had.
 */
#define PROMOTE_LIMIT_DEFAULT_MBPS	65536

/*
 * PROMOTE_STOCK_PAGES: the most a CPU charges to a node's window at once,
 * 256 KiB with 4 KiB pages.  Base-page hint faults then write the node's
 * word once in 64, as NUMA balancing's per-CPU vmstat deltas used to
 * reach the node's count in batches; a THP is charged on its own.
 *
 * PROMOTE_STOCK_SHARE: the stocks of all possible CPUs hold at most this
 * fraction of the limit, so that pages stranded in the stocks of CPUs
 * that stopped asking cannot keep the others much below the limit.  With
 * a limit too low for a stock of at least two pages per CPU, every
 * request is charged on its own.
 */
#define PROMOTE_STOCK_PAGES		64
#define PROMOTE_STOCK_SHARE		8

/**
 * struct promote_stock - pages a CPU charged to a window and not used yet
 * @win: the window charged, NULL if none
 * @start: the low 32 bits of the jiffies at which that window opened
 * @left: pages of the stock not granted yet
 */
struct promote_stock {
	struct numa_promote_window *win;
	u32 start;
	unsigned int left;
};

static DEFINE_PER_CPU(struct promote_stock, promote_stock);

static unsigned int numa_promote_rate_limit_mbps = PROMOTE_LIMIT_DEFAULT_MBPS;

/*
 * The limit in pages per window for @mbps, saturated at LONG_MAX so that
 * callers comparing counts with it cannot overflow.
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

static u64 promote_word(u32 start, u32 used)
{
	return (u64)start << PROMOTE_USED_BITS | used;
}

static u32 promote_word_start(u64 word)
{
	return word >> PROMOTE_USED_BITS;
}

static u32 promote_word_used(u64 word)
{
	return (u32)word;
}

/*
 * Whether @now falls in the window that opened at @start.  A caller that
 * read jiffies just before another one opened the window sees @now a
 * little before @start: that is still the current window.  Any @now from
 * one window length on is past it.
 */
static bool promote_window_current(u32 start, unsigned long now)
{
	return (u32)((u32)now - start + PROMOTE_WINDOW_JIFFIES) <
	       2 * PROMOTE_WINDOW_JIFFIES;
}

/*
 * Charge @nr pages to @win at time @now if they fit under @limit pages in
 * the current window, opening a new window in the same exchange if the
 * last one ended.  Returns whether they were granted, and in @start the
 * window they were charged to; a refused request charges nothing, but
 * still opens the window, so that numa_promote_window_end() tells the
 * caller when to ask again.
 */
static bool promote_window_charge(struct numa_promote_window *win,
				  unsigned long now, unsigned long limit,
				  unsigned long nr, u32 *start)
{
	u64 old = atomic64_read(&win->word), new;
	bool granted;

	limit = min_t(unsigned long, limit, PROMOTE_USED_MAX);
	do {
		u32 s = promote_word_start(old), used = promote_word_used(old);

		if (!promote_window_current(s, now)) {
			s = (u32)now;
			used = 0;
		}
		/* The limit may have been lowered below what was granted. */
		granted = used <= limit && nr <= limit - used;
		new = promote_word(s, granted ? used + nr : used);
		/* A refusal in the current window writes nothing. */
		if (new == old)
			break;
	} while (!atomic64_try_cmpxchg(&win->word, &old, new));
	*start = promote_word_start(new);
	return granted;
}

/*
 * Give the unused pages of @stock back to its window, if that window is
 * still the current one of its node, and empty the stock.
 */
static void promote_stock_drain(struct promote_stock *stock)
{
	struct numa_promote_window *win = stock->win;
	u64 old, new;

	if (!win || !stock->left)
		goto empty;
	old = atomic64_read(&win->word);
	do {
		/* Another window opened since: the stock went with the old one. */
		if (promote_word_start(old) != stock->start)
			break;
		new = old - stock->left;
	} while (!atomic64_try_cmpxchg(&win->word, &old, new));
empty:
	stock->win = NULL;
	stock->left = 0;
}

/* The stock a CPU takes for a node's window under @limit pages a second */
static unsigned long promote_stock_pages(unsigned long limit,
					 unsigned int cpus)
{
	return min_t(unsigned long, PROMOTE_STOCK_PAGES,
		     limit / PROMOTE_STOCK_SHARE / cpus);
}

/*
 * Grant @nr pages for @win from @stock if the stock is for the current
 * window of @win and holds them.  Otherwise charge the window a new stock
 * of @batch pages that covers them, or, if there is no room for that or
 * @nr is not smaller than @batch, the @nr pages alone.
 */
static bool promote_stock_charge(struct promote_stock *stock,
				 struct numa_promote_window *win,
				 unsigned long now, unsigned long limit,
				 unsigned long nr, unsigned long batch)
{
	u32 start;

	if (stock->win == win && promote_window_current(stock->start, now) &&
	    stock->left >= nr) {
		stock->left -= nr;
		return true;
	}
	/* A THP is charged on its own, and leaves the stock alone. */
	if (batch <= nr)
		return promote_window_charge(win, now, limit, nr, &start);
	promote_stock_drain(stock);
	if (promote_window_charge(win, now, limit, batch, &start)) {
		stock->win = win;
		stock->start = start;
		stock->left = batch - nr;
		return true;
	}
	return promote_window_charge(win, now, limit, nr, &start);
}

/* When the window current in @win at @now ends; @now if none is. */
static unsigned long promote_window_end(const struct numa_promote_window *win,
					unsigned long now)
{
	u32 start = promote_word_start(atomic64_read(&win->word));

	if (!promote_window_current(start, now))
		return now;
	return now + (u32)(start + PROMOTE_WINDOW_JIFFIES - (u32)now);
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
 * Grant the @nr pages if they fit in the current window of @pgdat, and
 * charge them to it.  A refused folio must be left where it is.
 *
 * Context: Task context; does not sleep.
 * Return: true if the pages may be promoted, false if they are over the
 * limit (and were not charged).
 */
bool numa_promote_allowed(struct pglist_data *pgdat, unsigned long nr)
{
	unsigned long limit = numa_promote_limit_pages();
	bool granted;

	granted = promote_stock_charge(get_cpu_ptr(&promote_stock),
				       &pgdat->promote_window, jiffies, limit,
				       nr, promote_stock_pages(limit,
							       num_possible_cpus()));
	put_cpu_ptr(&promote_stock);
	return granted;
}

/**
 * numa_promote_window_end - when a node's current rate limit window ends
 * @pgdat: the target node
 *
 * A caller refused by numa_promote_allowed() may leave the node alone until
 * then rather than offer it more candidates that would be refused too.  If
 * the time returned is not in the future, the next request opens a new
 * window.
 *
 * Return: the jiffies at which the window current at the call ends.
 */
unsigned long numa_promote_window_end(struct pglist_data *pgdat)
{
	return promote_window_end(&pgdat->promote_window, jiffies);
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
