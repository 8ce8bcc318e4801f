/* SPDX-License-Identifier: GPL-2.0 */
#undef TRACE_SYSTEM
#define TRACE_SYSTEM kmmscand

#if !defined(_TRACE_KMMSCAND_H) || defined(TRACE_HEADER_MULTI_READ)
#define _TRACE_KMMSCAND_H

#include <linux/kmmscand.h>
#include <linux/tracepoint.h>

/* Export the enum values so that user space can decode the records */
TRACE_DEFINE_ENUM(KMMSCAND_SKIP_HUGETLB);
TRACE_DEFINE_ENUM(KMMSCAND_SKIP_PFNMAP);
TRACE_DEFINE_ENUM(KMMSCAND_SKIP_UNMIGRATABLE);
TRACE_DEFINE_ENUM(KMMSCAND_SKIP_INACCESSIBLE);
TRACE_DEFINE_ENUM(KMMSCAND_SKIP_MLOCKED);
TRACE_DEFINE_ENUM(KMMSCAND_SKIP_SHARED_RO);
TRACE_DEFINE_ENUM(KMMSCAND_SKIP_MEMPOLICY);
TRACE_DEFINE_ENUM(KMMSCAND_SKIP_LOCK_BUSY);
TRACE_DEFINE_ENUM(KMMSCAND_SKIP_LOCK_CONTENDED);
TRACE_DEFINE_ENUM(KMMSCAND_SKIP_STOPPING);
TRACE_DEFINE_ENUM(KMMSCAND_SKIP_RATE_LIMITED);
TRACE_DEFINE_ENUM(KMMSCAND_SKIP_COLD);
TRACE_DEFINE_ENUM(KMMSCAND_SKIP_NO_SLOW_TIER);
TRACE_DEFINE_ENUM(KMMSCAND_SKIP_PMD_OLD);
TRACE_DEFINE_ENUM(KMMSCAND_SKIP_MM_IDLE);
TRACE_DEFINE_ENUM(KMMSCAND_SKIP_NODE_FULL);
TRACE_DEFINE_ENUM(KMMSCAND_SKIP_MM_OPTED_OUT);
TRACE_DEFINE_ENUM(KMMSCAND_SKIP_MM_CGROUP_OFF);

TRACE_DEFINE_ENUM(KMMSCAND_PROMOTED);
TRACE_DEFINE_ENUM(KMMSCAND_PROMOTE_STALE);
TRACE_DEFINE_ENUM(KMMSCAND_PROMOTE_NO_ROOM);
TRACE_DEFINE_ENUM(KMMSCAND_PROMOTE_NO_TARGET);
TRACE_DEFINE_ENUM(KMMSCAND_PROMOTE_ISOLATE_FAILED);
TRACE_DEFINE_ENUM(KMMSCAND_PROMOTE_MIGRATE_FAILED);
TRACE_DEFINE_ENUM(KMMSCAND_PROMOTE_DROPPED);
TRACE_DEFINE_ENUM(KMMSCAND_PROMOTE_RATE_LIMITED);

#define kmmscand_show_skip_reason(reason)				\
	__print_symbolic(reason,					\
		{ KMMSCAND_SKIP_HUGETLB,	"hugetlb" },		\
		{ KMMSCAND_SKIP_PFNMAP,		"pfnmap_mixedmap_io" },	\
		{ KMMSCAND_SKIP_UNMIGRATABLE,	"unmigratable" },	\
		{ KMMSCAND_SKIP_INACCESSIBLE,	"inaccessible" },	\
		{ KMMSCAND_SKIP_MLOCKED,	"mlocked" },		\
		{ KMMSCAND_SKIP_SHARED_RO,	"shared_ro" },		\
		{ KMMSCAND_SKIP_MEMPOLICY,	"mempolicy" },		\
		{ KMMSCAND_SKIP_LOCK_BUSY,	"mmap_lock_busy" },	\
		{ KMMSCAND_SKIP_LOCK_CONTENDED,	"mmap_lock_contended" },\
		{ KMMSCAND_SKIP_STOPPING,	"stopping" },		\
		{ KMMSCAND_SKIP_RATE_LIMITED,	"rate_limited" },	\
		{ KMMSCAND_SKIP_COLD,		"cold" },		\
		{ KMMSCAND_SKIP_NO_SLOW_TIER,	"no_slow_tier" },	\
		{ KMMSCAND_SKIP_PMD_OLD,	"pmd_old" },		\
		{ KMMSCAND_SKIP_MM_IDLE,	"mm_idle" },		\
		{ KMMSCAND_SKIP_NODE_FULL,	"node_full" },		\
		{ KMMSCAND_SKIP_MM_OPTED_OUT,	"opted_out" },		\
		{ KMMSCAND_SKIP_MM_CGROUP_OFF,	"cgroup_off" })

