// SPDX-License-Identifier: GPL-2.0
/*
 * kmmscand: find accessed folios on slow memory tiers by scanning PTE
 * Accessed bits from a kernel thread, and promote them to a top-tier node.
 */

/**
 * DOC: kmmscand overview
 *
 * On a machine whose memory comes in tiers (for instance CXL-attached or
 * otherwise slower, CPU-less NUMA nodes below the DRAM of the sockets), hot
 * data left on a slow node costs every access.  NUMA balancing in tiering
 * mode finds such data through hint faults that the application takes
 * itself.  kmmscand does the finding and the moving from a kernel thread
 * instead, so that the application pays neither the faults nor the copies.
 *
 * Every mm with a user address space is tracked in an &struct mm_slot from
 * exec() or fork() until its last user goes away, like khugepaged and KSM
 * do.  The slots are queued by when the next scan of each mm is due (see
 * "kmmscand scheduling"); the "kmmscand" thread sleeps until the first is
 * due, then scans the due ones, up to mms_to_scan per pass, each a step of
 * at most its share of pages_to_scan at a time.  A scan walks the page
 * tables of the mm under mmap_read_trylock() with walk_page_range(),
 * starting where the previous scan stopped and covering at most scan_size
 * bytes of address space.  VMAs whose folios cannot or must not move are
 * skipped whole (see kmmscand_vma_skip()).
 *
 * For each present PTE, and each PMD-mapped THP, whose folio sits on a node
 * that is not top tier, the Accessed bit is tested and cleared with MMU
 * notifier semantics.  Reclaim relies on that bit, so a young entry leaves
 * its mark in the folio (PG_young, and PG_idle cleared) exactly as DAMON
 * and idle page tracking do; folio_referenced() consumes it.  Folios on
 * top-tier nodes are not touched at all.
 *
 * The Accessed bits that slow-tier memory has before kmmscand first looks
 * at it tell when it was populated, not whether it is in use.  So each
 * PMD-sized region of an mm keeps a small history (see "kmmscand region
 * history" below), and the first visit to a region with slow-tier memory
 * in it only clears the bits.  After that, an accessed slow-tier folio in
 * the region is a promotion candidate.  The same history lets scans pass
 * over regions that stay cold.
 *
 * Candidates are pinned with a reference and queued in a bounded batch.
 * When it fills up, and at the end of a scan step, the thread isolates it
 * under the mmap_lock, gives the lock up, migrates the batch with one call
 * (sharing it with migration workers, see "kmmscand migration workers")
 * and takes the walk up again where it stopped (see
 * kmmscand_isolate_batch()).  The target is the
 * target_node knob if it is set, otherwise the top-tier node nearest to
 * where the owner of the mm last ran that has free pages above its high
 * watermark, within the owner's cpuset.  Room is checked for the batch as
 * a whole, so a batch never takes the node below that watermark.  When
 * the node has no room, kmmscand backs off from it for a while, during
 * which no mm that can only promote to it is scanned, and wakes its
 * kswapd once, so that demotion can make room; back-offs grow while the
 * node stays full (see kmmscand_node_full()).  Accessed pages that no
 * node had room for do not count as activity, so the scan period of the
 * mm lengthens rather than keeping it at its shortest.
 *
 * The period and size of the next scan of an mm adapt to what the previous
 * two scans found, see kmmscand_update_scan_state().  A new mm is first
 * scanned scan_delay_ms after its exec or fork.  A scan that could walk no
 * VMA learns nothing: it leaves the period alone, and the next scan comes
 * after the shortest period (see kmmscand_end_scan()).
 *
 * Locking.  Nesting, where locks nest at all, is in the order listed.
 *
 * - kmmscand_mutex serialises knob writes and the start and stop of the
 *   thread.  The thread never takes it, so kthread_stop() under it cannot
 *   deadlock.
 * - kmmscand_tuning_lock (a seqlock) lets the thread read a consistent
 *   snapshot of the scan period and size ranges and of min_accessed_pages;
 *   writers take it inside kmmscand_mutex.
 * - The owner's task_lock and the cpuset callback lock are taken briefly,
 *   with no other kmmscand lock held and before the mmap_lock, to sample
 *   where the owner may allocate and which memory policy it runs under.
 * - mmap_lock of the scanned mm, for read, with trylock only.  It is held
 *   across the walk and the isolation of the batch, which keeps the VMAs
 *   recorded with the candidates valid, and is given up before the batch
 *   is migrated.  The walk gives up the lock, and drops its batch, as soon
 *   as a writer waits.
 * - The page table lock of the PMD or PTE table being walked, for the
 *   Accessed bit test and for pinning the folio.  It is never held across
 *   migration, which takes the LRU and folio locks itself.
 * - kmmscand_mm_lock (a spinlock) protects the slot hash, the queue of
 *   slots by due time and the slot the thread holds.
 *   The thread takes it with no other lock held; nothing sleeps under it.
 *   The slot the thread holds, out of the queue, belongs to the thread:
 *   __kmmscand_exit() leaves it alone and the thread frees it once its mm
 *   has no users.  Of the fields of a slot, the lock covers the hash and
 *   queue linkage and, while the slot is queued, its due time; the others
 *   are only used by the thread.
 *
 * Every access to the address space of an mm happens between a successful
 * mmget_not_zero() and the matching mmput_async(), so an exiting mm is
 * never scanned; the slot's mmgrab() only keeps the &struct mm_struct
 * itself alive for the hash and the mm_users check.
 */

/**
 * DOC: kmmscand region history
 *
 * Most of the memory of a large machine is cold most of the time, and
 * reading every PTE of it on every scan costs CPU in proportion to what is
 * mapped rather than to what is hot.  kmmscand therefore remembers, per
 * PMD-sized region (2 MiB with 4 KiB pages) of each mm, what the scans of
 * the region found, and applies KSM's smart scan schedule to it
 * (smart_scan_skips(), shared with mm/ksm.c):
 *
 * - A region never visited before is read, and the Accessed bits of its
 *   slow-tier folios are only cleared: they tell when the memory was
 *   populated.  The same holds for a region whose last read found no
 *   slow-tier folio at all, once slow-tier memory shows up in it, so that
 *   a buffer written once and left on the slow tier is not promoted
 *   whether it was populated before or after kmmscand first looked.
 * - Every later visit ages the region.  From SMART_SCAN_MIN_AGE on, a cold
 *   region is passed over for 1, 2, 4, ... and at most smart_scan_max_skips
 *   visits in a row, reading it once in between.  A read that finds an
 *   accessed slow-tier folio, or slow-tier memory that was not there
 *   before, starts the region over at age 0.
 * - A region whose last read found no slow-tier folio at all follows the
 *   same schedule: slow-tier memory only arrives there by demotion, which
 *   picks cold memory, or by an allocation that fell back because the top
 *   tier was full, where there is no room to promote to until demotion
 *   makes some.  Neither needs a quicker look than a cold region gets.
 *
 * An accessed page in a region that is being passed over keeps its
 * Accessed bit, and the next read of the region finds it: a region that
 * turns hot is seen within smart_scan_max_skips + 1 visits, and at the
 * next visit where the Accessed bit of PMD entries is used (see below).
 * Passing over a region costs one lookup and no scan budget (scan_size_mb
 * counts the address space actually read).
 *
 * The history of a region is 32 bits (KMMSCAND_HIST_*), kept in chunks of
 * KMMSCAND_HIST_CHUNK_REGIONS regions that are allocated on the first
 * visit to any region they cover and held in an xarray indexed by chunk.
 * With 4 KiB pages a chunk is 2 KiB and covers 1 GiB of address space, so
 * the history costs 2 KiB per GiB of address space that holds scanned
 * memory (a 1024th of the PTE tables that map it), plus one 576-byte
 * xarray node per 64 chunks.  It belongs to the mm's slot and is freed
 * with it.  Only the kmmscand thread reads or writes it.
 *
 * The history is charged to the memory cgroup of the mm.  A scan that
 * finds nothing mapped any more across whole regions forgets them, and
 * frees a chunk once none of its regions has a history left: what is kept
 * follows what the mm maps, and memory mapped there later is primed like
 * memory never seen.  A region only partly unmapped keeps its history,
 * and memory mapped into the rest of it takes that over, as does memory
 * mapped again at the same address before a scan has passed there.
 *
 * smart_scan=0 stops the passing over; the history is still kept, since
 * the first-visit rule needs it.
 */

/**
 * DOC: kmmscand heat
 *
 * While the top tier has room for what is accessed on the slow tier, every
 * accessed folio of a primed region is promoted, at the default min_heat.
 * When it does not, or the rate limit lets only part of it through, what is
 * promoted should be the hottest.  So each entry of a region that holds
 * slow-tier memory has a two-bit heat: up by one at each read of the region
 * that finds it accessed, down by one at each that does not
 * (kmmscand_heat_note()).  An accessed entry has its folio queued only if its
 * heat reaches the threshold of the nearest target node that takes
 * promotions when the scan step begins (kmmscand_targets_closed(),
 * kmmscand_heat_hot()).
 * The threshold is min_heat, 1 (every accessed folio) unless the administrator
 * asks for more, until the node refuses candidates for want of room or rate.
 * Then it rises by one, at most every KMMSCAND_HEAT_TIGHTEN_MS, up to
 * KMMSCAND_HEAT_MAX (found accessed at three reads in a row), and falls by one
 * per KMMSCAND_ROOM_WANTED_MS without a refusal, down to min_heat
 * (kmmscand_adapt_threshold()).  Room and rate differ in when it rises.
 * Room that a full node keeps is still there when later reads have
 * told the hotter folios apart, and a folio promoted in their place would have
 * to be demoted again to make room for them: a refusal for room raises the
 * threshold even when every candidate is as hot as it, as at the first reads of
 * a region, whose folios then wait for their next read.  Rate that a window
 * leaves unused is lost: a refusal for rate raises it only if some of the
 * folios that the scan step queued were hotter than the threshold, and a set
 * that is uniformly hot keeps taking what the rate allows.  The odds that a
 * page is found accessed at n reads in a row fall the faster with n the colder
 * it is, so a higher threshold leaves the cold end of what is accessed on the
 * slow tier, in the spirit of the hot threshold that NUMA balancing adapts to
 * its rate limit.
 *
 * A PMD-mapped THP has one Accessed bit, and its heat is that of the first
 * entry of its region; a PTE-mapped large folio is queued when any of its
 * entries is hot enough.  Either way, a large folio is as hot as its
 * hottest page.
 *
 * The entry of each folio that kmmscand promotes is marked.  A marked
 * entry that maps a slow-tier folio again was demoted since: it starts
 * cold, and needs KMMSCAND_HEAT_PINGPONG before it is promoted again,
 * whatever the threshold, so that a folio that demotion picked as cold is
 * not moved back up by a single access.
 *
 * The heat of a region is three bits per entry, 192 bytes with 4 KiB
 * pages, allocated on the first read of the region as a primed one: about
 * 96 KiB per GiB of address space that held slow-tier memory.  It belongs
 * to the mm's slot and is freed with it, or with the history of its region
 * when that is forgotten, and is charged to the mm's memory cgroup; only
 * the kmmscand thread reads or writes it.
 */

/**
 * DOC: kmmscand and the Accessed bit of PMD entries
 *
 * Where the CPU sets the Accessed bit of a PMD entry that points to a PTE
 * table whenever it walks through it (arch_has_hw_nonleaf_pmd_young(), as
 * x86 does), a PMD entry that is still old since kmmscand cleared it says
 * that no entry of the table beneath was loaded into the TLB meanwhile.
 * A visit that reads a PTE table with slow-tier memory in it clears the
 * bit once it has read the table, under the lock of the table; a later
 * visit that finds it still old passes over the table without reading its
 * entries, as MGLRU's walk does.  Caveats:
 *
 * - Translations the TLB already holds are used without a walk, so they
 *   set neither bit; the flush that ends a scan step that cleared any bit
 *   (kmmscand_flush_tlb()) drops them, for both, and the paging-structure
 *   caches with them.  Until that flush, a PMD entry cached there while
 *   its bit was set lets the CPU walk to the PTEs, and set their bits,
 *   without setting the PMD's again.  kmmscand's own clears are followed
 *   by that flush, but MGLRU's aging clears the bit too, with no flush,
 *   and does not always read the table then.  So while MGLRU's walks may
 *   clear it (lru_gen_clears_pmd_young()), the bit can be stale until the
 *   next miss of the paging-structure caches in the table, and a table is
 *   passed over for an old PMD entry at most KMMSCAND_PMD_OLD_MAX_SKIPS
 *   visits in a row.  Otherwise it is passed over for as long as the
 *   entry stays old: what could make it stale after MGLRU is turned off
 *   ends with the first flush of a scan step of the mm that clears a bit.
 * - A PMD entry that maps a THP is a leaf: its Accessed bit is the THP's,
 *   tested and cleared as always, and never a reason to pass over.
 * - Secondary MMUs (KVM and other MMU notifier users) do not set the bit,
 *   so it is not used for an mm with MMU notifiers.
 * - Architectures without it, and x86 Xen PV guests, never use it; there
 *   the pmd_young knob reads 0 and only takes 0.
 *
 * - MGLRU's page table walk passes over PTE tables whose PMD entry is old
 *   too, so every clear by one walker hides accesses from the other until
 *   the table is used again.  kmmscand therefore leaves the bit alone on
 *   tables that hold no slow-tier memory, which it has no use for and
 *   which are most of what reclaim walks on the top tier; on a table that
 *   holds both, reclaim still finds the young PTEs through the rmap when
 *   it considers evicting their folios.  Clearing after the read rather
 *   than before loses an access made between the test of its PTE and the
 *   clear only if the page is not used again after the flush that ends
 *   the step, which is no hot page.
 *
 * A visit that passes over a PTE table for an old PMD entry ages the
 * region like a read that found nothing, and leaves the rest of its
 * history alone.  With smart scan, a region whose PMD bit is stale is
 * still read at least once every
 * (smart_scan_max_skips + 1) * (KMMSCAND_PMD_OLD_MAX_SKIPS + 1) visits
 * while MGLRU clears the bit too.
 *
 * The same bit cuts smart scan's skips short.  All the regions that one
 * pass primed age in step, so a cold stretch of memory is read in the
 * same visit, once every smart_scan_max_skips + 1; when such a stretch
 * turns hot, as the working set of a program that moves from one phase
 * to the next does, waiting for that visit delays its promotion by up to
 * that many scan periods.  A visit that would pass over a cold region
 * whose PMD entry is young reads it instead.  A young entry above a table
 * whose slow-tier folios are cold is no reason: it was young at the last
 * read too (KMMSCAND_HIST_PMD_NOISY), for the top-tier folios of the same
 * table say, and the region keeps its skips until a read finds the entry
 * old again.  So reading regions out of turn costs one read per region
 * that turns hot or noisy.
 */

/**
 * DOC: kmmscand and idle mms
 *
 * The tasks of an mm that have not run since its last scan began cannot
 * have set an Accessed bit in its page tables since, so a new scan of it
 * would find nothing: kmmscand passes over the whole scan, and adapts the
 * scan period and size as that scan would have (an idle scan, Y = 0).  It
 * learns whether the mm ran from the same hint that MGLRU's page table
 * walks use, which the scheduler sets when it switches to the mm and each
 * walker tests and clears for itself (mm_usage_test_and_clear(),
 * MM_USAGE_KMMSCAND), and from the runtime of the threads of its owner,
 * which grows at every tick for a task that never leaves its CPU and so is
 * never switched to again, on every architecture (mm_cpumask(), which
 * would tell that the mm is loaded, is not maintained by all).  What it
 * misses is what MGLRU misses: accesses made to the memory of the mm by no
 * task of its own, such as a kernel thread working in the mm with
 * kthread_use_mm().  Such accesses are rare, and skip_idle_mm=0 turns the
 * skipping off.  A scan in progress is always finished.
 */

#define pr_fmt(fmt) "kmmscand: " fmt

#include <linux/bitfield.h>
#include <linux/bitops.h>
#include <linux/bsearch.h>
#include <linux/cpuset.h>
#include <linux/freezer.h>
#include <linux/hugetlb.h>
#include <linux/kmmscand.h>
#include <linux/kthread.h>
#include <linux/memcontrol.h>
#include <linux/memory.h>
#include <linux/memory-tiers.h>
#include <linux/mempolicy.h>
#include <linux/migrate.h>
#include <linux/mm.h>
#include <linux/mm_inline.h>
#include <linux/mmu_notifier.h>
#include <linux/page_idle.h>
#include <linux/pagewalk.h>
#include <linux/pid_namespace.h>
#include <linux/prctl.h>
#include <linux/rbtree.h>
#include <linux/seq_file.h>
#include <linux/sched/cputime.h>
#include <linux/sched/isolation.h>
#include <linux/sched/mm.h>
#include <linux/sched/rt.h>
#include <linux/sched/stat.h>
#include <linux/sched/task.h>
#include <linux/seqlock.h>
#include <linux/sizes.h>
#include <linux/sort.h>
#include <linux/swap.h>
#include <linux/sysfs.h>
#include <linux/task_work.h>
#include <linux/threads.h>
#include <linux/xarray.h>

#include <asm/tlbflush.h>

#define CREATE_TRACE_POINTS
#include <trace/events/kmmscand.h>

#include "internal.h"
#include "mm_slot.h"

/*
 * How the scan period and size of an mm adapt, see
 * kmmscand_update_scan_state().
 *
 * SCAN_PERIOD_TUNE_PERCENT: the step when two scans in a row agree (both
 * idle or both busy).  15% changes the period by 2x in about five scans:
 * one noisy scan cannot swing it, and a lasting change of behaviour is
 * still followed within seconds at the default period.
 */
#define SCAN_PERIOD_TUNE_PERCENT	15

/*
 * SCAN_PERIOD_CHANGE_SCALE: the shift applied to the period when the
 * activity of an mm appears (X = 0, Y > 0: shorter) or vanishes (X > 0,
 * Y = 0, and not because the last scan promoted it: longer).  A change of
 * regime deserves an order of magnitude: 8x takes the default period of
 * 2000 ms straight to either default clamp, so an mm that turns hot is
 * rescanned at once and one that turns idle stops costing CPU at once.
 */
#define SCAN_PERIOD_CHANGE_SCALE	3

/*
 * SCAN_SIZE_CHANGE_SCALE: the shift applied to the scan size when two
 * scans in a row agree.  Halving or doubling takes the default 4 GiB to
 * either default clamp (512 MiB, 16 GiB) in two or three scans.
 */
#define SCAN_SIZE_CHANGE_SCALE		1

/*
 * Knob defaults.
 *
 * KMMSCAND_SCAN_SLEEP_MS: the shortest sleep between two passes, so that
 * the thread rests at least 20 ms between them however many mms are due:
 * scans then start within 5% of the shortest default period (400 ms).
 */
#define KMMSCAND_SCAN_SLEEP_MS		20

/*
 * KMMSCAND_MMS_TO_SCAN: due mms scanned per pass at most.  Above the process
 * count of most machines, so that one pass scans every mm that is due, yet
 * bounded so that the thread still sleeps regularly with very many mms.
 */
#define KMMSCAND_MMS_TO_SCAN		4096

/*
 * KMMSCAND_PAGES_TO_SCAN: the base pages of address space that one pass
 * walks at most, shared among the mms due (see "kmmscand scheduling").
 * 256 MiB with 4 KiB pages: a scan of the default size (4 GiB) of one mm
 * alone takes 16 passes, 320 ms at the default sleep, which is less than
 * the shortest default period (400 ms), so one busy mm is scanned as
 * often as its period says; and a pass ends after a bounded walk however
 * large the mms that are due.
 *
 * KMMSCAND_STEP_MIN_PAGES: the least share of a pass that a due mm gets,
 * one PTE table, so that each makes progress however many are due.  A
 * pass smaller than that goes to the first mm due.
 */
#define KMMSCAND_PAGES_TO_SCAN		(SZ_256M >> PAGE_SHIFT)
#define KMMSCAND_STEP_MIN_PAGES		PTRS_PER_PTE

/*
 * KMMSCAND_MM_SCAN_PERIOD_MS: the period a new mm starts with, from which
 * the adaptation departs after its first scan.  The default period of the
 * original proposal; the change scales below are sized against it.
 */
#define KMMSCAND_MM_SCAN_PERIOD_MS	2000

/*
 * KMMSCAND_SCAN_DELAY_MS: how long after exec or fork a new mm is first
 * scanned.  Most short lived processes are gone by then.  A first scan
 * before a process has put its memory in place finds nothing, and
 * lengthens the period that the scan of that memory then waits for;
 * shorter delays measured no better (see the changelog).
 */
#define KMMSCAND_SCAN_DELAY_MS		2000

/*
 * KMMSCAND_SCAN_PERIOD_MIN_MS: Accessed bits need time to be set again
 * after they are cleared; scanning an mm more often than this finds mostly
 * the same hot pages at a higher cost.
 */
#define KMMSCAND_SCAN_PERIOD_MIN_MS	400

/*
 * KMMSCAND_SCAN_PERIOD_MAX_MS: an idle mm is still looked at every five
 * seconds, so a workload that turns hot waits at most that long before its
 * period collapses.
 */
#define KMMSCAND_SCAN_PERIOD_MAX_MS	5000

/*
 * KMMSCAND_SCAN_SIZE_MB: the first scan of an mm covers 4 GiB, the whole
 * heap of most processes, while a huge mm is covered over several scans.
 */
#define KMMSCAND_SCAN_SIZE_MB		4096

/*
 * KMMSCAND_SCAN_SIZE_MIN_MB: an idle mm still has 512 MiB looked at per
 * period, so that a hot spot anywhere in it is found within a bounded
 * number of periods.
 */
#define KMMSCAND_SCAN_SIZE_MIN_MB	512

/*
 * KMMSCAND_SCAN_SIZE_MAX_MB: a busy mm may have 16 GiB, four million PTEs,
 * walked in one scan; more would keep its mmap_lock held for too long.
 */
#define KMMSCAND_SCAN_SIZE_MAX_MB	16384

/*
 * KMMSCAND_MIN_ACCESSED_PAGES: a scan that finds fewer accessed slow-tier
 * pages than this (400 KiB with 4 KiB pages) saw noise, such as stacks and
 * library data that any running process touches, and counts as idle so
 * that such noise cannot hold the period at its minimum.
 */
#define KMMSCAND_MIN_ACCESSED_PAGES	100

/*
 * Limits of the knobs.
 *
 * KMMSCAND_PERIOD_FLOOR_MS: with HZ=100 a jiffy is 10 ms; a shorter period
 * cannot be honoured.
 */
#define KMMSCAND_PERIOD_FLOOR_MS	10

/*
 * KMMSCAND_PERIOD_LIMIT_MS: an mm scanned less often than hourly gets
 * promotions too late to matter.  Also the limit of scan_sleep_ms and of
 * scan_delay_ms: a longer sleep would defeat every per-mm period, and a
 * longer delay would leave a new process unscanned as long.  The shift by
 * SCAN_PERIOD_CHANGE_SCALE cannot overflow below this.
 */
#define KMMSCAND_PERIOD_LIMIT_MS	(60 * 60 * 1000UL)

/* KMMSCAND_SLEEP_FLOOR_MS: a zero sleep would make the thread busy-loop */
#define KMMSCAND_SLEEP_FLOOR_MS		1

/* KMMSCAND_PAGES_LIMIT: a pass as large as any address space */
#define KMMSCAND_PAGES_LIMIT		(ULONG_MAX >> PAGE_SHIFT)

/* KMMSCAND_MMS_LIMIT: there cannot be more mms than pids */
#define KMMSCAND_MMS_LIMIT		PID_MAX_LIMIT

/*
 * KMMSCAND_SIZE_FLOOR_MB: the unit of the size knobs.  Any budget makes
 * progress, since the next scan resumes where the last one stopped.
 */
#define KMMSCAND_SIZE_FLOOR_MB		1UL

/* KMMSCAND_SIZE_LIMIT_MB: no scan needs more than the largest user space */
#define KMMSCAND_SIZE_LIMIT_MB		(TASK_SIZE_MAX / SZ_1M)

/*
 * KMMSCAND_MIN_ACCESSED_LIMIT: a threshold above the number of pages the
 * largest possible scan covers could never be met.
 */
#define KMMSCAND_MIN_ACCESSED_LIMIT	(KMMSCAND_SIZE_LIMIT_MB * (SZ_1M / PAGE_SIZE))

/*
 * The promotion batch.
 *
 * KMMSCAND_BATCH_MAX: one PTE table's worth of small folios, so that a
 * fully hot page table is drained in one go.
 */
#define KMMSCAND_BATCH_MAX		512