#define kmmscand_show_result(result)					\
	__print_symbolic(result,					\
		{ KMMSCAND_PROMOTED,			"promoted" },	\
		{ KMMSCAND_PROMOTE_STALE,		"stale" },	\
		{ KMMSCAND_PROMOTE_NO_ROOM,		"no_room" },	\
		{ KMMSCAND_PROMOTE_NO_TARGET,		"no_target" },	\
		{ KMMSCAND_PROMOTE_ISOLATE_FAILED,	"isolate_failed" }, \
		{ KMMSCAND_PROMOTE_MIGRATE_FAILED,	"migrate_failed" }, \
		{ KMMSCAND_PROMOTE_DROPPED,		"dropped" },	\
		{ KMMSCAND_PROMOTE_RATE_LIMITED,	"rate_limited" })

/*
 * kmmscand_scan_start - a new scan of an mm begins
 * @mm: the mm
 * @start: the address the scan resumes from
 * @period_ms: the current scan period of the mm
 * @size_mb: how much address space this scan may cover
 */
TRACE_EVENT(kmmscand_scan_start,
	    TP_PROTO(struct mm_struct *mm, unsigned long start,
		     unsigned long period_ms, unsigned long size_mb),
	    TP_ARGS(mm, start, period_ms, size_mb),
	    TP_STRUCT__entry(__field(struct mm_struct *, mm)
			     __field(unsigned long, start)
			     __field(unsigned long, period_ms)
			     __field(unsigned long, size_mb)),
	    TP_fast_assign(__entry->mm = mm;
			   __entry->start = start;
			   __entry->period_ms = period_ms;
			   __entry->size_mb = size_mb;),
	    TP_printk("mm=%p start=0x%lx period_ms=%lu size_mb=%lu",
		      __entry->mm, __entry->start, __entry->period_ms,
		      __entry->size_mb)
);

/*
 * kmmscand_scan_end - a scan of an mm completed and its period and size
 * were updated
 * @mm: the mm
 * @end: where the next scan resumes (0 after the end of the address space)
 * @scanned: base pages mapped by the PTEs and PMDs examined
 * @accessed: accessed slow-tier base pages found
 * @primed: young slow-tier base pages of the regions the scan primed:
 *	activity for the new period, not candidates, and no part of @cur
 * @prev: X, the accessed count the previous scan left behind
 * @cur: @accessed after the min_accessed_pages threshold, the next X
 * @old_period_ms: scan period before the update
 * @new_period_ms: scan period after the update
 * @old_size_mb: scan size before the update
 * @new_size_mb: scan size after the update
 * @found: accessed slow-tier base pages found, those left for room, rate
 *	or heat included
 * @isolated: how many of @found were isolated for promotion; with
 *	@found, whether a scan that finds nothing next lengthens the period
 *	by the small step (see kmmscand_isolated_most())
 */
TRACE_EVENT(kmmscand_scan_end,
	    TP_PROTO(struct mm_struct *mm, unsigned long end,
		     unsigned long scanned, unsigned long accessed,
		     unsigned long primed,
		     unsigned long prev, unsigned long cur,
		     unsigned long old_period_ms, unsigned long new_period_ms,
		     unsigned long old_size_mb, unsigned long new_size_mb,
		     unsigned long found, unsigned long isolated),
	    TP_ARGS(mm, end, scanned, accessed, primed, prev, cur,
		    old_period_ms, new_period_ms, old_size_mb, new_size_mb,
		    found, isolated),
	    TP_STRUCT__entry(__field(struct mm_struct *, mm)
			     __field(unsigned long, end)
			     __field(unsigned long, scanned)
			     __field(unsigned long, accessed)
			     __field(unsigned long, primed)
			     __field(unsigned long, prev)
			     __field(unsigned long, cur)
			     __field(unsigned long, old_period_ms)
			     __field(unsigned long, new_period_ms)
			     __field(unsigned long, old_size_mb)
			     __field(unsigned long, new_size_mb)
			     __field(unsigned long, found)
			     __field(unsigned long, isolated)),
	    TP_fast_assign(__entry->mm = mm;
			   __entry->end = end;
			   __entry->scanned = scanned;
			   __entry->accessed = accessed;
			   __entry->primed = primed;
			   __entry->prev = prev;
			   __entry->cur = cur;
			   __entry->old_period_ms = old_period_ms;
			   __entry->new_period_ms = new_period_ms;
			   __entry->old_size_mb = old_size_mb;
			   __entry->new_size_mb = new_size_mb;
			   __entry->found = found;
			   __entry->isolated = isolated;),
	    TP_printk("mm=%p end=0x%lx scanned=%lu accessed=%lu primed=%lu X=%lu Y=%lu period_ms=%lu->%lu size_mb=%lu->%lu found=%lu isolated=%lu",
		      __entry->mm, __entry->end, __entry->scanned,
		      __entry->accessed, __entry->primed, __entry->prev,
		      __entry->cur,
		      __entry->old_period_ms, __entry->new_period_ms,
		      __entry->old_size_mb, __entry->new_size_mb,
		      __entry->found, __entry->isolated)
);

/*
 * kmmscand_skip - a part of the address space left out of a scan
 * @mm: the mm
 * @start: start of the range
 * @end: end of the range
 * @reason: why
 */
DECLARE_EVENT_CLASS(kmmscand_skip,
		    TP_PROTO(struct mm_struct *mm, unsigned long start,
			     unsigned long end,
			     enum kmmscand_skip_reason reason),
		    TP_ARGS(mm, start, end, reason),
		    TP_STRUCT__entry(__field(struct mm_struct *, mm)
				     __field(unsigned long, start)
				     __field(unsigned long, end)
				     __field(enum kmmscand_skip_reason, reason)),
		    TP_fast_assign(__entry->mm = mm;
				   __entry->start = start;
				   __entry->end = end;
				   __entry->reason = reason;),
		    TP_printk("mm=%p range=0x%lx-0x%lx reason=%s",
			      __entry->mm, __entry->start, __entry->end,
			      kmmscand_show_skip_reason(__entry->reason))
);

/* A whole VMA was left out of a scan */
DEFINE_EVENT(kmmscand_skip, kmmscand_skip_vma,
	     TP_PROTO(struct mm_struct *mm, unsigned long start,
		      unsigned long end, enum kmmscand_skip_reason reason),
	     TP_ARGS(mm, start, end, reason)
);

/*
 * The rest of a scan, from @start on, was put off until the next pass.
 * @end is the address the budget of the scan would have reached.
 */
DEFINE_EVENT(kmmscand_skip, kmmscand_skip_range,
	     TP_PROTO(struct mm_struct *mm, unsigned long start,
		      unsigned long end, enum kmmscand_skip_reason reason),
	     TP_ARGS(mm, start, end, reason)
);

/*
 * A PMD-sized region, or the part of one inside a VMA, was passed over:
 * its page table entries were not read.
 */
DEFINE_EVENT(kmmscand_skip, kmmscand_skip_region,
	     TP_PROTO(struct mm_struct *mm, unsigned long start,
		      unsigned long end, enum kmmscand_skip_reason reason),
	     TP_ARGS(mm, start, end, reason)
);

/*
 * A whole scan of an mm was passed over.  @start is where it would have
 * begun, @end where its budget would have reached.
 */
DEFINE_EVENT(kmmscand_skip, kmmscand_skip_mm,
	     TP_PROTO(struct mm_struct *mm, unsigned long start,
		      unsigned long end, enum kmmscand_skip_reason reason),
	     TP_ARGS(mm, start, end, reason)
);

/*
 * kmmscand_migrate - the outcome of one promotion candidate
 * @mm: the mm whose scan found the folio accessed
 * @pfn: first pfn of the folio when it was found
 * @src_nid: the slow-tier node the folio was on
 * @dst_nid: the target node, or the node whose kswapd was woken for
 *	KMMSCAND_PROMOTE_NO_ROOM, or NUMA_NO_NODE
 * @nr_pages: size of the folio in base pages
 * @result: what happened
 */
TRACE_EVENT(kmmscand_migrate,
	    TP_PROTO(struct mm_struct *mm, unsigned long pfn, int src_nid,
		     int dst_nid, unsigned long nr_pages,
		     enum kmmscand_promote_result result),
	    TP_ARGS(mm, pfn, src_nid, dst_nid, nr_pages, result),
	    TP_STRUCT__entry(__field(struct mm_struct *, mm)
			     __field(unsigned long, pfn)
			     __field(int, src_nid)
			     __field(int, dst_nid)
			     __field(unsigned long, nr_pages)
			     __field(enum kmmscand_promote_result, result)),
	    TP_fast_assign(__entry->mm = mm;
			   __entry->pfn = pfn;
			   __entry->src_nid = src_nid;
			   __entry->dst_nid = dst_nid;
			   __entry->nr_pages = nr_pages;
			   __entry->result = result;),
	    TP_printk("mm=%p pfn=0x%lx nid=%d->%d nr_pages=%lu result=%s",
		      __entry->mm, __entry->pfn, __entry->src_nid,
		      __entry->dst_nid, __entry->nr_pages,
		      kmmscand_show_result(__entry->result))
);

#endif /* _TRACE_KMMSCAND_H */

/* This part must be outside protection */
#include <trace/define_trace.h>