/*
 * KMMSCAND_BATCH_PAGES: the most a batch isolates before it is migrated:
 * 16 MiB of copying is a few milliseconds, which bounds how long the
 * folios are off the LRU, out of reach of reclaim, compaction and memory
 * offlining.  A single folio larger than this is still accepted into an
 * empty batch.
 */
#define KMMSCAND_BATCH_PAGES		(SZ_16M >> PAGE_SHIFT)

/*
 * KMMSCAND_SLOTS_HASH_BITS: 1024 buckets keep the lookup in exit short with
 * tens of thousands of processes, for 8 KiB of memory (as khugepaged).
 */
#define KMMSCAND_SLOTS_HASH_BITS	10

/*
 * KMMSCAND_LRU_DRAIN_MS: an accessed folio still in a per-CPU LRU batch
 * cannot be isolated, and on a quiet CPU it can stay there indefinitely.
 * Draining all CPUs at most once a second bounds the cost of that, and how
 * long such a folio waits.
 */
#define KMMSCAND_LRU_DRAIN_MS		1000

/*
 * Backing off from a top-tier node that has no room, see
 * kmmscand_node_full().
 *
 * KMMSCAND_BACKOFF_MIN_MS: the first back-off.  kswapd, woken once when it
 * starts, demotes a batch's worth (KMMSCAND_BATCH_PAGES) in a fraction of
 * that even at a few hundred MB/s, so a node that demotion keeps room in
 * holds promotion back by little; and ten kswapd wakeups a second at most
 * cost nothing measurable.
 *
 * KMMSCAND_BACKOFF_MAX_MS: each back-off that ends with the node still
 * full is twice as long as the last, up to the longest default scan
 * period: a node with nothing to demote then costs one kswapd wakeup and
 * one short check per mm every five seconds.
 */
#define KMMSCAND_BACKOFF_MIN_MS		100
#define KMMSCAND_BACKOFF_MAX_MS		KMMSCAND_SCAN_PERIOD_MAX_MS

/*
 * KMMSCAND_ROOM_WANTED_MS: how long after kmmscand last found a top-tier
 * node full kswapd keeps the promotion watermark free there
 * (kmmscand_wants_room()).  Twice the longest back-off, so that a node
 * that stays full keeps its headroom from one back-off to the next.
 */
#define KMMSCAND_ROOM_WANTED_MS		(2 * KMMSCAND_BACKOFF_MAX_MS)

/*
 * Hottest first, see "kmmscand heat".
 *
 * KMMSCAND_HEAT_MAX: the heat of an entry counts the reads of its region
 * that found it accessed, up by one for each that did and down by one for
 * each that did not; two bits hold it.  It is also the highest threshold:
 * an entry found accessed at three reads in a row.
 *
 * KMMSCAND_HEAT_PINGPONG: the heat that an entry whose folio kmmscand
 * promoted, and which is back on the slow tier, needs before it is
 * promoted again: found accessed at two reads in a row, so that a folio
 * that demotion picked as cold is not moved back up by a single access.
 *
 * KMMSCAND_HEAT_TIGHTEN_MS: how often at most refusals raise the threshold
 * of a node.  A raise shows at the next read of the hot regions, which at
 * the shortest default scan period (400 ms) comes well within a second:
 * raising it faster would overshoot before the first raise took effect.
 * It comes down by one after KMMSCAND_ROOM_WANTED_MS without a refusal,
 * as kswapd's headroom does.
 */
#define KMMSCAND_HEAT_MAX		3
#define KMMSCAND_HEAT_PINGPONG		2
#define KMMSCAND_HEAT_TIGHTEN_MS	1000

/*
 * KMMSCAND_MIN_HEAT: the default of min_heat, the lowest threshold of
 * every node: 1 promotes any folio found accessed while the node has room
 * and rate, as NUMA balancing promotes on any hint fault while its target
 * has free space.  An administrator who would rather keep the room of the
 * top tier for what is accessed at two or three reads in a row, at the
 * cost of one or two scan periods before anything moves, sets it higher.
 */
#define KMMSCAND_MIN_HEAT		1

/*
 * KMMSCAND_NICE: the default nice level of the thread.  The thread does
 * the finding and the copying for every process it serves, so at nice 0
 * its share of a crowded CPU is that of one of them: with N busy tasks on
 * it, 1/(N + 1) of its time, and promotion falls as 1/N.  At -20 it
 * weighs as 86 nice-0 tasks (sched_prio_to_weight[]): a quarter of a CPU
 * shared with 256 busy tasks.  What it spends
 * is bounded by its own budget (pages_to_scan per pass, the scan periods
 * and sizes, the promotion rate limit); the nice level decides only how
 * soon it gets to spend it when every CPU is busy.
 */
#define KMMSCAND_NICE			(-20)

/*
 * Migration workers, see "kmmscand migration workers".
 *
 * KMMSCAND_MIGRATE_THREADS: the default of migrate_threads.  Copying is
 * most of what the thread does while it promotes, so the share of one CPU
 * that its nice level buys on a crowded machine caps promotion for every
 * process at once.  Four such shares lift that cap while bounding what
 * kmmscand can take from the machine's busy tasks to four of them.
 *
 * KMMSCAND_MIGRATE_THREADS_LIMIT: each worker keeps a batch of entries
 * (24 KiB) once it has been used; eight CPUs copy more than any rate limit
 * short of several GB/s lets through.
 *
 * KMMSCAND_COPY_MIN_PAGES: the least handed to a worker, 256 KiB: a
 * smaller batch costs about as much to hand over and account for as its
 * copy saves.
 */
#define KMMSCAND_MIGRATE_THREADS	4
#define KMMSCAND_MIGRATE_THREADS_LIMIT	8
#define KMMSCAND_COPY_MIN_PAGES		64

/*
 * KMMSCAND_COPY_DEPTH: jobs handed to each worker at most, one running and
 * one waiting, so that a worker runs the thread's hand-overs back to
 * back: a worker woken for each job first waits for the CPU time it ran
 * ahead of its share to be repaid, tens of milliseconds among 256 busy
 * tasks a CPU, and copies for a fraction of its share.  A job that waits
 * holds references to its folios, not isolations, for at most one job's
 * copy more.
 */
#define KMMSCAND_COPY_DEPTH		2

/*
 * Smart scan, see "kmmscand region history".
 *
 * KMMSCAND_SMART_SCAN_MAX_SKIPS: the default cap on how many visits in a
 * row pass over a cold region: KSM's.  At the longest default period (5 s)
 * a region that turns hot after a long cold spell is read again within
 * 45 s, while a cold region costs a ninth of what it did.
 */
#define KMMSCAND_SMART_SCAN_MAX_SKIPS	8

/*
 * KMMSCAND_NO_SLOW_SKIPS_SCALE: a region that held no slow-tier memory at
 * its last read may be passed over this many times as often as a cold one
 * (up to KMMSCAND_SMART_SCAN_SKIPS_LIMIT): it has nothing to promote until
 * some of its folios reach the slow tier, and they get there mostly by
 * demotion, which picked them as cold and after which they need
 * KMMSCAND_HEAT_PINGPONG reads before they are promoted again anyway.  A
 * top-tier working set, most of what a process maps on a machine whose
 * fast tier holds what is hot, then costs a quarter of the reads.
 */
#define KMMSCAND_NO_SLOW_SKIPS_SCALE	4

/*
 * KMMSCAND_SMART_SCAN_SKIPS_LIMIT: the largest smart_scan_max_skips.  At
 * the longest default period, 32 skips already leave a region that turns
 * hot unread for almost three minutes; a longer wait would make its
 * promotion too late to matter.
 */
#define KMMSCAND_SMART_SCAN_SKIPS_LIMIT	32

/*
 * The 32-bit history of a region.  A zero history is a region never
 * visited.
 *
 * KMMSCAND_HIST_AGE: visits since the region was last started over,
 * saturating.  Five bits: smart_scan_skips() reaches
 * KMMSCAND_SMART_SCAN_SKIPS_LIMIT from age 23 on.
 * KMMSCAND_HIST_SKIPS: visits still to pass over the region; six bits hold
 * KMMSCAND_SMART_SCAN_SKIPS_LIMIT.
 * KMMSCAND_HIST_PRIMED: the last read of the region found slow-tier folios
 * and cleared their Accessed bits, so a young entry now means an access.
 * KMMSCAND_HIST_NO_SLOW: the last read of the region found no slow-tier
 * folio.
 * KMMSCAND_HIST_PMD_OLD: visits in a row that passed over the PTE table of
 * the region because its PMD entry was old; three bits hold
 * KMMSCAND_PMD_OLD_MAX_SKIPS.
 * KMMSCAND_HIST_PMD_NOISY: the last read of the region found its PMD entry
 * young but no accessed slow-tier folio beneath it, so something else
 * sets that bit (top-tier folios of the same table, most likely), and a
 * young PMD entry does not recall the region from its skips.
 */
#define KMMSCAND_HIST_AGE		GENMASK(4, 0)
#define KMMSCAND_HIST_SKIPS		GENMASK(10, 5)
#define KMMSCAND_HIST_PRIMED		BIT(11)
#define KMMSCAND_HIST_NO_SLOW		BIT(12)
#define KMMSCAND_HIST_PMD_NOISY		BIT(13)
#define KMMSCAND_HIST_PMD_OLD		GENMASK(16, 14)

/*
 * KMMSCAND_HIST_CHUNK_REGIONS: histories are allocated this many regions
 * at a time: 2 KiB, which covers the 1 GiB that one PMD table maps with
 * 4 KiB pages, so that a densely used address space wastes nothing and a
 * sparse one at most 2 KiB per GiB it touches.
 */
#define KMMSCAND_HIST_CHUNK_REGIONS	512

/*
 * KMMSCAND_PMD_OLD_MAX_SKIPS: how many visits in a row may pass over a PTE
 * table because its PMD entry is old, while MGLRU's walks clear the bit
 * too.  The bit can be stale then (see "kmmscand and the Accessed bit of
 * PMD entries"), but only until the next TLB miss in the table, which a
 * table in use soon takes: reading the table at least every eighth visit
 * bounds the delay for one that is not.  Every
 * fourth visit, the bound first chosen, read each table of a large idle
 * mapping a second time within 20 s: half the PTEs examined there, for
 * no promotion sooner.
 */
#define KMMSCAND_PMD_OLD_MAX_SKIPS	7

/* kmmscand_region.index when the cursor is in no region */
#define KMMSCAND_NO_REGION		ULONG_MAX

/* Why a page table walk stopped early; returned from kmmscand_pmd_entry() */
#define KMMSCAND_WALK_FULL		1	/* the batch is full */
#define KMMSCAND_WALK_YIELD		2	/* give the mmap_lock up */

/**
 * struct kmmscand_range - a knob with its lower and upper clamp
 * @min: lower clamp
 * @init: the value a new mm starts with
 * @max: upper clamp
 *
 * min <= init <= max always holds.
 */
struct kmmscand_range {
	unsigned long min;
	unsigned long init;
	unsigned long max;
};

enum kmmscand_range_field {
	KMMSCAND_RANGE_MIN,
	KMMSCAND_RANGE_INIT,
	KMMSCAND_RANGE_MAX,
};

/**
 * struct kmmscand_tuning - the knobs that drive the adaptive scan
 * @period_ms: scan_period_min_ms, mm_scan_period_ms, scan_period_max_ms
 * @size_mb: scan_size_min_mb, scan_size_mb, scan_size_max_mb
 * @min_accessed: min_accessed_pages
 */
struct kmmscand_tuning {
	struct kmmscand_range period_ms;
	struct kmmscand_range size_mb;
	unsigned long min_accessed;
};

/**
 * struct kmmscand_scan_state - what the adaptive scan of an mm remembers
 * @period_ms: time from the end of one scan to the start of the next
 * @size_mb: address space one scan covers
 * @prev_accessed: X, the accessed slow-tier pages the last scan found,
 *	zero if that was below the threshold
 * @prev_isolated_most: the last scan isolated for promotion most of the
 *	accessed slow-tier pages it found, see kmmscand_isolated_most()
 */
struct kmmscand_scan_state {
	unsigned long period_ms;
	unsigned long size_mb;
	unsigned long prev_accessed;
	bool prev_isolated_most;
};

/**
 * struct kmmscand_mm_stats - what kmmscand did for one mm, since it was
 *	tracked, for /proc/<pid>/kmmscand
 * @scans: scans completed
 * @pte_scanned: base pages whose entries the scans examined
 * @accessed: accessed slow-tier base pages they found
 * @promoted: base pages the kmmscand thread migrated
 * @failed: base pages the kmmscand thread failed to migrate
 * @cpu_ns: CPU time of the kmmscand thread and its workers on the mm
 *
 * The thread updates them while it holds the slot.
 */
struct kmmscand_mm_stats {
	u64 scans;
	u64 pte_scanned;
	u64 accessed;
	u64 promoted;
	u64 failed;
	u64 cpu_ns;
};

/**
 * struct kmmscand_hist_chunk - the histories of KMMSCAND_HIST_CHUNK_REGIONS
 *	consecutive regions
 * @region: one history per region, see KMMSCAND_HIST_*
 */
struct kmmscand_hist_chunk {
	u32 region[KMMSCAND_HIST_CHUNK_REGIONS];
};

/**
 * struct kmmscand_heat - how hot the entries of one region have been
 * @lo: bit 0 of the heat of each entry, see KMMSCAND_HEAT_MAX
 * @hi: bit 1 of the heat of each entry
 * @promoted: kmmscand isolated the folio mapped by the entry to promote it
 *
 * A PMD-mapped THP has its heat in entry 0.
 */
struct kmmscand_heat {
	DECLARE_BITMAP(lo, PTRS_PER_PTE);
	DECLARE_BITMAP(hi, PTRS_PER_PTE);
	DECLARE_BITMAP(promoted, PTRS_PER_PTE);
};

/**
 * enum kmmscand_visit - what a visit does with a region
 * @KMMSCAND_VISIT_PRIME: read it and only clear the Accessed bits of its
 *	slow-tier folios
 * @KMMSCAND_VISIT_SCAN: read it and promote the accessed slow-tier folios
 * @KMMSCAND_VISIT_SKIP: pass over it
 */
enum kmmscand_visit {
	KMMSCAND_VISIT_PRIME,
	KMMSCAND_VISIT_SCAN,
	KMMSCAND_VISIT_SKIP,
};

/**
 * struct kmmscand_region - the region that the cursor of an mm is in
 * @index: its address >> PMD_SHIFT, or KMMSCAND_NO_REGION
 * @hist: its history; NULL if that could not be allocated
 * @heat: with KMMSCAND_VISIT_SCAN, the heat of its entries; NULL if that
 *	could not be allocated
 * @visit: what this visit does with it
 * @reason: why it is passed over, with KMMSCAND_VISIT_SKIP
 * @slow: a slow-tier folio was seen in it
 * @accessed: an accessed slow-tier folio was found in it
 * @pmd_bit: the Accessed bit of its PMD entry can be used: pmd_young is
 *	on and the entry points to a PTE table
 * @pmd_young: with @pmd_bit, that bit was set when the visit began
 * @clear_pmd: the Accessed bit of its PMD entry is to be cleared once its
 *	PTE table has been read, if slow-tier memory was seen in it
 *
 * A visit can span scan steps and VMAs: it ends when the cursor enters
 * another region or wraps.
 */
struct kmmscand_region {
	unsigned long index;
	u32 *hist;
	struct kmmscand_heat *heat;
	enum kmmscand_visit visit;
	enum kmmscand_skip_reason reason;
	bool slow;
	bool accessed;
	bool pmd_bit;
	bool pmd_young;
	bool clear_pmd;
};

/**
 * struct kmmscand_mm_slot - kmmscand's view of one mm
 * @slot: hash linkage and the mm (which the slot mmgrab()s)
 * @due: node in the queue of slots by @next_scan, while the thread does
 *	not hold the slot (see "kmmscand scheduling")
 * @address: where the scan in progress, or the next one, resumes
 * @next_scan: jiffies at which the next scan may start
 * @scan_left: bytes of address space the scan in progress may still cover;
 *	zero when no scan is in progress
 * @scanned: base pages examined by the scan in progress
 * @accessed: accessed slow-tier base pages found by the scan in progress,
 *	less those that no node had room for
 * @primed: young slow-tier base pages found by the scan in progress in
 *	regions it primed
 * @found: accessed slow-tier base pages found by the scan in progress,
 *	those that no node had room for included
 * @isolated: how many of @found the scan in progress isolated for
 *	promotion
 * @eligible: the scan in progress walked a VMA that it may promote from
 * @shared_policy: the scan in progress saw a VMA with a shared policy
 * @parked: the last scan, whole in one step, could walk no VMA, and no
 *	VMA it saw has a policy that another mm can change
 * @parked_seq: with @parked, the mm's mm_lock_seq when that scan ended
 * @parked_mof: with @parked, the owner's task_mof then
 * @begun: a scan of the mm began, or was passed over as idle; until then,
 *	@next_scan is the end of its first delay (scan_delay_ms)
 * @state: the adaptive period and size
 * @owner: the thread group the mm was made for (see kmmscand_get_owner())
 * @runtime: the runtime of its threads at the last kmmscand_owner_ran()
 * @region: the region the cursor is in
 * @history: the &struct kmmscand_hist_chunk of the mm, indexed by the
 *	region index divided by KMMSCAND_HIST_CHUNK_REGIONS
 * @heat: the &struct kmmscand_heat of the regions of the mm that hold
 *	slow-tier memory, indexed by region index
 * @stats: what kmmscand did for the mm
 */
struct kmmscand_mm_slot {
	struct mm_slot slot;
	struct rb_node due;
	unsigned long address;
	unsigned long next_scan;
	unsigned long scan_left;
	unsigned long scanned;
	unsigned long accessed;
	unsigned long primed;
	unsigned long found;
	unsigned long isolated;
	bool eligible;
	bool shared_policy;
	bool parked;
	bool parked_mof;
	unsigned int parked_seq;
	bool begun;
	struct kmmscand_scan_state state;
	struct pid *owner;
	u64 runtime;
	struct kmmscand_region region;
	struct xarray history;
	struct xarray heat;
	struct kmmscand_mm_stats stats;
};

/**
 * struct kmmscand_candidate - a folio to promote
 * @folio: the folio, pinned with a reference until it is isolated
 * @vma: a VMA that maps it; valid while the mmap_lock of the scan is held
 * @addr: the address at which the scan found it accessed
 * @pfn: the folio's first pfn, noted as it is queued, for the tracepoint
 * @nid: the node the folio is on
 * @nr: the folio's base pages, which our reference keeps from a split
 * @accessed: the accessed entries mapping it that the scan found, in base
 *	pages
 * @isolated: isolated for migration; the isolation holds the reference
 * @failed: with @isolated, the migration failed
 */
struct kmmscand_candidate {
	struct folio *folio;
	struct vm_area_struct *vma;
	unsigned long addr;
	unsigned long pfn;
	int nid;
	unsigned int nr;
	unsigned int accessed;
	bool isolated;
	bool failed;
};

/**
 * struct kmmscand_batch - the bounded queue of promotion candidates
 * @nr: number of candidates
 * @nr_pages: base pages they add up to
 * @entry: the candidates
 */
struct kmmscand_batch {
	unsigned int nr;
	unsigned long nr_pages;
	struct kmmscand_candidate entry[KMMSCAND_BATCH_MAX];
};

struct kmmscand_copy;

/**
 * struct kmmscand_walk_ctl - state of one scan step of one mm
 * @mm: the mm
 * @ms: its slot
 * @batch: where candidates go
 * @last_folio: the folio queued last, to queue a PTE-mapped large folio once
 * @step_left: bytes of address space the scan step may still cover
 * @skips: regions and VMAs passed over by the walk, each charged to the
 *	step as one page
 * @next_addr: where a walk that stopped early resumes
 * @scanned: base pages examined
 * @accessed: accessed slow-tier base pages found
 * @primed: young slow-tier base pages found in regions being primed
 * @skipped: bytes of address space the walk passed over
 * @yield_reason: why the walk gave up the mmap_lock
 * @vma_skipped: test_walk rejected the VMA
 * @policy_open: the memory policy lets folios of the VMA move somewhere in
 *	the part walked, see kmmscand_vma_shared_policy()
 * @smart: smart_scan
 * @max_skips: smart_scan_max_skips
 * @pmd_young: old PMD entries let the walk pass over PTE tables
 * @pmd_bounded: for at most KMMSCAND_PMD_OLD_MAX_SKIPS visits in a row
 * @flush_tlb: an Accessed bit was cleared; flush the TLB of the mm
 * @off_lru: a would-be candidate was not on the LRU
 * @no_room: base pages of candidates refused for want of room
 * @isolated: accessed base pages of the candidates isolated for promotion
 * @threshold: the heat an accessed entry needs for its folio to be queued
 * @not_hot: accessed slow-tier base pages below @threshold
 * @max_heat: the highest heat of the folios that the step queued
 * @stopped: the target node refused candidates for rate or room; the step
 *	ends and the scan resumes at @resume_at
 * @stop_reason: with @stopped, KMMSCAND_SKIP_RATE_LIMITED or _NODE_FULL
 * @resume_at: with @stopped, jiffies at which the node may take
 *	promotions again
 * @task_mof: the owner's task policy lets its memory move
 * @home_nid: the node the owner last ran on, or NUMA_NO_NODE
 * @allowed: the nodes the owner may allocate from
 * @slow: memory nodes that are not top tier
 * @has_room: scratch for kmmscand_choose_target()
 * @filled: the walk stopped because the batch filled up
 * @moving: the folios the batch isolated, linked through their lru field,
 *	to migrate once the mmap_lock is given up
 * @moving_end: entries [0, @moving_end) of the batch hold @moving
 * @moving_to: the node @moving goes to
 * @jobs: the jobs of workers set aside for shares of the batch
 * @nr_jobs: how many
 */
struct kmmscand_walk_ctl {
	struct mm_struct *mm;
	struct kmmscand_mm_slot *ms;
	struct kmmscand_batch *batch;
	struct folio *last_folio;
	unsigned long step_left;
	unsigned long skips;
	unsigned long next_addr;
	unsigned long scanned;
	unsigned long accessed;
	unsigned long primed;
	unsigned long skipped;
	enum kmmscand_skip_reason yield_reason;
	bool vma_skipped;
	bool policy_open;
	bool smart;
	unsigned int max_skips;
	bool pmd_young;
	bool pmd_bounded;
	bool flush_tlb;
	bool off_lru;
	unsigned long no_room;
	unsigned long isolated;
	unsigned int threshold;
	unsigned long not_hot;
	unsigned int max_heat;
	bool stopped;
	enum kmmscand_skip_reason stop_reason;
	unsigned long resume_at;
	bool task_mof;
	int home_nid;
	nodemask_t allowed;
	nodemask_t slow;
	nodemask_t has_room;
	bool filled;
	struct list_head moving;
	unsigned int moving_end;
	int moving_to;
	struct kmmscand_copy *jobs[KMMSCAND_MIGRATE_THREADS_LIMIT - 1];
	unsigned int nr_jobs;
};

/* Knobs; kmmscand_mutex serialises their writers */
static bool kmmscand_scan_enabled __read_mostly = true;
static unsigned long kmmscand_scan_sleep_ms __read_mostly = KMMSCAND_SCAN_SLEEP_MS;
static unsigned long kmmscand_mms_to_scan __read_mostly = KMMSCAND_MMS_TO_SCAN;
static unsigned long kmmscand_pages_to_scan __read_mostly =
	KMMSCAND_PAGES_TO_SCAN;
static unsigned long kmmscand_scan_delay_ms __read_mostly =
	KMMSCAND_SCAN_DELAY_MS;
static int kmmscand_target_node __read_mostly = NUMA_NO_NODE;
static bool kmmscand_smart_scan __read_mostly = true;
/* Set at init where the architecture supports it */
static bool kmmscand_pmd_young __read_mostly;
static unsigned long kmmscand_smart_scan_max_skips __read_mostly =
	KMMSCAND_SMART_SCAN_MAX_SKIPS;
static bool kmmscand_skip_idle_mm __read_mostly = true;
static long kmmscand_nice __read_mostly = KMMSCAND_NICE;
static unsigned long kmmscand_migrate_threads __read_mostly =
	KMMSCAND_MIGRATE_THREADS;
static bool kmmscand_scan_by_default __read_mostly = true;
static unsigned long kmmscand_min_heat __read_mostly = KMMSCAND_MIN_HEAT;
static struct kmmscand_tuning kmmscand_tuning = {
	.period_ms = {
		.min = KMMSCAND_SCAN_PERIOD_MIN_MS,
		.init = KMMSCAND_MM_SCAN_PERIOD_MS,
		.max = KMMSCAND_SCAN_PERIOD_MAX_MS,
	},
	.size_mb = {
		.min = KMMSCAND_SCAN_SIZE_MIN_MB,
		.init = KMMSCAND_SCAN_SIZE_MB,
		.max = KMMSCAND_SCAN_SIZE_MAX_MB,
	},
	.min_accessed = KMMSCAND_MIN_ACCESSED_PAGES,
};

static DEFINE_MUTEX(kmmscand_mutex);
static DEFINE_SEQLOCK(kmmscand_tuning_lock);
/*
 * Bumped by every knob write, so that the thread stops waiting for what
 * the old values had it wait for: its own sleep (kmmscand_kick()) and the
 * next scan of each mm (kmmscand_recheck_waits()).
 */
static unsigned int kmmscand_knob_gen;
static struct task_struct *kmmscand_thread;
static DECLARE_WAIT_QUEUE_HEAD(kmmscand_wait);
/* Set to end the thread's sleep: by a knob write, or an mm due earlier */
static bool kmmscand_kicked;

DEFINE_STATIC_KEY_FALSE(kmmscand_tiered);

/*
 * The tracked mms, under kmmscand_mm_lock: @due queues the slots by when
 * they are due, but for @mm_slot, which the thread holds while it scans
 * it; @sleep_until is when the thread, asleep, wakes up next.
 */
static DEFINE_SPINLOCK(kmmscand_mm_lock);
static DEFINE_HASHTABLE(kmmscand_slots_hash, KMMSCAND_SLOTS_HASH_BITS);
static struct kmem_cache *kmmscand_slot_cache __ro_after_init;
static struct {
	struct rb_root_cached due;
	struct kmmscand_mm_slot *mm_slot;
	unsigned long sleep_until;
} kmmscand_scan = {
	.due = RB_ROOT_CACHED,
};

/* Used by the kmmscand thread only; there is at most one at a time */
static struct kmmscand_batch kmmscand_batch;
static struct kmmscand_walk_ctl kmmscand_ctl;
static int kmmscand_node_order[MAX_NUMNODES];

/**
 * struct kmmscand_node - what the thread remembers of a promotion target
 * @limited_until: jiffies until which its promotion rate limit is spent
 * @full_until: jiffies until which it is backed off from for want of room
 * @backoff_ms: the length of the last back-off; zero after room was made
 *	on the node since it began
 * @promoted: base pages promoted to the node since the last back-off began
 * @demoted: the pages demoted from the node until the last back-off began
 * @room_wanted_until: jiffies until which kswapd keeps the promotion
 *	watermark of the node free; read by kswapd, locklessly
 * @threshold: the heat that candidates for the node need, from 1 to
 *	KMMSCAND_HEAT_MAX; 0 stands for 1
 * @threshold_changed: jiffies when @threshold last changed
 * @last_refused: jiffies when the node last refused candidates
 * @in_flight: base pages that workers are migrating to the node, counted
 *	against its room until their jobs are settled
 */
struct kmmscand_node {
	unsigned long limited_until;
	unsigned long full_until;
	unsigned int backoff_ms;
	atomic_long_t promoted;
	unsigned long demoted;
	unsigned long room_wanted_until;
	unsigned int threshold;
	unsigned long threshold_changed;
	unsigned long last_refused;
	unsigned long in_flight;
};

static struct kmmscand_node kmmscand_nodes[MAX_NUMNODES];

/* Pure helpers: no global state, tested by mm/tests/kmmscand-kunit.h */

static unsigned long kmmscand_clamp(unsigned long val,
				    const struct kmmscand_range *r)
{
	return clamp(val, r->min, r->max);
}

/**
 * kmmscand_isolated_most - whether a scan moved up most of what it found
 * @found: the accessed slow-tier base pages the scan found, those that no
 *	node had room for included
 * @isolated: how many of them it isolated for promotion
 *
 * Return: true if @isolated is at least half of @found, and @found is not
 * zero.  A scan that found more than that it could not promote, for rate,
 * room or heat, leaves that memory on the slow tier: the same memory going
 * quiet after it is activity vanishing.
 */
static bool kmmscand_isolated_most(unsigned long found, unsigned long isolated)
{
	return found && isolated >= DIV_ROUND_UP(found, 2);
}

/* @pages, or 0 if fewer than min_accessed: a count that small is noise */
static unsigned long kmmscand_above_noise(unsigned long pages,
					  const struct kmmscand_tuning *t)
{
	return pages < t->min_accessed ? 0 : pages;
}

/**
 * kmmscand_update_scan_state - adapt the scan period and size of an mm
 * @st: the scan state of the mm, updated in place
 * @accessed: the accessed slow-tier pages the scan that just ended found
 * @primed: the young slow-tier pages of the regions it primed
 * @isolated_most: that scan isolated for promotion most of what it found
 * @t: the knobs
 *
 * X is what the previous scan found (@st->prev_accessed) and Y what this
 * one found; a count below @t->min_accessed counts as zero.
 *
 * - X = 0, Y = 0: still idle.  Scan a little less often
 *   (SCAN_PERIOD_TUNE_PERCENT) and over half the size.
 * - X = 0, Y > 0: activity appeared.  Scan much more often
 *   (SCAN_PERIOD_CHANGE_SCALE) and over the maximum size.
 * - X > 0, Y = 0, and the previous scan isolated most of what it found for
 *   promotion: the hot memory left the slow tier, the mm did not stop.
 *   Scan a little less often, as when still idle, and keep the size: a hot
 *   set that moves on to other slow-tier memory is found a short period
 *   later.
 * - X > 0, Y = 0 otherwise: activity vanished.  Scan much less often; keep
 *   the size, the hot data may just lie beyond this scan's reach.
 * - X > 0, Y > 0: still busy.  Scan a little more often and over twice the
 *   size.
 *
 * Both results are clamped to their knob ranges.  An mm that stops running
 * is not scanned at all while skip_idle_mm is set (kmmscand_skip_idle()),
 * which counts that as activity vanished whatever the last scan promoted.
 *
 * Young pages in a region being primed (@primed) are no promotion
 * candidates, but they are activity: memory the mm populated or used since
 * the previous look.  They count in Y, which puts the scan after a priming
 * one a short period (X = 0, Y > 0) later rather than a longer one, so that
 * a hot set is first promoted one period after kmmscand first looks at it,
 * not two.  They are left out of the X that the next scan compares with:
 * the young bits of memory just populated say nothing of what the mm uses,
 * and an mm that fills its memory and then waits (a process at a start
 * barrier, a server warming up) is still idle when the next scan finds
 * nothing, not one whose activity vanished.
 */
static void kmmscand_update_scan_state(struct kmmscand_scan_state *st,
				       unsigned long accessed,
				       unsigned long primed,
				       bool isolated_most,
				       const struct kmmscand_tuning *t)
{
	unsigned long x = st->prev_accessed;
	unsigned long y = kmmscand_above_noise(accessed + primed, t);
	unsigned long period = st->period_ms;
	unsigned long size = st->size_mb;

	if (!x && !y) {
		period += DIV_ROUND_UP(period * SCAN_PERIOD_TUNE_PERCENT, 100);
		size >>= SCAN_SIZE_CHANGE_SCALE;
	} else if (!x) {
		period >>= SCAN_PERIOD_CHANGE_SCALE;
		size = t->size_mb.max;
	} else if (!y && st->prev_isolated_most) {
		period += DIV_ROUND_UP(period * SCAN_PERIOD_TUNE_PERCENT, 100);
	} else if (!y) {
		period <<= SCAN_PERIOD_CHANGE_SCALE;
	} else {
		period -= period * SCAN_PERIOD_TUNE_PERCENT / 100;
		size <<= SCAN_SIZE_CHANGE_SCALE;
	}

	st->period_ms = kmmscand_clamp(period, &t->period_ms);
	st->size_mb = kmmscand_clamp(size, &t->size_mb);
	st->prev_accessed = kmmscand_above_noise(accessed, t);
	st->prev_isolated_most = st->prev_accessed && isolated_most;
}

/*
 * Parse a decimal knob value and check it against [@lo, @hi].  Anything
 * else, including an overflowing number, is -EINVAL.
 */
static int kmmscand_parse_ulong(const char *buf, unsigned long lo,
				unsigned long hi, unsigned long *val)
{
	unsigned long v;

	if (kstrtoul(buf, 10, &v) || v < lo || v > hi)
		return -EINVAL;
	*val = v;
	return 0;
}

/* Set one field of @r to @val, unless that would break min <= init <= max */
static int kmmscand_range_set(struct kmmscand_range *r,
			      enum kmmscand_range_field field,
			      unsigned long val)
{
	struct kmmscand_range new = *r;

	switch (field) {
	case KMMSCAND_RANGE_MIN:
		new.min = val;
		break;
	case KMMSCAND_RANGE_INIT:
		new.init = val;
		break;
	case KMMSCAND_RANGE_MAX:
		new.max = val;
		break;
	}
	if (new.min > new.init || new.init > new.max)
		return -EINVAL;
	*r = new;
	return 0;
}

/* target_node is NUMA_NO_NODE (automatic) or a node in @eligible */
static int kmmscand_parse_target_node(const char *buf,
				      const nodemask_t *eligible, int *nid)
{
	int val;

	if (kstrtoint(buf, 10, &val))
		return -EINVAL;
	if (val != NUMA_NO_NODE &&
	    (val < 0 || val >= MAX_NUMNODES || !node_isset(val, *eligible)))
		return -EINVAL;
	*nid = val;
	return 0;
}

/**
 * kmmscand_pick_node - choose a promotion target
 * @order: candidate nodes, nearest first
 * @nr: number of entries in @order
 * @allowed: nodes the mm may allocate from
 * @has_room: nodes with free pages above their high watermark
 * @full_nid: set to the nearest allowed node when none has room, so that
 *	its kswapd can be woken; NUMA_NO_NODE otherwise
 *
 * Return: the nearest allowed node with room, or NUMA_NO_NODE.
 */
static int kmmscand_pick_node(const int *order, int nr,
			      const nodemask_t *allowed,
			      const nodemask_t *has_room, int *full_nid)
{
	int nearest = NUMA_NO_NODE;
	int i;

	*full_nid = NUMA_NO_NODE;
	for (i = 0; i < nr; i++) {
		int nid = order[i];

		if (!node_isset(nid, *allowed))
			continue;
		if (node_isset(nid, *has_room))
			return nid;
		if (nearest == NUMA_NO_NODE)
			nearest = nid;
	}
	*full_nid = nearest;
	return NUMA_NO_NODE;
}

/**
 * kmmscand_next_backoff - the length of a new back-off from a full node
 * @last_ms: the length of the last one; zero if the node took the room
 *	kswapd made since it began
 *
 * Return: KMMSCAND_BACKOFF_MIN_MS after that, otherwise twice the
 * last back-off, at most KMMSCAND_BACKOFF_MAX_MS.
 */
static unsigned int kmmscand_next_backoff(unsigned int last_ms)
{
	return clamp_t(unsigned int, 2 * last_ms, KMMSCAND_BACKOFF_MIN_MS,
		       KMMSCAND_BACKOFF_MAX_MS);
}

/**
 * kmmscand_room_made - whether room was made on a full node for promotions
 * @took: base pages promoted to the node since the last back-off began
 * @demoted: pages demoted from the node since then
 * @headroom: the room that kswapd makes on the node for promotions
 *
 * Room was made if the node took half of @headroom, or if demotion freed
 * that much, whatever allocation took it then.  kswapd frees a few pages
 * even on a node with nothing to demote, and promotions take them; that
 * is not room made.
 *
 * Return: true if the next back-off starts over from the shortest.
 */
static bool kmmscand_room_made(unsigned long took, unsigned long demoted,
			       unsigned long headroom)
{
	return took >= headroom / 2 || demoted >= headroom / 2;
}

/**
 * kmmscand_node_open - whether a target node takes promotions
 * @n: what the thread remembers of the node
 * @now: the time, in jiffies
 * @until: set to when the node takes promotions again, if it does not now
 * @reason: set to why it does not: KMMSCAND_SKIP_RATE_LIMITED while its
 *	rate limit is spent, KMMSCAND_SKIP_NODE_FULL while kmmscand backs
 *	off from it, whichever lasts longer
 *
 * Return: true if the node takes promotions at @now.
 */
static bool kmmscand_node_open(const struct kmmscand_node *n,
			       unsigned long now, unsigned long *until,
			       enum kmmscand_skip_reason *reason)
{
	bool limited = time_before(now, n->limited_until);
	bool full = time_before(now, n->full_until);

	if (!limited && !full)
		return true;
	if (limited && (!full || time_after(n->limited_until, n->full_until))) {
		*until = n->limited_until;
		*reason = KMMSCAND_SKIP_RATE_LIMITED;
	} else {
		*until = n->full_until;
		*reason = KMMSCAND_SKIP_NODE_FULL;
	}
	return false;
}

/**
 * kmmscand_node_threshold - the heat that candidates for a node need
 * @n: the node
 *
 * Return: a threshold from min_heat to KMMSCAND_HEAT_MAX.
 */
static unsigned int kmmscand_node_threshold(const struct kmmscand_node *n)
{
	return max_t(unsigned int, n->threshold, READ_ONCE(kmmscand_min_heat));
}

/**
 * kmmscand_adapt_threshold - raise or lower the heat a node asks for
 * @n: the node
 * @now: the time, in jiffies
 * @refused: the node just refused candidates, for want of room or rate
 * @tighten: with @refused, asking for more heat is worth it
 *
 * A refusal says that more is accessed on the slow tier than the node can
 * take.  With @tighten, raise the threshold by one, at most once per
 * KMMSCAND_HEAT_TIGHTEN_MS, so that what the node takes are the hotter
 * folios.  KMMSCAND_ROOM_WANTED_MS without a refusal, or since the last
 * change, lowers it by one, down to min_heat.
 */
static void kmmscand_adapt_threshold(struct kmmscand_node *n,
				     unsigned long now, bool refused,
				     bool tighten)
{
	unsigned int threshold = kmmscand_node_threshold(n);
	unsigned long quiet_since;

	if (refused) {
		n->last_refused = now;
		if (tighten && threshold < KMMSCAND_HEAT_MAX &&
		    time_after_eq(now, n->threshold_changed +
				  msecs_to_jiffies(KMMSCAND_HEAT_TIGHTEN_MS))) {
			n->threshold = threshold + 1;
			n->threshold_changed = now;
		}
		return;
	}
	quiet_since = time_after(n->last_refused, n->threshold_changed) ?
		      n->last_refused : n->threshold_changed;
	if (threshold > READ_ONCE(kmmscand_min_heat) &&
	    time_after_eq(now, quiet_since +
			  msecs_to_jiffies(KMMSCAND_ROOM_WANTED_MS))) {
		n->threshold = threshold - 1;
		n->threshold_changed = now;
	}
}

/**
 * kmmscand_refusal_tightens - whether a refusal asks for more heat
 * @n: the node that refused
 * @result: why, KMMSCAND_PROMOTE_NO_ROOM or KMMSCAND_PROMOTE_RATE_LIMITED
 * @max_heat: the highest heat of the folios that the scan step queued
 *
 * Room that the node keeps now is there for the hotter folios that later
 * reads find, so a node out of room asks for more heat at once.  Rate
 * unused in a window is lost, so a node out of rate asks for more only if
 * some candidates were hotter than the others.
 *
 * Return: the @tighten of kmmscand_adapt_threshold().
 */
static bool kmmscand_refusal_tightens(const struct kmmscand_node *n,
				      enum kmmscand_promote_result result,
				      unsigned int max_heat)
{
	return result == KMMSCAND_PROMOTE_NO_ROOM ||
	       max_heat > kmmscand_node_threshold(n);
}

/**
 * kmmscand_heat_note - record what a read found of one entry
 * @heat: the heat map of its region
 * @i: the index of the entry in the region
 * @young: it was found accessed
 *
 * Return: the heat of the entry, from 0 to KMMSCAND_HEAT_MAX.
 */
static unsigned int kmmscand_heat_note(struct kmmscand_heat *heat,
				       unsigned int i, bool young)
{
	unsigned int h = test_bit(i, heat->lo) | test_bit(i, heat->hi) << 1;

	if (young)
		h = min(h + 1, KMMSCAND_HEAT_MAX);
	else if (h)
		h--;
	__assign_bit(i, heat->lo, h & 1);
	__assign_bit(i, heat->hi, h & 2);
	return h;
}

/**
 * kmmscand_heat_hot - whether an accessed entry is hot enough to promote
 * @heat: the heat map of its region
 * @i: the index of the entry in the region
 * @h: its heat, as kmmscand_heat_note() returned it
 * @threshold: the heat the target asks for
 *
 * An entry whose folio kmmscand promoted, and which is on the slow tier
 * again, was demoted meanwhile (or, rarely, failed to migrate): it needs
 * KMMSCAND_HEAT_PINGPONG, whatever the threshold, before it is promoted
 * again.
 *
 * Return: true if its folio is to be queued.
 */
static bool kmmscand_heat_hot(struct kmmscand_heat *heat, unsigned int i,
			      unsigned int h, unsigned int threshold)
{
	if (test_bit(i, heat->promoted)) {
		if (h < KMMSCAND_HEAT_PINGPONG)
			return false;
		__clear_bit(i, heat->promoted);
	}
	return h >= threshold;
}

/* The folio mapped by entry @i was promoted: it starts cold, marked */
static void kmmscand_heat_promoted(struct kmmscand_heat *heat, unsigned int i)
{
	__clear_bit(i, heat->lo);
	__clear_bit(i, heat->hi);
	__set_bit(i, heat->promoted);
}

/*
 * NUMA balancing migrates memory only under a policy that carries
 * MPOL_F_MOF.  Of those, MPOL_BIND and MPOL_PREFERRED_MANY name nodes that
 * the user chose (with MPOL_F_NUMA_BALANCING): kmmscand leaves them alone
 * rather than pick a target inside that set, which would need a target per
 * VMA instead of per mm.  What remains is the default local policy.
 */
static bool kmmscand_mpol_allows(const struct mempolicy *pol)
{
	return (pol->flags & MPOL_F_MOF) && pol->mode != MPOL_BIND &&
	       pol->mode != MPOL_PREFERRED_MANY;
}

/* How a visit that reads a region with history @hist reads it */
static enum kmmscand_visit kmmscand_read_visit(u32 hist)
{
	return hist & KMMSCAND_HIST_PRIMED ? KMMSCAND_VISIT_SCAN :
					     KMMSCAND_VISIT_PRIME;
}

/**
 * kmmscand_region_visit - decide what a visit does with a region
 * @hist: the history of the region, updated
 * @smart: smart_scan
 * @max_skips: smart_scan_max_skips
 *
 * KSM's smart scan rule (should_skip_rmap_item()), applied to a region:
 * every visit ages it; from SMART_SCAN_MIN_AGE on, a visit with no skips
 * left reads the region and sets how many of the next visits pass over it
 * (smart_scan_skips()), and a visit with skips left passes over it.  A
 * region never visited has no age to go by and is read.  Skips left from a
 * higher smart_scan_max_skips are cut down to the current one.  A region
 * with no slow-tier memory at its last read has KMMSCAND_NO_SLOW_SKIPS_SCALE
 * times the cap.
 *
 * Return: KMMSCAND_VISIT_SKIP to pass over the region, otherwise how to
 * read it: KMMSCAND_VISIT_SCAN if it is primed, KMMSCAND_VISIT_PRIME if
 * not.
 */
static enum kmmscand_visit kmmscand_region_visit(u32 *hist, bool smart,
						 unsigned int max_skips)
{
	u32 h = *hist;
	unsigned int age = u32_get_bits(h, KMMSCAND_HIST_AGE);
	unsigned int skips = u32_get_bits(h, KMMSCAND_HIST_SKIPS);
	bool skip = false;

	if (smart && h) {
		if (h & KMMSCAND_HIST_NO_SLOW)
			max_skips = min(KMMSCAND_NO_SLOW_SKIPS_SCALE * max_skips,
					KMMSCAND_SMART_SCAN_SKIPS_LIMIT);
		if (age < FIELD_MAX(KMMSCAND_HIST_AGE))
			h = u32_replace_bits(h, age + 1, KMMSCAND_HIST_AGE);
		skips = min(skips, max_skips);
		if (age >= SMART_SCAN_MIN_AGE) {
			skip = skips;
			if (skip)
				skips--;
			else
				skips = smart_scan_skips(age, max_skips);
		}
		*hist = u32_replace_bits(h, skips, KMMSCAND_HIST_SKIPS);
	}

	if (skip)
		return KMMSCAND_VISIT_SKIP;
	return kmmscand_read_visit(*hist);
}

/**
 * kmmscand_region_done - record what a visit that read a region found
 * @hist: the history of the region, updated
 * @visit: how the region was read, KMMSCAND_VISIT_PRIME or _SCAN
 * @slow: a slow-tier folio was seen in it
 * @accessed: an accessed slow-tier folio was found in it
 *
 * A region without slow-tier memory keeps aging, and slow-tier memory that
 * shows up in it later is primed before it counts.  A region whose
 * slow-tier memory was just primed, or was found accessed, starts over.
 * Otherwise the visit has aged the region already.
 */
static void kmmscand_region_done(u32 *hist, enum kmmscand_visit visit,
				 bool slow, bool accessed)
{
	u32 h = *hist;

	if (!slow) {
		h &= ~KMMSCAND_HIST_PRIMED;
		h |= KMMSCAND_HIST_NO_SLOW;
	} else if (visit == KMMSCAND_VISIT_PRIME || accessed) {
		h = KMMSCAND_HIST_PRIMED;
	}
	*hist = h;
}

/**
 * kmmscand_pmd_visit - decide whether a visit reads a PTE table
 * @hist: the history of its region, updated
 * @young: the PMD entry pointing to the table is young
 * @bounded: an old entry may be stale: MGLRU's walks clear the bit too
 *
 * Return: true to read the table, false to pass over it because no entry
 * below the PMD entry has been used since the table was last read.  With
 * @bounded, at most KMMSCAND_PMD_OLD_MAX_SKIPS visits in a row pass over
 * it.
 */
static bool kmmscand_pmd_visit(u32 *hist, bool young, bool bounded)
{
	unsigned int old = u32_get_bits(*hist, KMMSCAND_HIST_PMD_OLD);

	if (young || (bounded && old >= KMMSCAND_PMD_OLD_MAX_SKIPS)) {
		*hist = u32_replace_bits(*hist, 0, KMMSCAND_HIST_PMD_OLD);
		return true;
	}
	old = min(old + 1, KMMSCAND_PMD_OLD_MAX_SKIPS);
	*hist = u32_replace_bits(*hist, old, KMMSCAND_HIST_PMD_OLD);
	return false;
}

/**
 * kmmscand_pmd_recalls - whether a young PMD entry cuts the skips short
 * @hist: the history of a region that smart scan is passing over
 * @young: the PMD entry above its PTE table is young
 *
 * A young entry over a cold region says that an entry of its table was
 * loaded into the TLB since the table was last read: the region is in use
 * again, and is read now rather than after its remaining skips.  Not when
 * the region had no slow-tier memory at its last read, nor when the entry
 * was young at that read too with nothing accessed on the slow tier: then
 * the bit follows other memory of the table.
 *
 * Return: true to read the region on this visit.
 */
static bool kmmscand_pmd_recalls(u32 hist, bool young)
{
	return young &&
	       !(hist & (KMMSCAND_HIST_NO_SLOW | KMMSCAND_HIST_PMD_NOISY));
}

/**
 * kmmscand_pmd_read_done - record what the PMD entry of a read region said
 * @hist: the history of the region, after kmmscand_region_done()
 * @visit: how the region was read
 * @young: the PMD entry was young when the visit began
 * @slow: a slow-tier folio was seen in the region
 * @accessed: an accessed slow-tier folio was found in it
 *
 * The entry is noisy when it was young while the slow-tier memory beneath
 * was not accessed.  A priming read says nothing either way: the bits it
 * finds tell when the memory was populated.
 */
static void kmmscand_pmd_read_done(u32 *hist, enum kmmscand_visit visit,
				   bool young, bool slow, bool accessed)
{
	if (visit == KMMSCAND_VISIT_SCAN && young && slow && !accessed)
		*hist |= KMMSCAND_HIST_PMD_NOISY;
	else
		*hist &= ~KMMSCAND_HIST_PMD_NOISY;
}

/* Whether the CPU sets the Accessed bit of PMD entries that are not leaves */
static bool kmmscand_pmd_young_usable(void)
{
	return IS_ENABLED(CONFIG_ARCH_HAS_NONLEAF_PMD_YOUNG) &&
	       arch_has_hw_nonleaf_pmd_young();
}

/* Knob snapshots for the thread */

static void kmmscand_read_tuning(struct kmmscand_tuning *t)
{
	unsigned int seq;

	do {
		seq = read_seqbegin(&kmmscand_tuning_lock);
		*t = kmmscand_tuning;
	} while (read_seqretry(&kmmscand_tuning_lock, seq));
}

static bool kmmscand_should_stop(void)
{
	return kthread_should_stop() || freezing(current) ||
	       !READ_ONCE(kmmscand_scan_enabled);
}

/**
 * DOC: kmmscand scheduling
 *
 * The slots of the tracked mms are queued in an rbtree ordered by the time at
 * which the next scan of each is due (&kmmscand_mm_slot.next_scan).  A pass
 * takes due slots from the front of the queue one at a time, scans each and
 * puts it back at its new due time; it ends when the slots that were due when
 * it began have been visited, or mms_to_scan of them, or when it has walked
 * pages_to_scan pages of address space.  Each due mm gets an equal share of
 * pages_to_scan, at least one PTE table (kmmscand_step_share()): a scan that
 * needs more is put off where it stopped, and the mm is queued as due from then
 * on, behind the mms that were due before it, so a large or busy mm cannot hold
 * back the others.  A region or a VMA passed over costs what one page does.
 * The thread then sleeps until the first slot is due, and at least
 * scan_sleep_ms.  A wake-up and a pass thus cost in proportion to the mms that
 * are due, whatever the number of mms tracked, and an mm costs nothing between
 * its scans: one lock round trip and two O(log n) queue operations per scan.
 *
 * Every wait of an mm is its due time: its scan period, the delay before its
 * first scan, a node it can only promote to backing off or out of rate, an idle
 * mm passed over.  A new mm due before the thread wakes up wakes it
 * (__kmmscand_enter()).  A knob write that shortens the waits re-queues every
 * slot by its new due time (kmmscand_recheck_waits()), looking only at the
 * slots due after the new bounds, under kmmscand_mm_lock, once per write.
 */

static bool kmmscand_due_less(struct rb_node *a, const struct rb_node *b)
{
	return time_before(rb_entry(a, struct kmmscand_mm_slot, due)->next_scan,
			   rb_entry(b, struct kmmscand_mm_slot, due)->next_scan);
}

/*
 * Queue @ms by its due time, after those due at the same time.  Return
 * true if it is first in the queue.
 */
static bool kmmscand_queue(struct rb_root_cached *due,
			   struct kmmscand_mm_slot *ms)
{
	return rb_add_cached(&ms->due, due, kmmscand_due_less);
}

static void kmmscand_unqueue(struct rb_root_cached *due,
			     struct kmmscand_mm_slot *ms)
{
	rb_erase_cached(&ms->due, due);
	RB_CLEAR_NODE(&ms->due);
}

/* Take the first slot of the queue out of it if it is due at @now */
static struct kmmscand_mm_slot *kmmscand_first_due(struct rb_root_cached *due,
						   unsigned long now)
{
	struct rb_node *first = rb_first_cached(due);
	struct kmmscand_mm_slot *ms;

	if (!first)
		return NULL;
	ms = rb_entry(first, struct kmmscand_mm_slot, due);
	if (time_after(ms->next_scan, now))
		return NULL;
	kmmscand_unqueue(due, ms);
	return ms;
}

/* How many slots of the queue are due at @now, counting up to @max */
static unsigned long kmmscand_count_due(struct rb_root_cached *due,
					unsigned long now, unsigned long max)
{
	struct rb_node *node = rb_first_cached(due);
	unsigned long nr = 0;

	while (node && nr < max &&
	       !time_after(rb_entry(node, struct kmmscand_mm_slot,
				    due)->next_scan, now)) {
		nr++;
		node = rb_next(node);
	}
	return nr;
}

/* The pages a step of each of @nr_due mms may walk in a pass of @pages */
static unsigned long kmmscand_step_share(unsigned long pages,
					 unsigned long nr_due)
{
	return max(pages / max(nr_due, 1UL), KMMSCAND_STEP_MIN_PAGES);
}

/* mm tracking */

void __kmmscand_enter(struct mm_struct *mm, struct task_struct *owner)
{
	struct kmmscand_mm_slot *ms;
	struct kmmscand_tuning t;
	struct mm_slot *slot;
	bool wake;

	if (test_and_set_bit(MMF_VM_KMMSCAND, &mm->flags))
		return;

	ms = mm_slot_alloc(kmmscand_slot_cache);
	if (!ms) {
		clear_bit(MMF_VM_KMMSCAND, &mm->flags);
		return;
	}

	kmmscand_read_tuning(&t);
	ms->state.period_ms = t.period_ms.init;
	ms->state.size_mb = t.size_mb.init;
	ms->next_scan = jiffies +
			msecs_to_jiffies(READ_ONCE(kmmscand_scan_delay_ms));
	ms->region.index = KMMSCAND_NO_REGION;
	xa_init(&ms->history);
	xa_init(&ms->heat);
	ms->owner = get_task_pid(owner, PIDTYPE_TGID);

	slot = &ms->slot;
	mmgrab(mm);
	spin_lock(&kmmscand_mm_lock);
	mm_slot_insert(kmmscand_slots_hash, mm, slot);
	/* Due before the thread wakes up: wake it, to sleep less */
	wake = kmmscand_queue(&kmmscand_scan.due, ms) &&
	       time_before(ms->next_scan, kmmscand_scan.sleep_until);
	if (wake)
		WRITE_ONCE(kmmscand_kicked, true);
	spin_unlock(&kmmscand_mm_lock);
	if (wake)
		wake_up_interruptible(&kmmscand_wait);
}

static void kmmscand_free_slot(struct kmmscand_mm_slot *ms)
{
	struct mm_struct *mm = ms->slot.mm;
	struct kmmscand_hist_chunk *chunk;
	unsigned long index;

	struct kmmscand_heat *heat;

	xa_for_each(&ms->history, index, chunk)
		kfree(chunk);
	xa_destroy(&ms->history);
	xa_for_each(&ms->heat, index, heat)
		kfree(heat);
	xa_destroy(&ms->heat);
	put_pid(ms->owner);
	mm_slot_free(kmmscand_slot_cache, ms);
	mmdrop(mm);
}

/*
 * Called from __mmput(), once mm_users is zero.  The thread cannot be
 * walking the mm: it holds a user reference while it does.  The slot that
 * the thread holds is the thread's to free, see kmmscand_put_back().
 */
void __kmmscand_exit(struct mm_struct *mm)
{
	struct kmmscand_mm_slot *ms = NULL;
	struct mm_slot *slot;

	spin_lock(&kmmscand_mm_lock);
	slot = mm_slot_lookup(kmmscand_slots_hash, mm);
	if (slot) {
		ms = mm_slot_entry(slot, struct kmmscand_mm_slot, slot);
		if (kmmscand_scan.mm_slot == ms) {
			ms = NULL;
		} else {
			hash_del(&slot->hash);
			kmmscand_unqueue(&kmmscand_scan.due, ms);
		}
	}
	spin_unlock(&kmmscand_mm_lock);

	if (ms) {
		clear_bit(MMF_VM_KMMSCAND, &mm->flags);
		kmmscand_free_slot(ms);
	}
}

/* The first slot due at @now, if any, which the thread holds from now on */
static struct kmmscand_mm_slot *kmmscand_take_due(unsigned long now)
{
	struct kmmscand_mm_slot *ms;

	spin_lock(&kmmscand_mm_lock);
	ms = kmmscand_first_due(&kmmscand_scan.due, now);
	kmmscand_scan.mm_slot = ms;
	spin_unlock(&kmmscand_mm_lock);
	return ms;
}

/*
 * The thread is done with @ms: queue it again by its due time, or free it
 * if its mm exited meanwhile.
 */
static void kmmscand_put_back(struct kmmscand_mm_slot *ms)
{
	bool exited;

	spin_lock(&kmmscand_mm_lock);
	exited = !atomic_read(&ms->slot.mm->mm_users);
	if (exited)
		hash_del(&ms->slot.hash);
	else
		kmmscand_queue(&kmmscand_scan.due, ms);
	kmmscand_scan.mm_slot = NULL;
	spin_unlock(&kmmscand_mm_lock);

	if (exited)
		kmmscand_free_slot(ms);
}

/* Where the owner of the mm runs and what it may use */

/*
 * The owner of an mm is the process it was made for, by exec() or fork():
 * its main thread, or once that has exited, the first of its threads that
 * still runs in the mm.  Return it with a reference, or NULL if no thread
 * of it does (all exited, or it exec()ed another mm while someone else
 * still holds this one).
 */
static struct task_struct *kmmscand_get_owner(struct kmmscand_mm_slot *ms)
{
	struct task_struct *leader, *t, *owner = NULL;

	rcu_read_lock();
	leader = pid_task(ms->owner, PIDTYPE_TGID);
	if (leader) {
		for_each_thread(leader, t) {
			if (READ_ONCE(t->mm) == ms->slot.mm) {
				owner = get_task_struct(t);
				break;
			}
		}
	}
	rcu_read_unlock();
	return owner;
}

/*
 * The owner stands for all the threads of the mm: the target is chosen
 * near the node it last ran on, within its cpuset, and its task memory
 * policy applies to VMAs without one of their own.  Threads are meant to
 * share a cpuset and usually share a policy; one that set a policy of its
 * own has it honoured by NUMA balancing, which works per thread, and not
 * by kmmscand, which works per mm.  Without an owner the target is chosen
 * near the slow node the memory is on; if cpusets are in use the allowed
 * nodes cannot be known then, and nothing is promoted.
 */
static void kmmscand_owner_context(struct kmmscand_walk_ctl *ctl)
{
	struct task_struct *owner = kmmscand_get_owner(ctl->ms);
	struct mempolicy *pol;

	if (!owner) {
		ctl->home_nid = NUMA_NO_NODE;
		ctl->task_mof = true;
		if (cpusets_enabled())
			nodes_clear(ctl->allowed);
		else
			ctl->allowed = node_states[N_MEMORY];
		return;
	}

	ctl->home_nid = cpu_to_node(task_cpu(owner));
	ctl->allowed = cpuset_mems_allowed(owner);
	task_lock(owner);
	pol = owner->mempolicy;
	ctl->task_mof = !pol || kmmscand_mpol_allows(pol);
	task_unlock(owner);
	put_task_struct(owner);
}

static void kmmscand_slow_nodes(nodemask_t *slow)
{
	int nid;

	nodes_clear(*slow);
	for_each_node_state(nid, N_MEMORY)
		if (!node_is_toptier(nid))
			node_set(nid, *slow);
}

static void kmmscand_toptier_nodes(nodemask_t *top)
{
	int nid;

	nodes_clear(*top);
	for_each_node_state(nid, N_MEMORY)
		if (node_is_toptier(nid))
			node_set(nid, *top);
}

/* Choosing the target node */

/*
 * Whether the node of @pgdat has room for promotions that bring what the
 * batch queued for it to @nr_pages, the last folio of @folio_pages
 * included: a zone of the node stays above its high watermark with all of
 * them.
 *
 * Failing that, there is room for the folio, if it is the first one the
 * batch queues for the node (@nr_pages is @folio_pages), when a zone takes
 * it above its high watermark while a zone of the node meets its promotion
 * watermark.  kswapd holds such a node balanced, so no wakeup makes room
 * on it; and a lower zone meets that watermark through its lowmem reserve
 * alone (ZONE_DMA, or ZONE_DMA32 below a large ZONE_NORMAL) while the zone
 * that promotions allocate from is full.  Then folios go one by one, as
 * NUMA balancing promotes them: the allocator takes them down to the
 * zones' watermarks (promotions do not reclaim), the node stops meeting
 * the mark, and kswapd, woken, demotes.  Only the first folio of a batch
 * goes so: the free pages that the check reads do not show the folios the
 * batch already holds, and the next batch finds those migrated.
 */
static bool kmmscand_has_room(pg_data_t *pgdat, unsigned long nr_pages,
			      unsigned long folio_pages)
{
	int z;

	if (migrate_balanced_pgdat(pgdat, nr_pages))
		return true;
	if (nr_pages != folio_pages ||
	    !migrate_balanced_pgdat(pgdat, folio_pages))
		return false;
	for (z = 0; z < pgdat->nr_zones; z++) {
		struct zone *zone = pgdat->node_zones + z;

		if (managed_zone(zone) &&
		    zone_watermark_ok(zone, 0, promo_wmark_pages(zone),
				      ZONE_MOVABLE, 0))
			return true;
	}
	return false;
}

/*
 * The room that kswapd makes on @nid for promotions in NUMA balancing's
 * tiering mode, or while kmmscand wants it (kmmscand_wants_room()): the
 * pages between the high and the promotion watermarks of its zones.
 */
static unsigned long kmmscand_promo_headroom(int nid)
{
	pg_data_t *pgdat = NODE_DATA(nid);
	unsigned long pages = 0;
	int z;

	for (z = 0; z < pgdat->nr_zones; z++) {
		struct zone *zone = pgdat->node_zones + z;

		if (managed_zone(zone))
			pages += promo_wmark_pages(zone) - high_wmark_pages(zone);
	}
	return pages;
}

/* The pages demoted from @nid so far, by whatever demoted them */
static unsigned long kmmscand_node_demoted(int nid)
{
	pg_data_t *pgdat = NODE_DATA(nid);

	return node_page_state(pgdat, PGDEMOTE_KSWAPD) +
	       node_page_state(pgdat, PGDEMOTE_DIRECT) +
	       node_page_state(pgdat, PGDEMOTE_KHUGEPAGED);
}

static void kmmscand_wake_kswapd(int nid)
{
	pg_data_t *pgdat = NODE_DATA(nid);
	int z;

	for (z = pgdat->nr_zones - 1; z >= 0; z--) {
		struct zone *zone = pgdat->node_zones + z;

		if (managed_zone(zone)) {
			wakeup_kswapd(zone, 0, 0, ZONE_MOVABLE);
			return;
		}
	}
}

/*
 * Fill @order with the top-tier memory nodes, nearest to @from first; ties
 * keep node id order.  A valid target_node knob replaces the whole list.
 */
static int kmmscand_order_targets(int from, int *order)
{
	int target = READ_ONCE(kmmscand_target_node);
	int nid, nr = 0, i;

	if (target != NUMA_NO_NODE && node_state(target, N_MEMORY) &&
	    node_is_toptier(target)) {
		order[0] = target;
		return 1;
	}

	for_each_node_state(nid, N_MEMORY) {
		if (!node_is_toptier(nid))
			continue;
		for (i = nr; i > 0; i--) {
			if (node_distance(from, order[i - 1]) <=
			    node_distance(from, nid))
				break;
			order[i] = order[i - 1];
		}
		order[i] = nid;
		nr++;
	}
	return nr;
}

static int kmmscand_choose_target(struct kmmscand_walk_ctl *ctl, int src_nid,
				  unsigned long nr_pages, int *full_nid)
{
	int from = ctl->home_nid != NUMA_NO_NODE ? ctl->home_nid : src_nid;
	int *order = kmmscand_node_order;
	int nr, i;

	nr = kmmscand_order_targets(from, order);
	nodes_clear(ctl->has_room);
	for (i = 0; i < nr; i++)
		if (node_isset(order[i], ctl->allowed) &&
		    kmmscand_has_room(NODE_DATA(order[i]),
				      kmmscand_nodes[order[i]].in_flight +
				      nr_pages, nr_pages))
			node_set(order[i], ctl->has_room);

	return kmmscand_pick_node(order, nr, &ctl->allowed, &ctl->has_room,
				  full_nid);
}

/* The promotion batch */

static bool kmmscand_batch_full(const struct kmmscand_batch *b)
{
	return b->nr >= KMMSCAND_BATCH_MAX || b->nr_pages >= KMMSCAND_BATCH_PAGES;
}

static void kmmscand_batch_reset(struct kmmscand_walk_ctl *ctl)
{
	ctl->batch->nr = 0;
	ctl->batch->nr_pages = 0;
	ctl->last_folio = NULL;
}

/*
 * Count and trace the outcome for the folio at @pfn, of @nr base pages,
 * on its way from @src to @target; kmmscand_count_no_room() counts a
 * refusal for want of room, which is the scan step's.
 */
static void kmmscand_count_result(struct mm_struct *mm, unsigned long pfn,
				  int src, int target, long nr,
				  enum kmmscand_promote_result result)
{
	if (result == KMMSCAND_PROMOTED)
		count_vm_events(KMMSCAND_MIGRATED, nr);
	else if (result == KMMSCAND_PROMOTE_RATE_LIMITED)
		count_vm_events(KMMSCAND_RATE_LIMITED, nr);
	else if (result == KMMSCAND_PROMOTE_ISOLATE_FAILED ||
		 result == KMMSCAND_PROMOTE_MIGRATE_FAILED)
		count_vm_events(KMMSCAND_MIGRATE_FAILED, nr);
	trace_kmmscand_migrate(mm, pfn, src, target, nr, result);
}

/* Give up the candidates @entry[0, @nr), with @result */
static void kmmscand_put_entries(struct mm_struct *mm,
				 struct kmmscand_candidate *entry,
				 unsigned int nr, int target,
				 enum kmmscand_promote_result result)
{
	struct kmmscand_candidate *c;

	for (c = entry; c < entry + nr; c++) {
		kmmscand_count_result(mm, c->pfn, c->nid, target, c->nr,
				      result);
		folio_put(c->folio);
	}
}

/* Give up the candidates of the batch from index @from on, with @result */
static void kmmscand_release_batch(struct kmmscand_walk_ctl *ctl,
				   unsigned int from,
				   enum kmmscand_promote_result result, int nid)
{
	struct kmmscand_batch *b = ctl->batch;

	kmmscand_put_entries(ctl->mm, b->entry + from, b->nr - from, nid,
			     result);
	kmmscand_batch_reset(ctl);
}

static int kmmscand_cmp_candidate(const void *a, const void *b)
{
	unsigned long fa = (unsigned long)((const struct kmmscand_candidate *)a)->folio;
	unsigned long fb = (unsigned long)((const struct kmmscand_candidate *)b)->folio;

	if (fa == fb)
		return 0;
	return fa < fb ? -1 : 1;
}

/*
 * A folio can be queued twice, e.g. when a large folio or a shared file
 * folio is mapped at two places.  The second reference would make the
 * migration of the first copy fail, so keep one entry per folio.
 */
static void kmmscand_dedup_batch(struct kmmscand_batch *b)
{
	unsigned int i, nr = 0;

	sort(b->entry, b->nr, sizeof(b->entry[0]), kmmscand_cmp_candidate, NULL);
	b->nr_pages = 0;
	for (i = 0; i < b->nr; i++) {
		if (nr && b->entry[nr - 1].folio == b->entry[i].folio) {
			b->entry[nr - 1].accessed += b->entry[i].accessed;
			folio_put(b->entry[i].folio);
			continue;
		}
		b->entry[nr++] = b->entry[i];
		b->nr_pages += folio_nr_pages(b->entry[i].folio);
	}
	b->nr = nr;
}

/* Candidates of @nr base pages were refused for want of room */
static void kmmscand_count_no_room(struct kmmscand_walk_ctl *ctl,
				   unsigned long nr)
{
	count_vm_events(KMMSCAND_NO_ROOM, nr);
	ctl->no_room += nr;
}

/* The folio found at @addr is being promoted, see kmmscand_heat_hot() */
static void kmmscand_mark_promoted(struct kmmscand_mm_slot *ms,
				   unsigned long addr)
{
	struct kmmscand_heat *heat = xa_load(&ms->heat, addr >> PMD_SHIFT);

	if (heat)
		kmmscand_heat_promoted(heat,
				       (addr >> PAGE_SHIFT) & (PTRS_PER_PTE - 1));
}

/*
 * Charge the rate limit of @target for the isolated @folio of @nr pages;
 * if it refuses, undo migrate_misplaced_folio_prepare() and return false.
 */
static bool kmmscand_charge_isolated(struct folio *folio, int target, long nr)
{
	LIST_HEAD(back);

	if (numa_promote_allowed(NODE_DATA(target), nr))
		return true;
	list_add(&folio->lru, &back);
	putback_movable_pages(&back);
	return false;
}

/*
 * Whether the folio of @c is still worth moving to a node of the top tier.
 * Our reference keeps it from being freed, split or migrated by anyone
 * else since the scan; it can still have been unmapped (MADV_DONTNEED,
 * reclaim), isolated, or moved before our reference was taken.
 */
static bool kmmscand_candidate_stale(const struct kmmscand_candidate *c,
				     const nodemask_t *slow)
{
	struct folio *folio = c->folio;

	return !folio_mapped(folio) || !folio_test_lru(folio) ||
	       !node_isset(folio_nid(folio), *slow);
}

/*
 * Take the candidate @c for migration to @target, whose room must hold it
 * on top of @queued base pages of the batch already taken: the
 * misplaced-folio allocation may dip to the min watermark, so room checked
 * for one folio at a time would let a batch take the node below its high
 * watermark, where reclaim and the allocations of its own CPUs would pay
 * for it.  Return KMMSCAND_PROMOTED, or else why not, having given up
 * our reference (a refusal for want of room is left for the caller to
 * count).
 */
static enum kmmscand_promote_result
kmmscand_admit_one(struct kmmscand_walk_ctl *ctl, struct kmmscand_candidate *c,
		   int target, unsigned long queued)
{
	struct folio *folio = c->folio;
	enum kmmscand_promote_result result = KMMSCAND_PROMOTED;

	c->isolated = false;
	c->failed = false;
	if (kmmscand_candidate_stale(c, &ctl->slow))
		result = KMMSCAND_PROMOTE_STALE;
	else if (!kmmscand_has_room(NODE_DATA(target), queued + c->nr +
				    kmmscand_nodes[target].in_flight, c->nr))
		result = KMMSCAND_PROMOTE_NO_ROOM;
	if (result == KMMSCAND_PROMOTED)
		return result;
	trace_kmmscand_migrate(ctl->mm, c->pfn, c->nid, target, c->nr, result);
	if (result == KMMSCAND_PROMOTE_NO_ROOM)
		kmmscand_count_no_room(ctl, c->nr);
	folio_put(folio);
	return result;
}

/*
 * Isolate the admitted candidate @c, which @vma maps, for migration to
 * @target, adding it to @isolated; return KMMSCAND_PROMOTED then, else
 * why not.  Our reference to the folio is gone either way: on success the
 * isolation holds one of its own.  The VMA is only consulted for file
 * folios; the caller's mmap_lock keeps it valid.
 * migrate_misplaced_folio_prepare() asks for the PTL because NUMA hinting
 * faults hold no reference of their own; ours serves the same purpose.
 * The rate limit is charged once the folio is isolated, so that a folio
 * that cannot be isolated spends none of it; one the limit refuses is put
 * back.
 */
static enum kmmscand_promote_result
kmmscand_isolate_one(struct mm_struct *mm, struct kmmscand_candidate *c,
		     struct vm_area_struct *vma, int target,
		     struct list_head *isolated)
{
	struct folio *folio = c->folio;
	enum kmmscand_promote_result result = KMMSCAND_PROMOTED;

	if (migrate_misplaced_folio_prepare(folio, vma, target))
		result = KMMSCAND_PROMOTE_ISOLATE_FAILED;
	else if (!kmmscand_charge_isolated(folio, target, c->nr))
		result = KMMSCAND_PROMOTE_RATE_LIMITED;

	if (result != KMMSCAND_PROMOTED) {
		kmmscand_count_result(mm, c->pfn, c->nid, target, c->nr,
				      result);
		folio_put(folio);
		return result;
	}
	c->isolated = true;
	list_add_tail(&folio->lru, isolated);
	folio_put(folio);
	return result;
}

/*
 * Put back the folios of @isolated, those of the entries of @entry[0, @nr)
 * marked isolated: scanning was disabled, or their process is exiting.
 */
static void kmmscand_drop_entries(struct mm_struct *mm,
				  struct list_head *isolated,
				  struct kmmscand_candidate *entry, unsigned int nr)
{
	struct kmmscand_candidate *c;
	unsigned int i;

	putback_movable_pages(isolated);
	for (i = 0; i < nr; i++) {
		c = &entry[i];
		if (!c->isolated)
			continue;
		c->isolated = false;
		trace_kmmscand_migrate(mm, c->pfn, c->nid, NUMA_NO_NODE, c->nr,
				       KMMSCAND_PROMOTE_DROPPED);
	}
}

/*
 * The folios of the entries of @entry[0, @nr) marked isolated were
 * migrated with one call, so that their unmapping shared TLB flushes (see
 * migrate_misplaced_folios()); @isolated holds those that were not.  Mark
 * their entries failed and put them back at once: no folio stays isolated
 * past the call that was to move it.  The entries are sorted by folio, so
 * a folio that failed is found by bisection; the others may be freed
 * already and are not looked at.
 */
static void kmmscand_put_back_failed(struct list_head *isolated,
				     struct kmmscand_candidate *entry,
				     unsigned int nr)
{
	struct kmmscand_candidate key, *c;
	struct folio *folio;

	list_for_each_entry(folio, isolated, lru) {
		key.folio = folio;
		c = bsearch(&key, entry, nr, sizeof(*c),
			    kmmscand_cmp_candidate);
		if (c)
			c->failed = true;
	}
	putback_movable_pages(isolated);
}

/*
 * Count and trace each entry of @entry[0, @nr) that was isolated for
 * @target, once kmmscand_put_back_failed() has marked those that did not
 * move, and mark those that moved in the heat of @ms if given.  No lock is
 * needed: the folios are not looked at.  Return the base pages migrated.
 */
static unsigned long kmmscand_settle_entries(struct mm_struct *mm,
					     struct kmmscand_mm_slot *ms,
					     struct kmmscand_candidate *entry,
					     unsigned int nr, int target,
					     unsigned long *failed)
{
	enum kmmscand_promote_result result;
	struct kmmscand_candidate *c;
	unsigned long moved = 0;
	unsigned int i;

	*failed = 0;
	for (i = 0; i < nr; i++) {
		c = &entry[i];
		if (!c->isolated)
			continue;
		c->isolated = false;
		if (c->failed) {
			result = KMMSCAND_PROMOTE_MIGRATE_FAILED;
			count_vm_events(KMMSCAND_MIGRATE_FAILED, c->nr);
			*failed += c->nr;
		} else {
			result = KMMSCAND_PROMOTED;
			count_vm_events(KMMSCAND_MIGRATED, c->nr);
			moved += c->nr;
			if (ms)
				kmmscand_mark_promoted(ms, c->addr);
		}
		trace_kmmscand_migrate(mm, c->pfn, c->nid, target, c->nr,
				       result);
	}
	atomic_long_add(moved, &kmmscand_nodes[target].promoted);
	return moved;
}

/* The kmmscand thread migrated a batch of @ms */
static void kmmscand_count_moved(struct kmmscand_mm_slot *ms,
				 unsigned long moved, unsigned long failed)
{
	ms->stats.promoted += moved;
	ms->stats.failed += failed;
}

/*
 * A visit of @ms took its figures from @was to what they are: count the
 * CPU time in kmmscand_cpu_us, whole microseconds of the running total so
 * that no remainder is lost, and the work in the memory cgroup of the
 * mm's owner, for memory.stat.  The other global counters were counted as
 * the work was done.
 */
static void kmmscand_count_visit(struct kmmscand_mm_slot *ms,
				 const struct kmmscand_mm_stats *was)
{
	const struct kmmscand_mm_stats *now = &ms->stats;
	struct mm_struct *mm = ms->slot.mm;
	unsigned long us;

	us = div_u64(now->cpu_ns, NSEC_PER_USEC) -
	     div_u64(was->cpu_ns, NSEC_PER_USEC);
	count_vm_events(KMMSCAND_CPU_US, us);
	count_memcg_events_mm(mm, KMMSCAND_MM_SCANS, now->scans - was->scans);
	count_memcg_events_mm(mm, KMMSCAND_PTE_SCANNED,
			      now->pte_scanned - was->pte_scanned);
	count_memcg_events_mm(mm, KMMSCAND_SLOWTIER_ACCESSED,
			      now->accessed - was->accessed);
	count_memcg_events_mm(mm, KMMSCAND_MIGRATED,
			      now->promoted - was->promoted);
	count_memcg_events_mm(mm, KMMSCAND_MIGRATE_FAILED,
			      now->failed - was->failed);
}

/**
 * DOC: kmmscand migration workers
 *
 * Copying is most of the thread's work while it promotes, and the thread
 * runs on one CPU at a time: on a crowded machine its nice level buys it
 * a fixed share of one CPU, which then caps promotion for every process.
 * So the thread hands each batch to the idle workers of an unbound
 * workqueue, which run at its nice level, and scans on: it is the only
 * one that scans, and it copies only what no worker can take.  Under the
 * mmap_lock it admits the batch's candidates against the room of their
 * target and shares them out between the idle jobs; once it has given the
 * lock up it hands the jobs over.  A worker takes the mmap_lock for read
 * in its turn, isolates its share and migrates it.  So a folio is off the
 * LRU only for the migration call that moves it, however long a job waits
 * for its worker: a waiting job holds the references that the scan took,
 * as a filling batch does.  A worker takes a second job while it runs one
 * (KMMSCAND_COPY_DEPTH); with no idle job, or a batch too small to hand
 * over, the thread isolates and migrates the batch itself.  It never
 * waits for a worker except at the end of a pass, when it takes every job
 * back.
 *
 * A job holds a reference to its mm (mm_users), which keeps the mm's slot
 * too (see __kmmscand_exit()).  The thread settles a finished job (counts,
 * traces, heat, the mm's CPU time) before it shares a batch and between
 * two scan steps, so that the slot's fields have one writer.  The pages of
 * a job count against the room of its node from the hand-over until then,
 * so that concurrent batches cannot take a node below its watermark
 * between them.  The thread and up to migrate_threads - 1 workers, no
 * more than there are online CPUs, copy at once.
 */
/*
 * A job of a worker: the thread owns it while !@busy, the worker from the
 * hand-over until it sets @done, and the thread again from then on.
 * @entry[0, @nr) are the admitted candidates of @pages base pages, handed
 * over with their references, which the worker gives up as it isolates
 * them or finds them stale; @limited says that the rate limit of @target
 * refused the rest.
 */
struct kmmscand_copy {
	struct work_struct work;
	struct list_head folios;
	struct kmmscand_candidate *entry;
	unsigned int nr;
	unsigned long pages;
	struct kmmscand_mm_slot *ms;
	struct mm_struct *mm;
	int target;
	u64 cpu_ns;
	bool limited;
	bool busy;
	bool done;
};

static struct workqueue_struct *kmmscand_wq __ro_after_init;
static struct kmmscand_copy kmmscand_copies[(KMMSCAND_MIGRATE_THREADS_LIMIT - 1) *
					   KMMSCAND_COPY_DEPTH];
/* The workqueue's max_active: one job running per worker */
static unsigned int kmmscand_wq_active;

/*
 * Isolate the candidates of @c under the mmap_lock of its mm, as the
 * thread isolates its own (kmmscand_isolate_batch()), looking their VMAs
 * up again.  Once the rate limit of the target refuses one, it refuses the
 * rest.  With the lock contended the job is given up, as the thread gives
 * up a scan step.
 */
static void kmmscand_copy_isolate(struct kmmscand_copy *c)
{
	enum kmmscand_promote_result result;
	struct kmmscand_candidate *e;
	struct vm_area_struct *vma;
	nodemask_t slow;
	unsigned int i;

	if (!mmap_read_trylock(c->mm)) {
		kmmscand_put_entries(c->mm, c->entry, c->nr, c->target,
				     KMMSCAND_PROMOTE_DROPPED);
		return;
	}
	kmmscand_slow_nodes(&slow);
	for (i = 0; i < c->nr; i++) {
		e = &c->entry[i];
		vma = vma_lookup(c->mm, e->addr);
		if (!vma || kmmscand_candidate_stale(e, &slow)) {
			kmmscand_put_entries(c->mm, e, 1, c->target,
					     KMMSCAND_PROMOTE_STALE);
			continue;
		}
		result = kmmscand_isolate_one(c->mm, e, vma, c->target,
					      &c->folios);
		if (result == KMMSCAND_PROMOTE_RATE_LIMITED) {
			c->limited = true;
			kmmscand_put_entries(c->mm, e + 1, c->nr - i - 1,
					     c->target,
					     KMMSCAND_PROMOTE_RATE_LIMITED);
			break;
		}
		cond_resched();
	}
	mmap_read_unlock(c->mm);
}

static void kmmscand_copy_work(struct work_struct *work)
{
	struct kmmscand_copy *c = container_of(work, struct kmmscand_copy,
					       work);
	u64 runtime = task_sched_runtime(current);

	kmmscand_copy_isolate(c);
	if (!list_empty(&c->folios)) {
		migrate_misplaced_folios(&c->folios, c->target);
		kmmscand_put_back_failed(&c->folios, c->entry, c->nr);
	}
	c->cpu_ns = task_sched_runtime(current) - runtime;
	/* Pairs with smp_load_acquire() in kmmscand_settle_copies() */
	smp_store_release(&c->done, true);
}

/*
 * The workers copy at the thread's nice level, see KMMSCAND_NICE, each on
 * the CPU its job is queued for (kmmscand_copy_cpu()): left to the
 * scheduler, a worker woken by the thread stays on the thread's CPU, and
 * the two share one CPU's worth of their nice level.
 */
static int kmmscand_set_wq_nice(long nice)
{
	struct workqueue_attrs *attrs;
	int err;

	if (!kmmscand_wq)
		return 0;
	attrs = alloc_workqueue_attrs();
	if (!attrs)
		return -ENOMEM;
	attrs->nice = nice;
	attrs->affn_scope = WQ_AFFN_CPU;
	attrs->affn_strict = true;
	err = apply_workqueue_attrs(kmmscand_wq, attrs);
	free_workqueue_attrs(attrs);
	return err;
}

/*
 * The CPU for the next job that migrates to @nid: the next CPU of the node,
 * or of the machine if the node has none, other than the thread's own.
 */
static int kmmscand_copy_cpu(int nid)
{
	static int last = -1;
	const struct cpumask *near = cpumask_of_node(nid);
	int self = raw_smp_processor_id();
	int i, cpu = last;

	if (!cpumask_intersects(near, cpu_online_mask))
		near = cpu_online_mask;
	for (i = 0; i < 2; i++) {
		cpu = cpumask_next_and(cpu, near, cpu_online_mask);
		if (cpu >= nr_cpu_ids)
			cpu = cpumask_first_and(near, cpu_online_mask);
		if (cpu != self)
			break;
	}
	last = cpu;
	return cpu;
}

/* How many workers migrate_threads and the online CPUs allow */
static unsigned int kmmscand_workers(void)
{
	unsigned long threads = READ_ONCE(kmmscand_migrate_threads);

	if (!kmmscand_wq)
		return 0;
	threads = min_t(unsigned long, threads, num_online_cpus());
	return min_t(unsigned long, threads - 1,
		     KMMSCAND_MIGRATE_THREADS_LIMIT - 1);
}

/*
 * Count and trace what the worker of @c migrated, and take the job back.
 * The work done for @current_ms, whose scan step is under way, is counted
 * with the step's (kmmscand_count_visit()).
 */
static void kmmscand_settle_copy(struct kmmscand_copy *c,
				 struct kmmscand_mm_slot *current_ms)
{
	struct kmmscand_node *n = &kmmscand_nodes[c->target];
	struct kmmscand_mm_slot *ms = c->ms;
	struct kmmscand_mm_stats was = ms->stats;
	unsigned long moved, failed;

	moved = kmmscand_settle_entries(c->mm, ms, c->entry, c->nr, c->target,
					&failed);
	kmmscand_count_moved(ms, moved, failed);
	ms->stats.cpu_ns += c->cpu_ns;
	/* The thread's next batch for the node backs off as for its own */
	if (c->limited)
		n->limited_until = numa_promote_window_end(NODE_DATA(c->target));
	if (ms != current_ms)
		kmmscand_count_visit(ms, &was);
	n->in_flight -= c->pages;
	mmput_async(c->mm);
	c->busy = false;
}

/*
 * Settle the jobs that the workers finished; with @wait, wait for the
 * others and settle them too.  @current_ms is the slot whose scan step is
 * under way, if any.
 */
static void kmmscand_settle_copies(bool wait,
				   struct kmmscand_mm_slot *current_ms)
{
	struct kmmscand_copy *c;
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(kmmscand_copies); i++) {
		c = &kmmscand_copies[i];
		if (!c->busy)
			continue;
		if (wait)
			flush_work(&c->work);
		/* Pairs with smp_store_release() in kmmscand_copy_work() */
		else if (!smp_load_acquire(&c->done))
			continue;
		kmmscand_settle_copy(c, current_ms);
	}
}

/*
 * Set aside the idle jobs that take @ctl's batch of @pages base pages, in
 * equal shares of KMMSCAND_COPY_MIN_PAGES or more.  The thread is the only
 * one that scans, so it hands the whole batch over when it can and copies
 * only what no idle job takes.  Return the size of a share, or 0 if the
 * thread keeps the whole batch.  Only jobs with entries, given by
 * kmmscand_alloc_copies() without the mmap_lock, are taken.
 */
static unsigned long kmmscand_plan_copies(struct kmmscand_walk_ctl *ctl,
					  unsigned long pages)
{
	unsigned int i, nr_idle = 0, nr_workers = kmmscand_workers();
	struct kmmscand_copy *c;

	ctl->nr_jobs = 0;
	/* A worker that is done is taken back as soon as it can be */
	kmmscand_settle_copies(false, ctl->ms);
	for (i = 0; i < nr_workers * KMMSCAND_COPY_DEPTH; i++) {
		c = &kmmscand_copies[i];
		if (!c->busy && c->entry && nr_idle < nr_workers)
			ctl->jobs[nr_idle++] = c;
	}
	ctl->nr_jobs = min_t(unsigned long, nr_idle,
			     pages / KMMSCAND_COPY_MIN_PAGES);
	for (i = 0; i < ctl->nr_jobs; i++) {
		ctl->jobs[i]->nr = 0;
		ctl->jobs[i]->pages = 0;
	}
	return ctl->nr_jobs ? DIV_ROUND_UP(pages, ctl->nr_jobs) : 0;
}

/* Give up the jobs set aside for a batch that is dropped */
static void kmmscand_drop_copies(struct kmmscand_walk_ctl *ctl)
{
	struct kmmscand_copy *c;
	unsigned int i;

	for (i = 0; i < ctl->nr_jobs; i++) {
		c = ctl->jobs[i];
		kmmscand_put_entries(ctl->mm, c->entry, c->nr, ctl->moving_to,
				     KMMSCAND_PROMOTE_DROPPED);
	}
	ctl->nr_jobs = 0;
}

/* Hand the jobs that @ctl set aside over to the workers */
static void kmmscand_hand_out(struct kmmscand_walk_ctl *ctl)
{
	struct kmmscand_copy *c;
	unsigned int i;

	for (i = 0; i < ctl->nr_jobs; i++) {
		c = ctl->jobs[i];
		if (!c->nr)
			continue;
		INIT_LIST_HEAD(&c->folios);
		c->limited = false;
		c->target = ctl->moving_to;
		c->ms = ctl->ms;
		c->mm = ctl->mm;
		/* The thread holds a reference for the scan step */
		mmget(c->mm);
		c->busy = true;
		c->done = false;
		kmmscand_nodes[c->target].in_flight += c->pages;
		queue_work_on(kmmscand_copy_cpu(c->target), kmmscand_wq,
			      &c->work);
	}
	ctl->nr_jobs = 0;
}

/*
 * Give the jobs that the workers may take their entries, once: a batch's
 * worth each (24 KiB), allocated where no lock is held.
 */
static void kmmscand_alloc_copies(void)
{
	unsigned int i, nr_workers = kmmscand_workers();
	struct kmmscand_copy *c;

	if (nr_workers && nr_workers != kmmscand_wq_active) {
		workqueue_set_max_active(kmmscand_wq, nr_workers);
		kmmscand_wq_active = nr_workers;
	}
	for (i = 0; i < nr_workers * KMMSCAND_COPY_DEPTH; i++) {
		c = &kmmscand_copies[i];
		if (!c->entry)
			c->entry = kvmalloc_array(KMMSCAND_BATCH_MAX,
						  sizeof(*c->entry),
						  GFP_KERNEL);
	}
}

/*
 * Hand the shares of the batch over to the workers and migrate what
 * kmmscand_isolate_batch() isolated, with the mmap_lock given up: the
 * isolations hold the folios, and no VMA is needed any more.
 */
static void kmmscand_migrate_batch(struct kmmscand_walk_ctl *ctl)
{
	unsigned long moved, failed;

	kmmscand_hand_out(ctl);
	kmmscand_alloc_copies();
	if (list_empty(&ctl->moving))
		return;
	migrate_misplaced_folios(&ctl->moving, ctl->moving_to);
	kmmscand_put_back_failed(&ctl->moving, ctl->batch->entry,
				 ctl->moving_end);
	moved = kmmscand_settle_entries(ctl->mm, ctl->ms, ctl->batch->entry,
					ctl->moving_end, ctl->moving_to,
					&failed);
	kmmscand_count_moved(ctl->ms, moved, failed);
}

/* Keep entries [0, @end) isolated for @target until the lock is given up */
static void kmmscand_hold_isolated(struct kmmscand_walk_ctl *ctl,
				   unsigned int end, int target)
{
	ctl->moving_end = end;
	ctl->moving_to = target;
}

/*
 * The rate limit of @nid is spent: remember until when, and stop the scan
 * step, so that the thread neither offers the node more candidates nor
 * clears more Accessed bits before the window ends.
 */
static void kmmscand_note_rate_limited(struct kmmscand_walk_ctl *ctl, int nid)
{
	struct kmmscand_node *n = &kmmscand_nodes[nid];

	n->limited_until = numa_promote_window_end(NODE_DATA(nid));
	ctl->stopped = true;
	ctl->stop_reason = KMMSCAND_SKIP_RATE_LIMITED;
	ctl->resume_at = n->limited_until;
}

/*
 * @nid has no room for the candidates: stop the scan step as for the rate
 * limit, and back off from the node.  A back-off in progress is left as it
 * is.  A new one wakes kswapd of the node once, to demote cold pages and
 * make room, and is twice as long as the last one unless room was made on
 * the node since the last one began (kmmscand_room_made(),
 * kmmscand_next_backoff()): while demotion cannot make room, kmmscand
 * wakes kswapd ever more rarely and stops clearing, pinning and dropping
 * the hot set it cannot promote.  The few pages that kswapd frees on a
 * node with nothing to demote do not start the back-offs over; the room
 * that demotion makes does, even when something else took it first.
 */
static void kmmscand_node_full(struct kmmscand_walk_ctl *ctl, int nid)
{
	struct kmmscand_node *n = &kmmscand_nodes[nid];
	unsigned long demoted;

	if (!time_before(jiffies, n->full_until)) {
		demoted = kmmscand_node_demoted(nid);
		if (kmmscand_room_made(atomic_long_xchg(&n->promoted, 0),
				       demoted - n->demoted,
				       kmmscand_promo_headroom(nid)))
			n->backoff_ms = 0;
		n->demoted = demoted;
		n->backoff_ms = kmmscand_next_backoff(n->backoff_ms);
		n->full_until = jiffies + msecs_to_jiffies(n->backoff_ms);
		/* Before the wakeup, which checks the watermark kswapd keeps */
		WRITE_ONCE(n->room_wanted_until,
			   jiffies + msecs_to_jiffies(KMMSCAND_ROOM_WANTED_MS));
		kmmscand_wake_kswapd(nid);
		count_vm_event(KMMSCAND_NODE_FULL);
	}
	ctl->stopped = true;
	ctl->stop_reason = KMMSCAND_SKIP_NODE_FULL;
	ctl->resume_at = n->full_until;
}

/* Give up the candidates from index @from on, refused by @nid for @result */
static void kmmscand_refuse_batch(struct kmmscand_walk_ctl *ctl,
				  unsigned int from, int nid,
				  enum kmmscand_promote_result result)
{
	struct kmmscand_node *n = &kmmscand_nodes[nid];
	struct kmmscand_batch *b = ctl->batch;
	unsigned long nr = 0;
	unsigned int i;

	for (i = from; i < b->nr; i++)
		nr += b->entry[i].nr;
	kmmscand_release_batch(ctl, from, result, nid);
	kmmscand_adapt_threshold(n, jiffies, true,
				 kmmscand_refusal_tightens(n, result,
							   ctl->max_heat));
	if (result == KMMSCAND_PROMOTE_RATE_LIMITED) {
		kmmscand_note_rate_limited(ctl, nid);
	} else {
		kmmscand_count_no_room(ctl, nr);
		kmmscand_node_full(ctl, nid);
	}
}

/*
 * Look at the nodes the mm may promote to, nearest first.  The first that
 * takes promotions sets the heat the scan step asks of candidates
 * (@ctl->threshold), once it has lowered it if it refused nothing for
 * long, and the step goes ahead.  If every one of them is backing off or
 * out of rate, the step is not walked at all: it would clear Accessed bits
 * and pin folios only to drop them.  Then @ctl->resume_at is set to when
 * the first of those nodes takes promotions again, and true is returned.
 */
static bool kmmscand_targets_closed(struct kmmscand_walk_ctl *ctl)
{
	int from = ctl->home_nid != NUMA_NO_NODE ? ctl->home_nid :
						   numa_node_id();
	int *order = kmmscand_node_order;
	enum kmmscand_skip_reason reason;
	struct kmmscand_node *n;
	unsigned long until;
	bool closed = false;
	int nr, i;

	nr = kmmscand_order_targets(from, order);
	for (i = 0; i < nr; i++) {
		if (!node_isset(order[i], ctl->allowed))
			continue;
		n = &kmmscand_nodes[order[i]];
		if (kmmscand_node_open(n, jiffies, &until, &reason)) {
			kmmscand_adapt_threshold(n, jiffies, false, false);
			ctl->threshold = kmmscand_node_threshold(n);
			return false;
		}
		if (!closed || time_before(until, ctl->resume_at)) {
			ctl->resume_at = until;
			ctl->stop_reason = reason;
		}
		closed = true;
	}
	return closed;
}

/**
 * kmmscand_isolate_batch - isolate the queued candidates for migration
 * @ctl: the scan step, with the mmap_lock of its mm held for read
 *
 * The thread isolates the batch whenever it fills up and at the end of
 * each scan step, with the walk stopped:
 *
 * - migrate_misplaced_folio_prepare() needs a VMA that maps the folio.
 *   Still holding the mmap_lock that the walk took keeps the recorded VMAs
 *   valid; a worker that isolates a share later takes the lock again and
 *   looks each address up again (kmmscand_copy_isolate()).
 * - Candidates are pinned; settling the batch at once bounds the pinned
 *   memory to one batch, and one share of it per job of a worker.
 * - Each share is isolated first and then migrated with one call, so that
 *   the unmapping of its folios shares TLB flushes: one round of IPIs to
 *   the CPUs that run the mm per share, not per folio.
 *
 * Once isolated, the folios need neither the VMA nor the lock, and the
 * thread migrates them after giving the lock up (kmmscand_migrate_batch()):
 * a writer of the mmap_lock never waits for a copy.
 */
static void kmmscand_isolate_batch(struct kmmscand_walk_ctl *ctl)
{
	unsigned long queued = 0, found = 0, share;
	struct kmmscand_batch *b = ctl->batch;
	struct list_head *isolated = &ctl->moving;
	enum kmmscand_promote_result result;
	struct kmmscand_candidate *c;
	struct kmmscand_copy *copy;
	unsigned int i, job = 0;
	int target, full_nid;

	if (!b->nr)
		return;

	kmmscand_dedup_batch(b);
	/*
	 * A node with room for the first folio is chosen; how much more of
	 * the batch fits is for kmmscand_admit_one() to find out.
	 */
	target = kmmscand_choose_target(ctl, folio_nid(b->entry[0].folio),
					folio_nr_pages(b->entry[0].folio),
					&full_nid);
	if (target == NUMA_NO_NODE) {
		if (full_nid == NUMA_NO_NODE)
			kmmscand_release_batch(ctl, 0, KMMSCAND_PROMOTE_NO_TARGET,
					       NUMA_NO_NODE);
		else
			kmmscand_refuse_batch(ctl, 0, full_nid,
					      KMMSCAND_PROMOTE_NO_ROOM);
		return;
	}

	if (time_before(jiffies, kmmscand_nodes[target].limited_until)) {
		kmmscand_refuse_batch(ctl, 0, target,
				      KMMSCAND_PROMOTE_RATE_LIMITED);
		return;
	}

	/* The first shares go to workers, which isolate them themselves */
	share = kmmscand_plan_copies(ctl, b->nr_pages);
	ctl->moving_to = target;
	for (i = 0; i < b->nr; i++) {
		c = &b->entry[i];
		if (kmmscand_should_stop()) {
			kmmscand_drop_entries(ctl->mm, isolated, b->entry, i);
			kmmscand_drop_copies(ctl);
			kmmscand_release_batch(ctl, i, KMMSCAND_PROMOTE_DROPPED,
					       NUMA_NO_NODE);
			return;
		}
		/* Our reference to entry i goes with it whatever the result */
		result = kmmscand_admit_one(ctl, c, target, queued);
		if (result == KMMSCAND_PROMOTED && job < ctl->nr_jobs) {
			copy = ctl->jobs[job];
			copy->entry[copy->nr++] = *c;
			copy->pages += c->nr;
			queued += c->nr;
			/*
			 * Taken for promotion, as if isolated: the scan may
			 * end before the job is settled.
			 */
			found += c->accessed;
			if (copy->pages >= share)
				job++;
			continue;
		}
		if (result == KMMSCAND_PROMOTED)
			result = kmmscand_isolate_one(ctl->mm, c, c->vma, target,
						      isolated);
		if (result == KMMSCAND_PROMOTED) {
			queued += c->nr;
			found += c->accessed;
		}
		if (result == KMMSCAND_PROMOTE_RATE_LIMITED ||
		    result == KMMSCAND_PROMOTE_NO_ROOM) {
			ctl->isolated += found;
			kmmscand_hold_isolated(ctl, i, target);
			kmmscand_refuse_batch(ctl, i + 1, target, result);
			return;
		}
		cond_resched();
	}
	ctl->isolated += found;
	kmmscand_hold_isolated(ctl, b->nr, target);
	kmmscand_batch_reset(ctl);
}

/* The page table walk */

/*
 * Whether the memory policy at @addr of @vma, or the owner's task policy
 * where there is none, lets the folio mapped there move.
 */
static bool kmmscand_policy_allows(struct vm_area_struct *vma,
				   unsigned long addr, bool task_mof)
{
	struct mempolicy *pol;
	pgoff_t ilx;
	bool allows;

	pol = __get_vma_policy(vma, addr, &ilx);
	if (!pol)
		return task_mof;
	allows = kmmscand_mpol_allows(pol);
	mpol_cond_put(pol);
	return allows;
}

/*
 * A VMA whose policy its backing object keeps (shmem, with memfd and
 * shared anonymous memory) can have a policy per range: another process
 * that maps the same object can mbind() part of it.  It is never skipped
 * whole for the policy at its start; instead each PMD-sized region whose
 * policy at its first and last page does not let its folios move is passed
 * over, and, since a range can end inside a region, the policy is looked
 * up again per candidate, as NUMA balancing looks it up per fault.  Only
 * the regions that may move make the scan one that learns how hot the mm
 * is (see kmmscand_end_scan()).
 */
static bool kmmscand_vma_shared_policy(struct vm_area_struct *vma)
{
	return vma->vm_ops && vma->vm_ops->get_policy;
}

/* Whether the Accessed bit of an entry mapping @folio is of interest */
static bool kmmscand_folio_wanted(struct kmmscand_walk_ctl *ctl,
				  struct folio *folio)
{
	/*
	 * KSM folios are shared by unrelated mms, and merge_across_nodes
	 * decides where they live; leave them to KSM.
	 */
	return folio && !folio_is_zone_device(folio) &&
	       node_isset(folio_nid(folio), ctl->slow) && !folio_test_ksm(folio);
}

/*
 * An entry at @addr mapping @folio, on the slow tier, was tested, and its
 * Accessed bit is clear now; @young says whether it was set.  In a primed
 * region, record that in the entry's heat.  If it was set, leave the
 * access for reclaim to see, then, unless the region is being primed,
 * count it and queue the folio if the entry is hot enough.
 */
static void kmmscand_note_entry(struct kmmscand_walk_ctl *ctl,
				struct folio *folio, struct vm_area_struct *vma,
				unsigned long addr, unsigned long nr, bool young)
{
	struct kmmscand_region *r = &ctl->ms->region;
	unsigned int i = (addr >> PAGE_SHIFT) & (PTRS_PER_PTE - 1);
	struct kmmscand_batch *b = ctl->batch;
	unsigned int h = KMMSCAND_HEAT_MAX;

	/* Only regions read as primed have a heat map */
	if (r->heat)
		h = kmmscand_heat_note(r->heat, i, young);
	if (!young)
		return;
	folio_set_young(folio);
	folio_clear_idle(folio);
	if (r->visit != KMMSCAND_VISIT_SCAN) {
		ctl->primed += nr;
		return;
	}
	r->accessed = true;
	ctl->accessed += nr;

	/* Once per folio; its other accessed entries count with it */
	if (folio == ctl->last_folio) {
		b->entry[b->nr - 1].accessed += nr;
		return;
	}
	if (r->heat && !kmmscand_heat_hot(r->heat, i, h, ctl->threshold)) {
		ctl->not_hot += nr;
		return;
	}
	/* Off the LRU: isolated by someone else, or not yet added to it */
	if (!folio_test_lru(folio)) {
		ctl->off_lru = true;
		return;
	}
	if (kmmscand_batch_full(b))
		return;
	if (kmmscand_vma_shared_policy(vma) &&
	    !kmmscand_policy_allows(vma, addr, ctl->task_mof))
		return;
	if (!folio_try_get(folio))
		return;

	if (r->heat)
		ctl->max_heat = max(ctl->max_heat, h);
	b->entry[b->nr].folio = folio;
	b->entry[b->nr].vma = vma;
	b->entry[b->nr].addr = addr;
	b->entry[b->nr].pfn = folio_pfn(folio);
	b->entry[b->nr].nid = folio_nid(folio);
	b->entry[b->nr].nr = folio_nr_pages(folio);
	b->entry[b->nr].accessed = nr;
	b->entry[b->nr].isolated = false;
	b->nr++;
	b->nr_pages += folio_nr_pages(folio);
	ctl->last_folio = folio;
}

/*
 * Test a PMD-mapped THP.  Return false if @pmd turned out not to map one,
 * so that the caller walks it as a PTE table.
 */
static bool kmmscand_scan_huge_pmd(pmd_t *pmd, unsigned long addr,
				   struct mm_walk *walk, int *ret)
{
#ifdef CONFIG_TRANSPARENT_HUGEPAGE
	struct kmmscand_walk_ctl *ctl = walk->private;
	spinlock_t *ptl;	/* the PMD's page table lock */
	struct folio *folio;
	bool young;
	pmd_t pmde;

	if (!pmd_trans_huge(pmdp_get(pmd)))
		return false;

	ptl = pmd_lock(walk->mm, pmd);
	pmde = pmdp_get(pmd);
	if (!pmd_trans_huge(pmde)) {
		spin_unlock(ptl);
		/* Split meanwhile: walk the PTE table; migrating: skip */
		return !pmd_none(pmde) && !pmd_present(pmde);
	}

	/* NUMA hinting entries belong to NUMA balancing */
	if (pmd_protnone(pmde) || is_huge_zero_pmd(pmde))
		goto unlock;
	/*
	 * A walk that starts inside the THP, where the one before stopped,
	 * passes over it: a THP is tested once per visit, by the walk that
	 * covers its head, at its PMD-aligned address.
	 */
	if (addr & ~HPAGE_PMD_MASK)
		goto unlock;
	folio = pmd_folio(pmde);
	if (kmmscand_folio_wanted(ctl, folio)) {
		ctl->ms->region.slow = true;
		if (folio != ctl->last_folio &&
		    kmmscand_batch_full(ctl->batch)) {
			ctl->next_addr = addr;
			*ret = KMMSCAND_WALK_FULL;
			goto unlock;
		}
		/*
		 * Flush when young: a THP's translation stays in the TLB
		 * for long, and a CPU that uses a cached translation never
		 * sets the Accessed bit again.  One flush per young THP is
		 * cheap next to the 512 pages it covers; cleared PTEs share
		 * one flush per scan step, see kmmscand_flush_tlb().
		 */
		young = pmdp_clear_flush_young_notify(walk->vma, addr, pmd);
		kmmscand_note_entry(ctl, folio, walk->vma, addr, HPAGE_PMD_NR,
				    young);
	}
	ctl->scanned += HPAGE_PMD_NR;
unlock:
	spin_unlock(ptl);
	return true;
#else
	return false;
#endif
}

/* Test the PTEs of one page table, from @pte on; the PTL is held */
static int kmmscand_scan_ptes(struct kmmscand_walk_ctl *ctl,
			      struct vm_area_struct *vma, pte_t *pte,
			      unsigned long addr, unsigned long end)
{
	for (; addr < end; pte++, addr += PAGE_SIZE) {
		pte_t ptent = ptep_get(pte);
		struct folio *folio;
		bool wanted, young;

		/* NUMA hinting entries belong to NUMA balancing */
		if (!pte_present(ptent) || pte_protnone(ptent))
			continue;

		folio = vm_normal_folio(vma, addr, ptent);
		wanted = kmmscand_folio_wanted(ctl, folio);
		if (wanted && folio != ctl->last_folio &&
		    kmmscand_batch_full(ctl->batch)) {
			ctl->next_addr = addr;
			return KMMSCAND_WALK_FULL;
		}

		ctl->scanned++;
		if (!wanted)
			continue;
		ctl->ms->region.slow = true;
		young = ptep_clear_young_notify(vma, addr, pte);
		if (young)
			ctl->flush_tlb = true;
		kmmscand_note_entry(ctl, folio, vma, addr, 1, young);
	}
	return 0;
}

static int kmmscand_scan_pte_table(pmd_t *pmd, unsigned long addr,
				   unsigned long end, struct mm_walk *walk)
{
	struct kmmscand_walk_ctl *ctl = walk->private;
	struct kmmscand_region *r = &ctl->ms->region;
	spinlock_t *ptl;	/* the PTE table's lock */
	pte_t *pte;
	int ret;

	/* NULL if the table went away (e.g. collapsed): nothing to test */
	pte = pte_offset_map_lock(walk->mm, pmd, addr, &ptl);
	if (!pte)
		return 0;
	/*
	 * The RCU read-side section that pte_unmap_unlock() ends was entered
	 * out of line, where sparse cannot see it.
	 */
	__acquire(RCU);
	ret = kmmscand_scan_ptes(ctl, walk->vma, pte, addr, end);
	/*
	 * Clear the Accessed bit of the PMD entry above the table once per
	 * visit of the region, if the table holds slow-tier memory (see
	 * "kmmscand and the Accessed bit of PMD entries" for why not
	 * otherwise).  The PTE table lock is enough: pte_offset_map_lock()
	 * checked that @pmd still points to the table, and whatever replaces
	 * or frees a PTE table of a VMA under mmap_read_lock
	 * (retract_page_tables() for one) takes the lock of that table too.
	 * The bit itself is cleared atomically, against the CPU setting it.
	 * clear_pmd is only set where the bit is usable; the config test
	 * leaves the call out of kernels where pmdp_test_and_clear_young()
	 * is a BUILD_BUG() (neither THP nor ARCH_HAS_NONLEAF_PMD_YOUNG).
	 */
	if (IS_ENABLED(CONFIG_ARCH_HAS_NONLEAF_PMD_YOUNG) && r->clear_pmd &&
	    r->slow) {
		r->clear_pmd = false;
		if (pmdp_test_and_clear_young(walk->vma, addr, pmd))
			ctl->flush_tlb = true;
	}
	pte_unmap_unlock(pte, ptl);
	return ret;
}

/*
 * The object at @index of @xa, allocated zeroed, @size bytes, on first
 * use; NULL if that fails.  Only the kmmscand thread stores in the
 * xarrays of a slot.  What is kept for @mm is charged to its memory
 * cgroup, as its page tables are, whichever task allocates it.
 */
static void *kmmscand_xa_get(struct mm_struct *mm, struct xarray *xa,
			     unsigned long index, size_t size)
{
	/*
	 * No reclaim on the cgroup's behalf with the mmap_lock of the mm held,
	 * and none of its memory.high throttling of the thread: a region whose
	 * history cannot be had is read, and primed, until one can.
	 */
	gfp_t gfp = GFP_NOWAIT | __GFP_ACCOUNT | __GFP_NOWARN;
	struct mem_cgroup *memcg, *old_memcg;
	void *p = xa_load(xa, index);

	if (p)
		return p;
	memcg = get_mem_cgroup_from_mm(mm);
	old_memcg = set_active_memcg(memcg);
	p = kzalloc(size, gfp);
	if (p && xa_is_err(xa_store(xa, index, p, gfp))) {
		kfree(p);
		p = NULL;
	}
	set_active_memcg(old_memcg);
	mem_cgroup_put(memcg);
	return p;
}

/*
 * The history of the region @index, allocating its chunk on first use.
 * NULL if that fails: the region is then read, and primed, on every visit
 * until a chunk can be had.
 */
static u32 *kmmscand_hist_lookup(struct kmmscand_mm_slot *ms,
				 unsigned long index)
{
	struct kmmscand_hist_chunk *chunk;

	/* The fields of a history are disjoint and fit in its 32 bits */
	BUILD_BUG_ON((KMMSCAND_HIST_AGE |
		      KMMSCAND_HIST_SKIPS |
		      KMMSCAND_HIST_PRIMED |
		      KMMSCAND_HIST_NO_SLOW |
		      KMMSCAND_HIST_PMD_NOISY |
		      KMMSCAND_HIST_PMD_OLD) > U32_MAX);
	BUILD_BUG_ON(hweight32(KMMSCAND_HIST_AGE |
			       KMMSCAND_HIST_SKIPS |
			       KMMSCAND_HIST_PRIMED |
			       KMMSCAND_HIST_NO_SLOW |
			       KMMSCAND_HIST_PMD_NOISY |
			       KMMSCAND_HIST_PMD_OLD) !=
		     hweight32(KMMSCAND_HIST_AGE) +
		     hweight32(KMMSCAND_HIST_SKIPS) +
		     hweight32(KMMSCAND_HIST_PRIMED) +
		     hweight32(KMMSCAND_HIST_NO_SLOW) +
		     hweight32(KMMSCAND_HIST_PMD_NOISY) +
		     hweight32(KMMSCAND_HIST_PMD_OLD));
	/* They hold the largest values the schedule needs */
	BUILD_BUG_ON(FIELD_MAX(KMMSCAND_HIST_SKIPS) <
		     KMMSCAND_SMART_SCAN_SKIPS_LIMIT);
	BUILD_BUG_ON(FIELD_MAX(KMMSCAND_HIST_PMD_OLD) <
		     KMMSCAND_PMD_OLD_MAX_SKIPS);
	BUILD_BUG_ON(sizeof(*chunk) !=
		     KMMSCAND_HIST_CHUNK_REGIONS * sizeof(u32));

	chunk = kmmscand_xa_get(ms->slot.mm, &ms->history,
				index / KMMSCAND_HIST_CHUNK_REGIONS,
				sizeof(*chunk));
	if (!chunk)
		return NULL;
	return &chunk->region[index % KMMSCAND_HIST_CHUNK_REGIONS];
}

/* The visit of the region the cursor is in ends: record what it found */
static void kmmscand_leave_region(struct kmmscand_region *r)
{
	if (r->hist && r->visit != KMMSCAND_VISIT_SKIP) {
		kmmscand_region_done(r->hist, r->visit, r->slow, r->accessed);
		kmmscand_pmd_read_done(r->hist, r->visit, r->pmd_young,
				       r->slow, r->accessed);
	}
	r->index = KMMSCAND_NO_REGION;
	r->hist = NULL;
	r->heat = NULL;
}

/*
 * Nothing is mapped in [@start, @end) any more: forget the regions that
 * lie wholly inside it and free what is kept for them, so that the
 * history of an mm follows what it maps now, and memory mapped there
 * later is primed like memory never seen.
 */
static void kmmscand_forget_unmapped(struct kmmscand_mm_slot *ms,
				     unsigned long start, unsigned long end)
{
	unsigned long first = DIV_ROUND_UP(start, PMD_SIZE);
	unsigned long last = end >> PMD_SHIFT;	/* one past the last */
	struct kmmscand_hist_chunk *chunk;
	struct kmmscand_heat *heat;
	unsigned long index, lo, hi;

	if (first >= last)
		return;
	/* The chunk of the region left open may be freed below */
	kmmscand_leave_region(&ms->region);
	xa_for_each_range(&ms->heat, index, heat, first, last - 1) {
		xa_erase(&ms->heat, index);
		kfree(heat);
	}
	xa_for_each_range(&ms->history, index, chunk,
			  first / KMMSCAND_HIST_CHUNK_REGIONS,
			  (last - 1) / KMMSCAND_HIST_CHUNK_REGIONS) {
		lo = max(first, index * KMMSCAND_HIST_CHUNK_REGIONS);
		hi = min(last, (index + 1) * KMMSCAND_HIST_CHUNK_REGIONS);
		memset(&chunk->region[lo % KMMSCAND_HIST_CHUNK_REGIONS], 0,
		       (hi - lo) * sizeof(chunk->region[0]));
		if (memchr_inv(chunk, 0, sizeof(*chunk)))
			continue;
		xa_erase(&ms->history, index);
		kfree(chunk);
	}
}

/*
 * Decide what the visit of the region that @pmd maps does: read it, prime
 * it or pass over it, from its history and the Accessed bit of @pmd.
 */
static void kmmscand_enter_region(struct kmmscand_walk_ctl *ctl,
				  struct kmmscand_region *r,
				  unsigned long index, pmd_t *pmd)
{
	/*
	 * A lockless read is enough: the bit is a hint, and the entry is
	 * checked again under the lock where the bit is cleared, in
	 * kmmscand_scan_pte_table().
	 */
	pmd_t pmdval = pmdp_get_lockless(pmd);

	r->index = index;
	r->slow = false;
	r->accessed = false;
	r->pmd_bit = ctl->pmd_young && pmd_present(pmdval) && !pmd_leaf(pmdval);
	r->pmd_young = r->pmd_bit && pmd_young(pmdval);
	r->hist = kmmscand_hist_lookup(ctl->ms, index);
	if (!r->hist)
		r->visit = KMMSCAND_VISIT_PRIME;
	else
		r->visit = kmmscand_region_visit(r->hist, ctl->smart,
						 ctl->max_skips);
	if (r->visit == KMMSCAND_VISIT_SKIP &&
	    kmmscand_pmd_recalls(*r->hist, r->pmd_young))
		r->visit = kmmscand_read_visit(*r->hist);

	if (r->visit == KMMSCAND_VISIT_SKIP) {
		r->reason = *r->hist & KMMSCAND_HIST_NO_SLOW ?
			    KMMSCAND_SKIP_NO_SLOW_TIER : KMMSCAND_SKIP_COLD;
		count_vm_event(KMMSCAND_REGION_SKIPPED);
	} else if (r->pmd_bit && r->hist &&
		   !kmmscand_pmd_visit(r->hist, r->pmd_young,
				       ctl->pmd_bounded)) {
		r->visit = KMMSCAND_VISIT_SKIP;
		r->reason = KMMSCAND_SKIP_PMD_OLD;
		count_vm_event(KMMSCAND_PMD_SKIPPED);
	}
	/* A table that is read has the bit of its PMD entry cleared after */
	r->clear_pmd = r->pmd_bit && r->visit != KMMSCAND_VISIT_SKIP;
	if (r->visit == KMMSCAND_VISIT_SCAN)
		/* NULL if that fails: all accessed entries are hot then */
		r->heat = kmmscand_xa_get(ctl->mm, &ctl->ms->heat, index,
					  sizeof(*r->heat));
}

/*
 * Whether the walk passes over [@addr, @end), which lies in one region.
 * The first part of a region that a visit reaches decides for the rest.
 */
static bool kmmscand_region_skipped(struct kmmscand_walk_ctl *ctl,
				    pmd_t *pmd, unsigned long addr,
				    unsigned long end)
{
	struct kmmscand_region *r = &ctl->ms->region;
	unsigned long index = addr >> PMD_SHIFT;

	if (r->index != index) {
		kmmscand_leave_region(r);
		kmmscand_enter_region(ctl, r, index, pmd);
	}
	if (r->visit != KMMSCAND_VISIT_SKIP)
		return false;

	ctl->skipped += end - addr;
	ctl->skips++;
	trace_kmmscand_skip_region(ctl->mm, addr, end, r->reason);
	return true;
}

static bool kmmscand_should_yield(struct kmmscand_walk_ctl *ctl)
{
	if (kmmscand_should_stop()) {
		ctl->yield_reason = KMMSCAND_SKIP_STOPPING;
		return true;
	}
	if (mmap_lock_is_contended(ctl->mm)) {
		ctl->yield_reason = KMMSCAND_SKIP_LOCK_CONTENDED;
		return true;
	}
	return false;
}

static int kmmscand_pmd_entry(pmd_t *pmd, unsigned long addr,
			      unsigned long end, struct mm_walk *walk)
{
	struct kmmscand_walk_ctl *ctl = walk->private;
	int ret = 0;

	if (kmmscand_vma_shared_policy(walk->vma)) {
		/* A policy range that ends inside the region leaves it read */
		if (!kmmscand_policy_allows(walk->vma, addr, ctl->task_mof) &&
		    !kmmscand_policy_allows(walk->vma, end - PAGE_SIZE,
					    ctl->task_mof)) {
			ctl->skipped += end - addr;
			ctl->skips++;
			trace_kmmscand_skip_region(ctl->mm, addr, end,
						   KMMSCAND_SKIP_MEMPOLICY);
			goto next;
		}
		ctl->policy_open = true;
	}
	if (kmmscand_region_skipped(ctl, pmd, addr, end))
		goto next;
	if (!kmmscand_scan_huge_pmd(pmd, addr, walk, &ret))
		ret = kmmscand_scan_pte_table(pmd, addr, end, walk);
	if (ret)
		return ret;
next:
	cond_resched();
	if (kmmscand_should_yield(ctl)) {
		ctl->next_addr = end;
		return KMMSCAND_WALK_YIELD;
	}
	return 0;
}

/**
 * kmmscand_vma_skip - decide whether a VMA is left out of the scan
 * @vma: the VMA
 * @task_mof: whether the owner's task policy lets memory move
 * @reason: set to why, when the VMA is skipped
 *
 * The first four checks follow task_numa_work(): what cannot migrate, or
 * has no normal folios, or has nothing accessible.  Then:
 *
 * - mlocked VMAs are skipped.  mlock() promises residency, not placement,
 *   but its users (latency sensitive ones above all) also expect no minor
 *   faults on migration entries, and compaction honours that on request.
 * - read-only file mappings (library text, mostly) are skipped: they are
 *   shared by many processes and best left where page cache put them.
 * - a memory policy that does not let NUMA balancing move memory does not
 *   let kmmscand move it either (kmmscand_mpol_allows()), so that memory
 *   bound to a slow node with MPOL_BIND stays there.  Where the policy can
 *   differ along the VMA (kmmscand_vma_shared_policy()), it is checked per
 *   candidate instead.
 *
 * Writable file mappings and shared anonymous memory are scanned;
 * migrate_misplaced_folio_prepare() refuses what is unsafe to move (dirty
 * file folios, shared executable ones).  KSM folios are passed over one by
 * one, see kmmscand_folio_wanted().
 *
 * Return: true if the VMA is to be skipped.
 */
static bool kmmscand_vma_skip(struct vm_area_struct *vma, bool task_mof,
			      enum kmmscand_skip_reason *reason)
{
	if (is_vm_hugetlb_page(vma))
		*reason = KMMSCAND_SKIP_HUGETLB;
	else if (vma->vm_flags & (VM_PFNMAP | VM_MIXEDMAP | VM_IO))
		*reason = KMMSCAND_SKIP_PFNMAP;
	else if (!vma_migratable(vma))
		*reason = KMMSCAND_SKIP_UNMIGRATABLE;
	else if (!vma_is_accessible(vma))
		*reason = KMMSCAND_SKIP_INACCESSIBLE;
	else if (vma->vm_flags & VM_LOCKED)
		*reason = KMMSCAND_SKIP_MLOCKED;
	else if (vma->vm_file &&
		 (vma->vm_flags & (VM_READ | VM_WRITE)) == VM_READ)
		*reason = KMMSCAND_SKIP_SHARED_RO;
	else if (!kmmscand_vma_shared_policy(vma) &&
		 !kmmscand_policy_allows(vma, vma->vm_start, task_mof))
		*reason = KMMSCAND_SKIP_MEMPOLICY;
	else
		return false;
	return true;
}

static int kmmscand_test_walk(unsigned long start, unsigned long end,
			      struct mm_walk *walk)
{
	struct kmmscand_walk_ctl *ctl = walk->private;
	enum kmmscand_skip_reason reason;

	if (!kmmscand_vma_skip(walk->vma, ctl->task_mof, &reason))
		return 0;

	ctl->vma_skipped = true;
	trace_kmmscand_skip_vma(walk->mm, walk->vma->vm_start,
				walk->vma->vm_end, reason);
	return 1;
}

static const struct mm_walk_ops kmmscand_walk_ops = {
	.pmd_entry = kmmscand_pmd_entry,
	.test_walk = kmmscand_test_walk,
	.walk_lock = PGWALK_RDLOCK,
};

/* Scanning one mm */

static void kmmscand_begin_scan(struct kmmscand_mm_slot *ms)
{
	struct kmmscand_tuning t;

	kmmscand_read_tuning(&t);
	ms->state.size_mb = kmmscand_clamp(ms->state.size_mb, &t.size_mb);
	ms->scan_left = ms->state.size_mb * SZ_1M;
	ms->scanned = 0;
	ms->accessed = 0;
	ms->primed = 0;
	ms->found = 0;
	ms->isolated = 0;
	ms->eligible = false;
	ms->shared_policy = false;
	ms->begun = true;
	trace_kmmscand_scan_start(ms->slot.mm, ms->address, ms->state.period_ms,
				  ms->state.size_mb);
}

/*
 * A scan that could walk no VMA, all of them under a memory policy that
 * kmmscand leaves alone or otherwise not migratable, learnt nothing about
 * how hot the mm is: it does not adapt the period, and the next scan comes
 * after the shortest one.  A process that binds its task policy to a node
 * while it places its memory, then lets it go, has that memory scanned
 * soon after, not a lengthened period later.  One that stays bound, and
 * has not changed, is passed over at no cost, see kmmscand_mm_unchanged().
 */
static void kmmscand_end_scan(struct kmmscand_mm_slot *ms)
{
	struct kmmscand_scan_state old = ms->state;
	struct kmmscand_tuning t;
	unsigned long wait_ms;
	bool most;

	kmmscand_read_tuning(&t);
	if (ms->eligible) {
		most = kmmscand_isolated_most(ms->found, ms->isolated);
		kmmscand_update_scan_state(&ms->state, ms->accessed, ms->primed,
					   most, &t);
		wait_ms = ms->state.period_ms;
	} else {
		wait_ms = t.period_ms.min;
	}
	ms->next_scan = jiffies + msecs_to_jiffies(wait_ms);
	ms->scan_left = 0;

	count_vm_event(KMMSCAND_MM_SCANS);
	ms->stats.scans++;
	trace_kmmscand_scan_end(ms->slot.mm, ms->address, ms->scanned,
				ms->accessed, ms->primed, old.prev_accessed,
				ms->state.prev_accessed, old.period_ms,
				ms->state.period_ms, old.size_mb,
				ms->state.size_mb, ms->found, ms->isolated);
}

/*
 * Walk VMAs from the cursor on until the budget of the scan or of the step is
 * spent or the address space ends.  Skipped VMAs cost the scan no budget; each,
 * and each region passed over, costs the step one page.  Return true when the
 * scan is complete, false when it was put off.
 */
static bool kmmscand_walk_mm(struct kmmscand_mm_slot *ms,
			     struct kmmscand_walk_ctl *ctl)
{
	struct mm_struct *mm = ms->slot.mm;
	struct vm_area_struct *vma;
	unsigned long start, end, walked;
	int ret;

	while (ms->scan_left) {
		if (!ctl->step_left)
			return false;
		vma = find_vma(mm, ms->address);
		kmmscand_forget_unmapped(ms, ms->address,
					 vma ? vma->vm_start : ULONG_MAX);
		if (!vma) {
			kmmscand_leave_region(&ms->region);
			ms->address = 0;
			return true;
		}

		start = max(ms->address, vma->vm_start);
		end = start + min3(vma->vm_end - start, ms->scan_left,
				   ctl->step_left);
		ctl->vma_skipped = false;
		ctl->policy_open = !kmmscand_vma_shared_policy(vma) ||
				   kmmscand_policy_allows(vma, vma->vm_start,
							  ctl->task_mof);
		if (kmmscand_vma_shared_policy(vma))
			ms->shared_policy = true;
		ctl->next_addr = end;
		ctl->skipped = 0;
		ctl->skips = 0;
		ret = walk_page_range(mm, start, end, &kmmscand_walk_ops, ctl);
		if (ctl->vma_skipped) {
			ctl->step_left -= min(PAGE_SIZE, ctl->step_left);
			ms->address = vma->vm_end;
			cond_resched();
			continue;
		}
		/* Only memory that may move says how hot the mm is */
		if (ctl->policy_open)
			ms->eligible = true;

		/* What was passed over costs no budget of the scan */
		walked = ctl->next_addr - start - ctl->skipped;
		ms->scan_left -= walked;
		walked += ctl->skips << PAGE_SHIFT;
		ctl->step_left -= min(walked, ctl->step_left);
		ms->address = ctl->next_addr;
		if (ret == KMMSCAND_WALK_FULL) {
			kmmscand_isolate_batch(ctl);
			ctl->filled = !ctl->stopped;
			if (ctl->stopped)
				trace_kmmscand_skip_range(mm, ms->address,
							  ms->address + ms->scan_left,
							  ctl->stop_reason);
			return false;
		}
		if (ret == KMMSCAND_WALK_YIELD) {
			kmmscand_release_batch(ctl, 0, KMMSCAND_PROMOTE_DROPPED,
					       NUMA_NO_NODE);
			trace_kmmscand_skip_range(mm, ms->address,
						  ms->address + ms->scan_left,
						  ctl->yield_reason);
			return false;
		}
		count_vm_event(KMMSCAND_VMA_SCANS);
	}
	return true;
}

/* Flush the per-CPU LRU batches, see KMMSCAND_LRU_DRAIN_MS */
static void kmmscand_drain_lru(void)
{
	static unsigned long next_drain = INITIAL_JIFFIES;

	if (time_before(jiffies, next_drain))
		return;
	lru_add_drain_all();
	next_drain = jiffies + msecs_to_jiffies(KMMSCAND_LRU_DRAIN_MS);
}

static void kmmscand_init_ctl(struct kmmscand_walk_ctl *ctl,
			      struct kmmscand_mm_slot *ms)
{
	ctl->mm = ms->slot.mm;
	ctl->ms = ms;
	ctl->smart = READ_ONCE(kmmscand_smart_scan);
	ctl->max_skips = READ_ONCE(kmmscand_smart_scan_max_skips);
	ctl->pmd_young = READ_ONCE(kmmscand_pmd_young) &&
			 kmmscand_pmd_young_usable() && !mm_has_notifiers(ctl->mm);
	ctl->pmd_bounded = lru_gen_clears_pmd_young();
	ctl->batch = &kmmscand_batch;
	ctl->scanned = 0;
	ctl->accessed = 0;
	ctl->primed = 0;
	ctl->flush_tlb = false;
	ctl->off_lru = false;
	ctl->no_room = 0;
	ctl->isolated = 0;
	ctl->threshold = 1;
	ctl->not_hot = 0;
	ctl->max_heat = 0;
	ctl->stopped = false;
	kmmscand_batch_reset(ctl);
	INIT_LIST_HEAD(&ctl->moving);
	ctl->moving_end = 0;
	ctl->nr_jobs = 0;
	kmmscand_slow_nodes(&ctl->slow);
	kmmscand_owner_context(ctl);
}

/*
 * Whether the threads of the owner of @ms ran since the last call: their
 * runtime, exited threads' included, moved.  Without an owner to ask, the
 * mm counts as used: that errs on the side of scanning.
 */
static bool kmmscand_owner_ran(struct kmmscand_mm_slot *ms)
{
	struct task_struct *owner = kmmscand_get_owner(ms);
	struct task_cputime times;
	bool ran;

	if (!owner)
		return true;
	thread_group_cputime(owner, &times);
	put_task_struct(owner);
	ran = times.sum_exec_runtime != ms->runtime;
	ms->runtime = times.sum_exec_runtime;
	return ran;
}

/*
 * Whether a task of the mm of @ms ran since the last call.  The scheduler
 * hint is set when a CPU switches to the mm, but a task that keeps its CPU
 * (a busy process on an otherwise quiet CPU) is never switched to again;
 * its runtime grows at every tick, though, on every architecture, where
 * mm_cpumask(), which would say that the mm is loaded, is not maintained
 * by all.  Both are consumed at every call, so that each is current.
 */
static bool kmmscand_mm_used(struct kmmscand_mm_slot *ms)
{
	bool hinted = mm_usage_test_and_clear(ms->slot.mm, MM_USAGE_KMMSCAND);

	return kmmscand_owner_ran(ms) || hinted;
}

/*
 * Pass over a new scan of an mm none of whose tasks ran since the last
 * one began, see "kmmscand and idle mms".  The hint is consumed even with
 * skip_idle_mm off, so that it is current when the knob is turned on.
 * Return whether the scan was passed over.
 */
static bool kmmscand_skip_idle(struct kmmscand_mm_slot *ms)
{
	struct mm_struct *mm = ms->slot.mm;
	struct kmmscand_tuning t;

	if (ms->scan_left || kmmscand_mm_used(ms) ||
	    !READ_ONCE(kmmscand_skip_idle_mm))
		return false;

	kmmscand_read_tuning(&t);
	/* The mm stopped: its activity vanished, whatever was promoted */
	ms->state.prev_isolated_most = false;
	kmmscand_update_scan_state(&ms->state, 0, 0, false, &t);
	ms->next_scan = jiffies + msecs_to_jiffies(ms->state.period_ms);
	ms->begun = true;
	count_vm_event(KMMSCAND_MM_IDLE_SKIPPED);
	trace_kmmscand_skip_mm(mm, ms->address,
			       ms->address + ms->state.size_mb * SZ_1M,
			       KMMSCAND_SKIP_MM_IDLE);
	return true;
}

/**
 * DOC: Choosing what kmmscand serves
 *
 * A process chooses with prctl(PR_SET_KMMSCAND): PR_KMMSCAND_OFF, never
 * scanned; PR_KMMSCAND_ON, scanned even where the scan_by_default knob is
 * 0; PR_KMMSCAND_DEFAULT (as every process starts), scanned as that knob
 * says.  The mode is a property of the address space, in two bits of
 * mm->flags within MMF_INIT_MASK: fork() copies it and exec() keeps it, as
 * for PR_SET_THP_DISABLE, so a launcher sets it for the workload it starts.
 * No privilege is needed: a process that opts in only asks for what it
 * gets by default on most machines.
 *
 * The memory controller's memory.kmmscand file, 1 by default, lets an
 * administrator turn scanning off for the processes of a cgroup without
 * touching them: with 0 in a cgroup or any of its ancestors, kmmscand
 * scans none of them, whatever their prctl mode.  It is looked up at each
 * scan, in the cgroup of the mm's owner, so that a process that moves
 * follows its new cgroup.
 *
 * An mm that is not served stays tracked, so that a change takes effect
 * without waiting for an exec(), and costs a look at its flags every
 * longest scan period; that is also how soon a change is seen.
 */

/* The prctl mode of @mm, PR_KMMSCAND_* */
static unsigned int kmmscand_mm_mode(struct mm_struct *mm)
{
	unsigned long flags = READ_ONCE(mm->flags);

	if (flags & BIT(MMF_KMMSCAND_OFF))
		return PR_KMMSCAND_OFF;
	if (flags & BIT(MMF_KMMSCAND_ON))
		return PR_KMMSCAND_ON;
	return PR_KMMSCAND_DEFAULT;
}

/* Whether an mm in prctl @mode is scanned, with scan_by_default @by_default */
static bool kmmscand_mode_serves(unsigned int mode, bool by_default)
{
	return mode == PR_KMMSCAND_ON ||
	       (mode == PR_KMMSCAND_DEFAULT && by_default);
}

/*
 * Whether kmmscand may scan @mm; if not, set @reason to why.  The memory
 * cgroup says first: what its administrator turned off, no process of it
 * can turn on.
 */
static bool kmmscand_serves(struct mm_struct *mm,
			    enum kmmscand_skip_reason *reason)
{
	if (!mem_cgroup_kmmscand_allowed(mm)) {
		*reason = KMMSCAND_SKIP_MM_CGROUP_OFF;
		return false;
	}
	if (!kmmscand_mode_serves(kmmscand_mm_mode(mm),
				  READ_ONCE(kmmscand_scan_by_default))) {
		*reason = KMMSCAND_SKIP_MM_OPTED_OUT;
		return false;
	}
	return true;
}

/**
 * kmmscand_prctl_set - set how kmmscand treats an mm, for PR_SET_KMMSCAND
 * @mm: the mm of the calling process
 * @mode: PR_KMMSCAND_DEFAULT, PR_KMMSCAND_OFF or PR_KMMSCAND_ON
 *
 * Return: 0, or -EINVAL for any other @mode.
 */
int kmmscand_prctl_set(struct mm_struct *mm, unsigned long mode)
{
	unsigned long old, new, bits;

	switch (mode) {
	case PR_KMMSCAND_DEFAULT:
		bits = 0;
		break;
	case PR_KMMSCAND_OFF:
		bits = BIT(MMF_KMMSCAND_OFF);
		break;
	case PR_KMMSCAND_ON:
		bits = BIT(MMF_KMMSCAND_ON);
		break;
	default:
		return -EINVAL;
	}

	/* Others change other bits with atomic bit operations */
	old = READ_ONCE(mm->flags);
	do {
		new = (old & ~MMF_KMMSCAND_MASK) | bits;
	} while (!try_cmpxchg(&mm->flags, &old, new));
	return 0;
}

/**
 * kmmscand_prctl_get - how kmmscand treats an mm, for PR_GET_KMMSCAND
 * @mm: the mm of the calling process
 *
 * Return: its mode, PR_KMMSCAND_*.
 */
int kmmscand_prctl_get(struct mm_struct *mm)
{
	return kmmscand_mm_mode(mm);
}

/**
 * kmmscand_flush_tlb - make the Accessed bits cleared by a scan step count
 * @ctl: the scan step, with the mmap_lock of its mm held for read
 *
 * A CPU that finds a translation in its TLB uses it without a page walk,
 * and sets no Accessed bit, in the PTE or in the PMD entry above it.
 * Reclaim and MGLRU clear the bits without a flush: there a translation
 * that stays cached makes a page look colder than it is, and the page was
 * used too recently to be a likely victim before the TLB turns over.  For
 * promotion the error falls on the wrong pages: the translations that
 * stay cached are those of the most used pages, and a hot set that fits
 * the TLBs of the CPUs that run it (thousands of entries a CPU, kept
 * across context switches with PCIDs) would look idle after its first
 * clear for as long as its threads keep their CPUs, and stay on the slow
 * tier.  So a scan step that cleared any bit ends with one flush of the
 * mm's TLB entries: one round of IPIs, to the CPUs that run the mm, per
 * step, where NUMA balancing flushes after every range it makes
 * inaccessible and then takes a fault per page.
 */
static void kmmscand_flush_tlb(struct kmmscand_walk_ctl *ctl)
{
	if (ctl->flush_tlb)
		flush_tlb_mm(ctl->mm);
}

/*
 * The mm_lock_seq of @mm, which every mmap write lock and unlock changes,
 * so every change of its VMAs or of their policies; to be read with the
 * mmap_lock held.  Without per-VMA locks there is none: zero.
 */
static unsigned int kmmscand_vma_seq(struct mm_struct *mm)
{
#ifdef CONFIG_PER_VMA_LOCK
	return raw_read_seqcount(&mm->mm_lock_seq);
#else
	return 0;
#endif
}

/*
 * Whether the scan of @ms that is due would find what the last one found:
 * no VMA it may walk.  That takes the last scan to have covered the mm in
 * one step under the mmap_lock, none of the VMAs it saw to have a shared
 * policy (which other mms may change), and since then no change to the
 * VMAs (mm_lock_seq, so only with per-VMA locks) and none to whether the
 * owner's task policy lets memory move (@task_mof).  Such an mm, bound to
 * a node by its task policy for instance, then costs a look at its owner
 * and at two values per shortest period instead of a walk of its VMA tree
 * under its mmap_lock.
 */
static bool kmmscand_mm_unchanged(struct kmmscand_mm_slot *ms, bool task_mof)
{
	return IS_ENABLED(CONFIG_PER_VMA_LOCK) && ms->parked &&
	       !ms->scan_left && ms->parked_mof == task_mof &&
	       kmmscand_vma_seq(ms->slot.mm) == ms->parked_seq;
}

/*
 * Scan @ms for a step of at most @pages pages of address space.  Return
 * the pages that the step used.
 */
static unsigned long kmmscand_scan_mm(struct kmmscand_mm_slot *ms,
				      unsigned long pages)
{
	struct kmmscand_walk_ctl *ctl = &kmmscand_ctl;
	struct mm_struct *mm = ms->slot.mm;
	enum kmmscand_skip_reason reason;
	struct kmmscand_tuning t;
	unsigned int seq;
	bool done, whole;

	if (!kmmscand_serves(mm, &reason)) {
		kmmscand_read_tuning(&t);
		ms->next_scan = jiffies + msecs_to_jiffies(t.period_ms.max);
		trace_kmmscand_skip_mm(mm, ms->address,
				       ms->address + ms->state.size_mb * SZ_1M,
				       reason);
		return 0;
	}
	if (kmmscand_skip_idle(ms))
		return 0;
	/* From here on the mm cannot go through exit_mmap() under us */
	if (!mmget_not_zero(mm))
		return 0;

	kmmscand_init_ctl(ctl, ms);
	ctl->step_left = pages << PAGE_SHIFT;
	if (kmmscand_mm_unchanged(ms, ctl->task_mof)) {
		kmmscand_read_tuning(&t);
		ms->next_scan = jiffies + msecs_to_jiffies(t.period_ms.min);
		count_vm_event(KMMSCAND_MM_UNCHANGED);
		goto out;
	}
	if (kmmscand_targets_closed(ctl)) {
		ms->next_scan = ctl->resume_at;
		trace_kmmscand_skip_range(mm, ms->address,
					  ms->address + ms->scan_left,
					  ctl->stop_reason);
		goto out;
	}
	if (!mmap_read_trylock(mm)) {
		trace_kmmscand_skip_range(mm, ms->address,
					  ms->address + ms->scan_left,
					  KMMSCAND_SKIP_LOCK_BUSY);
		goto out;
	}

	if (!ms->scan_left)
		kmmscand_begin_scan(ms);
	/* A step from the start that completes the scan walked every VMA */
	whole = !ms->address;
	for (;;) {
		ctl->filled = false;
		done = kmmscand_walk_mm(ms, ctl);
		kmmscand_isolate_batch(ctl);
		seq = kmmscand_vma_seq(mm);
		mmap_read_unlock(mm);
		kmmscand_migrate_batch(ctl);
		/* A full batch stopped the walk: go on with the step */
		if (!ctl->filled || !ctl->step_left || kmmscand_should_stop())
			break;
		cond_resched();
		if (!mmap_read_trylock(mm)) {
			trace_kmmscand_skip_range(mm, ms->address,
						  ms->address + ms->scan_left,
						  KMMSCAND_SKIP_LOCK_BUSY);
			break;
		}
	}
	kmmscand_flush_tlb(ctl);

	ms->scanned += ctl->scanned;
	/* What no node had room for is no reason to scan sooner */
	ms->accessed += ctl->accessed - min(ctl->accessed, ctl->no_room);
	ms->primed += ctl->primed;
	ms->found += ctl->accessed;
	ms->isolated += ctl->isolated;
	count_vm_events(KMMSCAND_PTE_SCANNED, ctl->scanned);
	count_vm_events(KMMSCAND_SLOWTIER_ACCESSED, ctl->accessed);
	ms->stats.pte_scanned += ctl->scanned;
	ms->stats.accessed += ctl->accessed;
	count_vm_events(KMMSCAND_NOT_HOT, ctl->not_hot);
	if (done) {
		kmmscand_end_scan(ms);
		ms->parked = whole && !ms->eligible && !ms->shared_policy;
		ms->parked_seq = seq;
		ms->parked_mof = ctl->task_mof;
	} else if (ctl->stopped) {
		ms->next_scan = ctl->resume_at;
	} else if (!ctl->step_left) {
		ms->next_scan = jiffies;
	}
	if (ctl->off_lru)
		kmmscand_drain_lru();
out:
	/* Leave the teardown of an mm that exited meanwhile to a worker */
	mmput_async(mm);
	return pages - (ctl->step_left >> PAGE_SHIFT);
}

/**
 * DOC: kmmscand without a slow tier
 *
 * On a machine with no memory node below the top tier there is nothing to
 * promote, and kmmscand costs nothing: the kmmscand_tiered static key is
 * off, so exec() and fork() track no mm (no allocation, no global lock)
 * and the thread sleeps until memory is onlined or offlined.  When a node
 * that is not top tier gets memory (a CXL memory device onlined through
 * dax/kmem, a hot-added DIMM in a lower tier), a memory hotplug notifier
 * wakes the thread, which turns the key on and takes up every process
 * that has an address space, as exec() would have (kmmscand_adopt_all());
 * processes that exec() or fork() meanwhile are tracked once.  When the
 * last such node goes, the key is turned off: the mms tracked stay so
 * until they exit, and are not scanned, since there is nothing to promote
 * from.
 */

/* Whether processes are still to be taken up, see kmmscand_follow_tiers() */
static bool kmmscand_adopt_pending;

/*
 * Take up the process @task as exec() would have; the mm of a process
 * whose main thread exited is found through another of its threads.
 * Return true if its mm was not tracked yet.
 */
static bool kmmscand_adopt(struct task_struct *task)
{
	struct mm_struct *mm = NULL;
	struct task_struct *t;
	bool new;

	/* get_task_mm() passes over kernel threads */
	rcu_read_lock();
	for_each_thread(task, t) {
		mm = get_task_mm(t);
		if (mm)
			break;
	}
	rcu_read_unlock();
	if (!mm)
		return false;
	new = !test_bit(MMF_VM_KMMSCAND, &mm->flags);
	if (new)
		__kmmscand_enter(mm, task);
	mmput_async(mm);
	return new;
}

/*
 * Take up every process, walking the pids as /proc does.  One not taken
 * up yet may fork a child whose pid the walk has passed, which nobody
 * would track: walk again until a walk takes up nothing.  Return false if
 * the thread has to stop first.
 */
static bool kmmscand_adopt_all(void)
{
	struct task_struct *task;
	unsigned long found;
	struct pid *pid;
	int nr;

	do {
		found = 0;
		for (nr = 1; ; nr++) {
			if (kmmscand_should_stop())
				return false;
			rcu_read_lock();
			pid = find_ge_pid(nr, &init_pid_ns);
			if (!pid) {
				rcu_read_unlock();
				break;
			}
			nr = pid_nr(pid);
			task = pid_task(pid, PIDTYPE_TGID);
			if (task)
				get_task_struct(task);
			rcu_read_unlock();
			if (!task)
				continue;
			found += kmmscand_adopt(task);
			put_task_struct(task);
			cond_resched();
		}
	} while (found);
	return true;
}

/*
 * Turn tracking on when a slow tier appears, and take up the processes
 * then; a walk cut short (the thread stopped or froze) is done again
 * next time.  Turn it off when the last slow tier goes.
 */
static void kmmscand_follow_tiers(bool tiered)
{
	if (tiered != static_key_enabled(&kmmscand_tiered)) {
		if (tiered)
			static_branch_enable(&kmmscand_tiered);
		else
			static_branch_disable(&kmmscand_tiered);
		kmmscand_adopt_pending = tiered;
	}
	if (kmmscand_adopt_pending)
		kmmscand_adopt_pending = !kmmscand_adopt_all();
}

/* The thread */

static void kmmscand_do_pass(void)
{
	unsigned long pages = READ_ONCE(kmmscand_pages_to_scan);
	unsigned long start = jiffies, nr_due, share;
	struct kmmscand_mm_stats was;
	struct kmmscand_mm_slot *ms;
	u64 runtime;

	spin_lock(&kmmscand_mm_lock);
	nr_due = kmmscand_count_due(&kmmscand_scan.due, start,
				    READ_ONCE(kmmscand_mms_to_scan));
	spin_unlock(&kmmscand_mm_lock);

	for (; nr_due && pages && !kmmscand_should_stop(); nr_due--) {
		kmmscand_settle_copies(false, NULL);
		ms = kmmscand_take_due(start);
		if (!ms)
			break;
		/* What an mm leaves of its share goes to those after it */
		share = kmmscand_step_share(pages, nr_due);
		was = ms->stats;
		runtime = task_sched_runtime(current);
		pages -= kmmscand_scan_mm(ms, min(share, pages));
		ms->stats.cpu_ns += task_sched_runtime(current) - runtime;
		kmmscand_count_visit(ms, &was);
		/*
		 * Put off, its mmap_lock busy or its share spent: due again
		 * after this pass, behind the slots due before, so that the
		 * pass visits each slot that was due when it began once.
		 */
		if (!time_after(ms->next_scan, start))
			ms->next_scan = start + 1;
		kmmscand_put_back(ms);
		cond_resched();
	}
	/* No job outlives the pass: the thread may stop or sleep for long */
	kmmscand_settle_copies(true, NULL);
}

/*
 * A knob changed since the last pass: a wait that the new values make
 * shorter ends no later than they say, from now.  Before the first scan of
 * an mm that is scan_delay_ms, after it the longest scan period.  A wait
 * for a node to take promotions again may be cut short too, and is then
 * taken up again by kmmscand_targets_closed().  Only the slots due after
 * the earlier of the two bounds can change: they are the last in the
 * queue, and are looked at from its end and queued again if cut short.
 */
static void kmmscand_recheck_waits(void)
{
	static unsigned int checked_gen;
	unsigned int gen = READ_ONCE(kmmscand_knob_gen);
	unsigned long now = jiffies, delay, period, bound, lowest;
	struct rb_node *node, *prev;
	struct kmmscand_mm_slot *ms;
	struct kmmscand_tuning t;

	if (likely(gen == checked_gen))
		return;
	checked_gen = gen;
	kmmscand_read_tuning(&t);
	delay = now + msecs_to_jiffies(READ_ONCE(kmmscand_scan_delay_ms));
	period = now + msecs_to_jiffies(t.period_ms.max);
	lowest = time_before(delay, period) ? delay : period;

	spin_lock(&kmmscand_mm_lock);
	for (node = rb_last(&kmmscand_scan.due.rb_root); node; node = prev) {
		prev = rb_prev(node);
		ms = rb_entry(node, struct kmmscand_mm_slot, due);
		if (!time_after(ms->next_scan, lowest))
			break;
		bound = ms->begun ? period : delay;
		if (!time_after(ms->next_scan, bound))
			continue;
		kmmscand_unqueue(&kmmscand_scan.due, ms);
		ms->next_scan = bound;
		kmmscand_queue(&kmmscand_scan.due, ms);
	}
	spin_unlock(&kmmscand_mm_lock);
}

/*
 * How long to sleep after a pass: until the first slot is due, and at
 * least scan_sleep_ms.  With nothing to promote from, until memory is
 * onlined or offlined (kmmscand_memory_callback()).  The wake-up time is
 * noted for __kmmscand_enter(), which wakes the thread for a new mm due
 * before it.
 */
static unsigned long kmmscand_sleep_time(bool can_promote)
{
	unsigned long now = jiffies, timeout, first_due;
	struct rb_node *first;

	spin_lock(&kmmscand_mm_lock);
	first = rb_first_cached(&kmmscand_scan.due);
	if (!can_promote || !first) {
		timeout = MAX_SCHEDULE_TIMEOUT;
	} else {
		first_due = rb_entry(first, struct kmmscand_mm_slot,
				     due)->next_scan;
		timeout = time_after(first_due, now) ? first_due - now : 0;
		timeout = max(timeout,
			      msecs_to_jiffies(READ_ONCE(kmmscand_scan_sleep_ms)));
	}
	kmmscand_scan.sleep_until = now + min(timeout, MAX_JIFFY_OFFSET);
	spin_unlock(&kmmscand_mm_lock);
	return timeout;
}

static int kmmscand(void *unused)
{
	unsigned long timeout;

	set_freezable();

	while (!kthread_should_stop()) {
		/* A kick from now on ends the coming sleep at once */
		WRITE_ONCE(kmmscand_kicked, false);
		kmmscand_recheck_waits();
		kmmscand_slow_nodes(&kmmscand_ctl.slow);
		kmmscand_follow_tiers(!nodes_empty(kmmscand_ctl.slow));
		if (!nodes_empty(kmmscand_ctl.slow))
			kmmscand_do_pass();
		timeout = kmmscand_sleep_time(!nodes_empty(kmmscand_ctl.slow));
		wait_event_freezable_timeout(kmmscand_wait,
					     kthread_should_stop() ||
					     READ_ONCE(kmmscand_kicked),
					     timeout);
	}

	WARN_ON_ONCE(kmmscand_batch.nr);
	return 0;
}

/*
 * A knob was written: wake the thread, so that a shorter scan_sleep_ms, or
 * shorter periods or delay, do not wait for the sleep the old ones set.
 * Knob writers hold kmmscand_mutex.
 */
static void kmmscand_kick(void)
{
	lockdep_assert_held(&kmmscand_mutex);
	WRITE_ONCE(kmmscand_knob_gen, kmmscand_knob_gen + 1);
	WRITE_ONCE(kmmscand_kicked, true);
	wake_up_interruptible(&kmmscand_wait);
}

static int kmmscand_start_stop(bool enable)
{
	struct task_struct *thread;

	lockdep_assert_held(&kmmscand_mutex);

	if (!enable) {
		/* The thread sees this and drops what it has queued */
		WRITE_ONCE(kmmscand_scan_enabled, false);
		if (kmmscand_thread) {
			kthread_stop(kmmscand_thread);
			kmmscand_thread = NULL;
		}
		return 0;
	}

	WRITE_ONCE(kmmscand_scan_enabled, true);
	if (kmmscand_thread)
		return 0;
	thread = kthread_create(kmmscand, NULL, "kmmscand");
	if (IS_ERR(thread)) {
		pr_err("cannot start the thread: %pe\n", thread);
		WRITE_ONCE(kmmscand_scan_enabled, false);
		return PTR_ERR(thread);
	}
	set_user_nice(thread, kmmscand_nice);
	wake_up_process(thread);
	kmmscand_thread = thread;
	return 0;
}

/**
 * proc_pid_kmmscand - show /proc/<pid>/kmmscand
 * @m: the seq_file
 * @ns: the pid namespace of the file
 * @pid: the process's pid
 * @task: the process
 *
 * What kmmscand did for the address space of @task since it was tracked,
 * one "name value" line each: the scans and what they found, the pages
 * promoted by the kmmscand thread and by the process's own threads, and
 * the CPU time each spent on it, then the scan period and size it is at,
 * its prctl mode and whether kmmscand serves it now.
 * A snapshot taken under kmmscand_mm_lock, which the thread does not hold
 * while it updates its own figures: each figure is whole, the set may be
 * a scan step apart.
 *
 * Return: 0.
 */
int proc_pid_kmmscand(struct seq_file *m, struct pid_namespace *ns,
		      struct pid *pid, struct task_struct *task)
{
	struct mm_struct *mm = get_task_mm(task);
	struct kmmscand_scan_state state = {};
	struct kmmscand_mm_stats st = {};
	enum kmmscand_skip_reason reason;
	struct kmmscand_mm_slot *ms;
	struct mm_slot *slot = NULL;
	int mode = PR_KMMSCAND_DEFAULT;
	bool served = false;

	if (mm) {
		mode = kmmscand_mm_mode(mm);
		served = kmmscand_serves(mm, &reason);
		spin_lock(&kmmscand_mm_lock);
		slot = mm_slot_lookup(kmmscand_slots_hash, mm);
		if (slot) {
			ms = mm_slot_entry(slot, struct kmmscand_mm_slot, slot);
			/* The thread updates its figures without the lock */
			st = data_race(ms->stats);
			/* And the scan state likewise */
			state = data_race(ms->state);
		}
		spin_unlock(&kmmscand_mm_lock);
		mmput(mm);
	}
	seq_printf(m, "tracked %d\n", !!slot);
	seq_printf(m, "scans %llu\n", st.scans);
	seq_printf(m, "pte_scanned %llu\n", st.pte_scanned);
	seq_printf(m, "slowtier_accessed %llu\n", st.accessed);
	seq_printf(m, "promoted %llu\n", st.promoted);
	seq_printf(m, "promote_failed %llu\n", st.failed);
	seq_printf(m, "kmmscand_cpu_ns %llu\n", st.cpu_ns);
	seq_printf(m, "scan_period_ms %lu\n", state.period_ms);
	seq_printf(m, "scan_size_mb %lu\n", state.size_mb);
	seq_printf(m, "prctl_mode %d\n", mode);
	seq_printf(m, "served %d\n", served && slot);
	return 0;
}

/* sysfs: /sys/kernel/mm/kmmscand/ */

#ifdef CONFIG_SYSFS
static ssize_t kmmscand_ulong_store(const char *buf, size_t count,
				    unsigned long *knob, unsigned long lo,
				    unsigned long hi)
{
	unsigned long val;

	if (kmmscand_parse_ulong(buf, lo, hi, &val))
		return -EINVAL;
	mutex_lock(&kmmscand_mutex);
	WRITE_ONCE(*knob, val);
	kmmscand_kick();
	mutex_unlock(&kmmscand_mutex);
	return count;
}

static ssize_t kmmscand_bool_store(const char *buf, size_t count, bool *knob)
{
	unsigned long val;

	if (kmmscand_parse_ulong(buf, 0, 1, &val))
		return -EINVAL;
	mutex_lock(&kmmscand_mutex);
	WRITE_ONCE(*knob, val);
	kmmscand_kick();
	mutex_unlock(&kmmscand_mutex);
	return count;
}

static ssize_t kmmscand_range_show(char *buf, enum kmmscand_range_field field,
				   bool period)
{
	struct kmmscand_tuning t;
	struct kmmscand_range *r = period ? &t.period_ms : &t.size_mb;
	unsigned long val;

	kmmscand_read_tuning(&t);
	switch (field) {
	case KMMSCAND_RANGE_MIN:
		val = r->min;
		break;
	case KMMSCAND_RANGE_INIT:
		val = r->init;
		break;
	default:
		val = r->max;
		break;
	}
	return sysfs_emit(buf, "%lu\n", val);
}

static ssize_t kmmscand_range_store(const char *buf, size_t count,
				    enum kmmscand_range_field field,
				    bool period)
{
	struct kmmscand_range *r;
	unsigned long val;
	int err;

	if (period)
		err = kmmscand_parse_ulong(buf, KMMSCAND_PERIOD_FLOOR_MS,
					   KMMSCAND_PERIOD_LIMIT_MS, &val);
	else
		err = kmmscand_parse_ulong(buf, KMMSCAND_SIZE_FLOOR_MB,
					   KMMSCAND_SIZE_LIMIT_MB, &val);
	if (err)
		return err;

	r = period ? &kmmscand_tuning.period_ms : &kmmscand_tuning.size_mb;
	mutex_lock(&kmmscand_mutex);
	write_seqlock(&kmmscand_tuning_lock);
	err = kmmscand_range_set(r, field, val);
	write_sequnlock(&kmmscand_tuning_lock);
	if (!err)
		kmmscand_kick();
	mutex_unlock(&kmmscand_mutex);
	return err ? err : count;
}

static ssize_t scan_enabled_show(struct kobject *kobj,
				 struct kobj_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%d\n", READ_ONCE(kmmscand_scan_enabled));
}

static ssize_t scan_enabled_store(struct kobject *kobj,
				  struct kobj_attribute *attr,
				  const char *buf, size_t count)
{
	unsigned long val;
	int err;

	if (kmmscand_parse_ulong(buf, 0, 1, &val))
		return -EINVAL;
	mutex_lock(&kmmscand_mutex);
	err = kmmscand_start_stop(val);
	mutex_unlock(&kmmscand_mutex);
	return err ? err : count;
}

static struct kobj_attribute scan_enabled_attr = __ATTR_RW(scan_enabled);

/*
 * The knobs that are a number in a fixed range share one show and one
 * store: each attribute names its variable and the range it takes.
 */
struct kmmscand_ulong_attr {
	struct kobj_attribute attr;
	unsigned long *knob;
	unsigned long lo;
	unsigned long hi;
};

static const struct kmmscand_ulong_attr *to_ulong_attr(struct kobj_attribute *attr)
{
	return container_of(attr, struct kmmscand_ulong_attr, attr);
}

static ssize_t ulong_knob_show(struct kobject *kobj,
			       struct kobj_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%lu\n", READ_ONCE(*to_ulong_attr(attr)->knob));
}

static ssize_t ulong_knob_store(struct kobject *kobj,
				struct kobj_attribute *attr,
				const char *buf, size_t count)
{
	const struct kmmscand_ulong_attr *ua = to_ulong_attr(attr);

	return kmmscand_ulong_store(buf, count, ua->knob, ua->lo, ua->hi);
}

#define KMMSCAND_ULONG_ATTR(_name, _knob, _lo, _hi)			\
	static struct kmmscand_ulong_attr _name##_attr = {		\
		.attr = __ATTR(_name, 0644, ulong_knob_show,		\
			       ulong_knob_store),			\
		.knob = &(_knob),					\
		.lo = (_lo),						\
		.hi = (_hi),						\
	}

KMMSCAND_ULONG_ATTR(scan_sleep_ms, kmmscand_scan_sleep_ms,
		    KMMSCAND_SLEEP_FLOOR_MS, KMMSCAND_PERIOD_LIMIT_MS);
KMMSCAND_ULONG_ATTR(mms_to_scan, kmmscand_mms_to_scan, 1,
		    KMMSCAND_MMS_LIMIT);
KMMSCAND_ULONG_ATTR(pages_to_scan, kmmscand_pages_to_scan, 1,
		    KMMSCAND_PAGES_LIMIT);
KMMSCAND_ULONG_ATTR(scan_delay_ms, kmmscand_scan_delay_ms, 0,
		    KMMSCAND_PERIOD_LIMIT_MS);
KMMSCAND_ULONG_ATTR(smart_scan_max_skips, kmmscand_smart_scan_max_skips, 1,
		    KMMSCAND_SMART_SCAN_SKIPS_LIMIT);
KMMSCAND_ULONG_ATTR(min_heat, kmmscand_min_heat, 1, KMMSCAND_HEAT_MAX);
KMMSCAND_ULONG_ATTR(migrate_threads, kmmscand_migrate_threads, 1,
		    KMMSCAND_MIGRATE_THREADS_LIMIT);

/* Likewise the switches that take 0 or 1 wherever they exist */
struct kmmscand_bool_attr {
	struct kobj_attribute attr;
	bool *knob;
};

static const struct kmmscand_bool_attr *to_bool_attr(struct kobj_attribute *attr)
{
	return container_of(attr, struct kmmscand_bool_attr, attr);
}

static ssize_t bool_knob_show(struct kobject *kobj,
			      struct kobj_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%d\n", READ_ONCE(*to_bool_attr(attr)->knob));
}

static ssize_t bool_knob_store(struct kobject *kobj,
			       struct kobj_attribute *attr,
			       const char *buf, size_t count)
{
	return kmmscand_bool_store(buf, count, to_bool_attr(attr)->knob);
}

#define KMMSCAND_BOOL_ATTR(_name, _knob)				\
	static struct kmmscand_bool_attr _name##_attr = {		\
		.attr = __ATTR(_name, 0644, bool_knob_show,		\
			       bool_knob_store),			\
		.knob = &(_knob),					\
	}

KMMSCAND_BOOL_ATTR(smart_scan, kmmscand_smart_scan);
KMMSCAND_BOOL_ATTR(skip_idle_mm, kmmscand_skip_idle_mm);
KMMSCAND_BOOL_ATTR(scan_by_default, kmmscand_scan_by_default);

/*
 * The six knobs of the period and size ranges share one show and one store:
 * each attribute names its range and which end of the range it sets.
 */
struct kmmscand_range_attr {
	struct kobj_attribute attr;
	enum kmmscand_range_field field;
	bool period;
};

static const struct kmmscand_range_attr *to_range_attr(struct kobj_attribute *attr)
{
	return container_of(attr, struct kmmscand_range_attr, attr);
}

static ssize_t range_knob_show(struct kobject *kobj,
			       struct kobj_attribute *attr, char *buf)
{
	const struct kmmscand_range_attr *ra = to_range_attr(attr);

	return kmmscand_range_show(buf, ra->field, ra->period);
}

static ssize_t range_knob_store(struct kobject *kobj,
				struct kobj_attribute *attr,
				const char *buf, size_t count)
{
	const struct kmmscand_range_attr *ra = to_range_attr(attr);

	return kmmscand_range_store(buf, count, ra->field, ra->period);
}

#define KMMSCAND_RANGE_ATTR(_name, _field, _period)			\
	static struct kmmscand_range_attr _name##_attr = {		\
		.attr = __ATTR(_name, 0644, range_knob_show,		\
			       range_knob_store),			\
		.field = _field,					\
		.period = _period,					\
	}

KMMSCAND_RANGE_ATTR(mm_scan_period_ms, KMMSCAND_RANGE_INIT, true);
KMMSCAND_RANGE_ATTR(scan_period_min_ms, KMMSCAND_RANGE_MIN, true);
KMMSCAND_RANGE_ATTR(scan_period_max_ms, KMMSCAND_RANGE_MAX, true);
KMMSCAND_RANGE_ATTR(scan_size_mb, KMMSCAND_RANGE_INIT, false);
KMMSCAND_RANGE_ATTR(scan_size_min_mb, KMMSCAND_RANGE_MIN, false);
KMMSCAND_RANGE_ATTR(scan_size_max_mb, KMMSCAND_RANGE_MAX, false);

static ssize_t min_accessed_pages_show(struct kobject *kobj,
				       struct kobj_attribute *attr, char *buf)
{
	struct kmmscand_tuning t;

	kmmscand_read_tuning(&t);
	return sysfs_emit(buf, "%lu\n", t.min_accessed);
}

static ssize_t min_accessed_pages_store(struct kobject *kobj,
					struct kobj_attribute *attr,
					const char *buf, size_t count)
{
	unsigned long val;

	if (kmmscand_parse_ulong(buf, 0, KMMSCAND_MIN_ACCESSED_LIMIT, &val))
		return -EINVAL;
	mutex_lock(&kmmscand_mutex);
	write_seqlock(&kmmscand_tuning_lock);
	kmmscand_tuning.min_accessed = val;
	write_sequnlock(&kmmscand_tuning_lock);
	mutex_unlock(&kmmscand_mutex);
	return count;
}

static struct kobj_attribute min_accessed_pages_attr = __ATTR_RW(min_accessed_pages);

static ssize_t target_node_show(struct kobject *kobj,
				struct kobj_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%d\n", READ_ONCE(kmmscand_target_node));
}

static ssize_t target_node_store(struct kobject *kobj,
				 struct kobj_attribute *attr,
				 const char *buf, size_t count)
{
	nodemask_t eligible;
	int nid, err;

	mutex_lock(&kmmscand_mutex);
	kmmscand_toptier_nodes(&eligible);
	err = kmmscand_parse_target_node(buf, &eligible, &nid);
	if (!err)
		WRITE_ONCE(kmmscand_target_node, nid);
	mutex_unlock(&kmmscand_mutex);
	return err ? err : count;
}

static struct kobj_attribute target_node_attr = __ATTR_RW(target_node);

static ssize_t nice_show(struct kobject *kobj, struct kobj_attribute *attr,
			 char *buf)
{
	return sysfs_emit(buf, "%ld\n", READ_ONCE(kmmscand_nice));
}

static ssize_t nice_store(struct kobject *kobj, struct kobj_attribute *attr,
			  const char *buf, size_t count)
{
	long val;
	int err;

	/* Out of range is out of range, however far: -EINVAL, as elsewhere */
	if (kstrtol(buf, 10, &val) || val < MIN_NICE || val > MAX_NICE)
		return -EINVAL;
	mutex_lock(&kmmscand_mutex);
	err = kmmscand_set_wq_nice(val);
	if (!err) {
		WRITE_ONCE(kmmscand_nice, val);
		if (kmmscand_thread)
			set_user_nice(kmmscand_thread, val);
	}
	mutex_unlock(&kmmscand_mutex);
	return err ? err : count;
}

static struct kobj_attribute nice_attr = __ATTR_RW(nice);

static ssize_t pmd_young_show(struct kobject *kobj,
			      struct kobj_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%d\n", READ_ONCE(kmmscand_pmd_young));
}

/* Where the CPU does not set the bit, only 0 is taken */
static ssize_t pmd_young_store(struct kobject *kobj,
			       struct kobj_attribute *attr,
			       const char *buf, size_t count)
{
	unsigned long val;

	if (kmmscand_parse_ulong(buf, 0, kmmscand_pmd_young_usable(), &val))
		return -EINVAL;
	return kmmscand_bool_store(buf, count, &kmmscand_pmd_young);
}

static struct kobj_attribute pmd_young_attr = __ATTR_RW(pmd_young);

static struct attribute *kmmscand_attrs[] = {
	&scan_enabled_attr.attr,
	&scan_sleep_ms_attr.attr.attr,
	&mms_to_scan_attr.attr.attr,
	&pages_to_scan_attr.attr.attr,
	&scan_delay_ms_attr.attr.attr,
	&mm_scan_period_ms_attr.attr.attr,
	&scan_period_min_ms_attr.attr.attr,
	&scan_period_max_ms_attr.attr.attr,
	&scan_size_mb_attr.attr.attr,
	&scan_size_min_mb_attr.attr.attr,
	&scan_size_max_mb_attr.attr.attr,
	&min_accessed_pages_attr.attr,
	&target_node_attr.attr,
	&smart_scan_attr.attr.attr,
	&smart_scan_max_skips_attr.attr.attr,
	&pmd_young_attr.attr,
	&skip_idle_mm_attr.attr.attr,
	&nice_attr.attr,
	&migrate_threads_attr.attr.attr,
	&scan_by_default_attr.attr.attr,
	&min_heat_attr.attr.attr,
	NULL,
};

static const struct attribute_group kmmscand_attr_group = {
	.attrs = kmmscand_attrs,
	.name = "kmmscand",
};

static int __init kmmscand_sysfs_init(void)
{
	return sysfs_create_group(mm_kobj, &kmmscand_attr_group);
}
#else /* CONFIG_SYSFS */
static inline int kmmscand_sysfs_init(void)
{
	return 0;
}
#endif /* CONFIG_SYSFS */

/**
 * kmmscand_wants_room - whether kmmscand wants room for promotions on a node
 * @nid: the node
 *
 * kswapd asks, to keep the promotion watermark of the node free rather
 * than the high one.  kmmscand wants that only where it has work that
 * could not be done: it found no room on @nid, a top-tier node, for
 * folios it wanted to promote, within the last KMMSCAND_ROOM_WANTED_MS.
 * Machines without a slow tier, and tiered ones whose top tier has room,
 * keep kswapd's watermarks as they are without kmmscand.
 *
 * Return: true while that holds and scanning is enabled.
 */
bool kmmscand_wants_room(int nid)
{
	return READ_ONCE(kmmscand_scan_enabled) &&
	       time_before(jiffies,
			   READ_ONCE(kmmscand_nodes[nid].room_wanted_until));
}

/*
 * Memory onlined or offlined may add the first slow tier or remove the
 * last: wake the thread to look.  Runs after the memory tiers' own
 * callback (MEMTIER_HOTPLUG_PRI), which places the node in its tier.
 */
static int __meminit kmmscand_memory_callback(struct notifier_block *self,
					      unsigned long action, void *arg)
{
	if (action == MEM_ONLINE || action == MEM_OFFLINE) {
		WRITE_ONCE(kmmscand_kicked, true);
		wake_up_interruptible(&kmmscand_wait);
	}
	return notifier_from_errno(0);
}

/*
 * The memory tiers are known from memory_tier_late_init() on: have the
 * thread, started at subsys_initcall, look again then.
 */
static int __init kmmscand_tiers_known(void)
{
	WRITE_ONCE(kmmscand_kicked, true);
	wake_up_interruptible(&kmmscand_wait);
	return 0;
}
late_initcall_sync(kmmscand_tiers_known);

/* kmmscand=on|off on the kernel command line sets scan_enabled */
static int __init kmmscand_setup(char *str)
{
	bool enable;

	if (!str || kstrtobool(str, &enable))
		return -EINVAL;
	kmmscand_scan_enabled = enable;
	return 0;
}
early_param("kmmscand", kmmscand_setup);

/* Without its workers the thread copies every batch alone */
static void __init kmmscand_init_copies(void)
{
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(kmmscand_copies); i++)
		INIT_WORK(&kmmscand_copies[i].work, kmmscand_copy_work);
	kmmscand_wq = alloc_workqueue("kmmscand", WQ_UNBOUND,
				      ARRAY_SIZE(kmmscand_copies));
	if (kmmscand_wq && kmmscand_set_wq_nice(kmmscand_nice)) {
		destroy_workqueue(kmmscand_wq);
		kmmscand_wq = NULL;
	}
	if (!kmmscand_wq)
		pr_warn("no workers: the thread copies alone\n");
}

static int __init kmmscand_init(void)
{
	int err;

	kmmscand_slot_cache = KMEM_CACHE(kmmscand_mm_slot, 0);
	if (!kmmscand_slot_cache)
		return -ENOMEM;
	kmmscand_pmd_young = kmmscand_pmd_young_usable();
	kmmscand_init_copies();

	/* Without the knobs kmmscand still runs, on its defaults */
	err = kmmscand_sysfs_init();
	if (err)
		pr_err("cannot create the sysfs knobs: %d\n", err);
	hotplug_memory_notifier(kmmscand_memory_callback,
				MEMTIER_HOTPLUG_PRI - 1);

	mutex_lock(&kmmscand_mutex);
	err = kmmscand_start_stop(kmmscand_scan_enabled);
	mutex_unlock(&kmmscand_mutex);
	return err;
}
subsys_initcall(kmmscand_init);

#include "tests/kmmscand-kunit.h"
