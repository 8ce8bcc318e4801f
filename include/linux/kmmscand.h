/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kmmscand: promote accessed folios from slow memory tiers, found by
 * scanning PTE Accessed bits from a kernel thread.
 */
#ifndef _LINUX_KMMSCAND_H
#define _LINUX_KMMSCAND_H

#include <linux/mm_types.h>
#include <linux/sched.h>
#include <linux/jump_label.h>
#include <linux/sched/coredump.h> /* MMF_VM_KMMSCAND */

/**
 * enum kmmscand_skip_reason - why kmmscand did not scan a VMA or a range
 * @KMMSCAND_SKIP_HUGETLB: hugetlb VMA; its folios are not promoted.
 * @KMMSCAND_SKIP_PFNMAP: VM_PFNMAP, VM_MIXEDMAP or VM_IO; no normal folios.
 * @KMMSCAND_SKIP_UNMIGRATABLE: vma_migratable() is false.
 * @KMMSCAND_SKIP_INACCESSIBLE: PROT_NONE VMA; its PTEs are never young.
 * @KMMSCAND_SKIP_MLOCKED: VM_LOCKED VMA; mlock users expect no migration.
 * @KMMSCAND_SKIP_SHARED_RO: read-only file mapping, e.g. library text.
 * @KMMSCAND_SKIP_MEMPOLICY: the memory policy does not allow promotion.
 * @KMMSCAND_SKIP_LOCK_BUSY: mmap_read_trylock() failed; retried later.
 * @KMMSCAND_SKIP_LOCK_CONTENDED: a writer waits for mmap_lock; the rest of
 *	the scan is deferred to the next pass.
 * @KMMSCAND_SKIP_STOPPING: scanning was disabled or the thread is stopping
 *	or freezing; the rest of the scan is deferred.
 * @KMMSCAND_SKIP_RATE_LIMITED: the promotion rate limit of the target node
 *	is spent; the rest of the scan waits for its next window.
 * @KMMSCAND_SKIP_COLD: smart scan: the recent scans of this PMD-sized region
 *	found no accessed slow-tier folio in it.
 * @KMMSCAND_SKIP_NO_SLOW_TIER: smart scan: the last scan that read this
 *	PMD-sized region found no slow-tier folio in it at all.
 * @KMMSCAND_SKIP_PMD_OLD: the PMD entry above this PTE table is not young:
 *	no entry below it was used since the last scan read the table.
 * @KMMSCAND_SKIP_MM_IDLE: no task of the mm has run since its last scan
 *	began; the whole scan is passed over.
 * @KMMSCAND_SKIP_NODE_FULL: the target node had no room for promotions;
 *	kmmscand backs off from it, and the rest of the scan waits.
 * @KMMSCAND_SKIP_MM_OPTED_OUT: the process opted out with
 *	prctl(PR_SET_KMMSCAND), or did not opt in where scan_by_default is 0;
 *	the mm is not scanned.
 * @KMMSCAND_SKIP_MM_CGROUP_OFF: memory.kmmscand is 0 in the memory cgroup
 *	of the process or in one of its ancestors; the mm is not scanned.
 *
 * The values are part of the tracepoints of the kmmscand_skip class.
 */
enum kmmscand_skip_reason {
	KMMSCAND_SKIP_HUGETLB,
	KMMSCAND_SKIP_PFNMAP,
	KMMSCAND_SKIP_UNMIGRATABLE,
	KMMSCAND_SKIP_INACCESSIBLE,
	KMMSCAND_SKIP_MLOCKED,
	KMMSCAND_SKIP_SHARED_RO,
	KMMSCAND_SKIP_MEMPOLICY,
	KMMSCAND_SKIP_LOCK_BUSY,
	KMMSCAND_SKIP_LOCK_CONTENDED,
	KMMSCAND_SKIP_STOPPING,
	KMMSCAND_SKIP_RATE_LIMITED,
	KMMSCAND_SKIP_COLD,
	KMMSCAND_SKIP_NO_SLOW_TIER,
	KMMSCAND_SKIP_PMD_OLD,
	KMMSCAND_SKIP_MM_IDLE,
	KMMSCAND_SKIP_NODE_FULL,
	KMMSCAND_SKIP_MM_OPTED_OUT,
	KMMSCAND_SKIP_MM_CGROUP_OFF,
};

/**
 * enum kmmscand_promote_result - what became of one promotion candidate
 * @KMMSCAND_PROMOTED: migrated to the target node.
 * @KMMSCAND_PROMOTE_STALE: unmapped, isolated or moved since the scan.
 * @KMMSCAND_PROMOTE_NO_ROOM: no allowed top-tier node had room for the
 *	folio and the rest of its batch above its high watermark; kmmscand
 *	backs off from the nearest one.
 * @KMMSCAND_PROMOTE_NO_TARGET: no top-tier node is allowed for this mm.
 * @KMMSCAND_PROMOTE_ISOLATE_FAILED: migrate_misplaced_folio_prepare() said
 *	no (busy, dirty file folio, shared library, node filling up).
 * @KMMSCAND_PROMOTE_MIGRATE_FAILED: migrate_misplaced_folio() failed.
 * @KMMSCAND_PROMOTE_DROPPED: dropped because scanning was disabled, the
 *	thread is stopping or a writer waits for mmap_lock.
 * @KMMSCAND_PROMOTE_RATE_LIMITED: refused by the promotion rate limit of
 *	the target node (kernel.numa_balancing_rate_limit_mbps).
 *
 * The values are part of the kmmscand_migrate tracepoint.
 */
enum kmmscand_promote_result {
	KMMSCAND_PROMOTED,
	KMMSCAND_PROMOTE_STALE,
	KMMSCAND_PROMOTE_NO_ROOM,
	KMMSCAND_PROMOTE_NO_TARGET,
	KMMSCAND_PROMOTE_ISOLATE_FAILED,
	KMMSCAND_PROMOTE_MIGRATE_FAILED,
	KMMSCAND_PROMOTE_DROPPED,
	KMMSCAND_PROMOTE_RATE_LIMITED,
};

#ifdef CONFIG_KMMSCAND
/* On while some node with memory is not top tier: there is work to find */
DECLARE_STATIC_KEY_FALSE(kmmscand_tiered);

void __kmmscand_enter(struct mm_struct *mm, struct task_struct *owner);
void __kmmscand_exit(struct mm_struct *mm);

/*
 * Called once the new process @p can no longer fail to be created, and
 * has its pid: its mm is tracked, owned by @p, when its parent's was
 * (every user mm descends from exec).  Threads and CLONE_VM children
 * share their parent's mm, tracked already.  Without a slow tier nothing
 * is tracked: the mms are taken up when one appears.
 */
static inline void kmmscand_fork(struct task_struct *p,
				 struct mm_struct *oldmm)
{
	if (static_branch_unlikely(&kmmscand_tiered) &&
	    p->mm && p->mm != oldmm && oldmm &&
	    test_bit(MMF_VM_KMMSCAND, &oldmm->flags))
		__kmmscand_enter(p->mm, p);
}

static inline void kmmscand_execve(struct mm_struct *mm)
{
	if (static_branch_unlikely(&kmmscand_tiered))
		__kmmscand_enter(mm, current);
}

bool kmmscand_wants_room(int nid);
int kmmscand_prctl_set(struct mm_struct *mm, unsigned long mode);
int kmmscand_prctl_get(struct mm_struct *mm);

struct seq_file;
struct pid_namespace;
int proc_pid_kmmscand(struct seq_file *m, struct pid_namespace *ns,
		      struct pid *pid, struct task_struct *task);

/* Must run before exit_mmap(), like khugepaged_exit() */
static inline void kmmscand_exit(struct mm_struct *mm)
{
	if (test_bit(MMF_VM_KMMSCAND, &mm->flags))
		__kmmscand_exit(mm);
}
#else /* CONFIG_KMMSCAND */
static inline void kmmscand_fork(struct task_struct *p,
				 struct mm_struct *oldmm)
{
}

static inline void kmmscand_execve(struct mm_struct *mm)
{
}

static inline void kmmscand_exit(struct mm_struct *mm)
{
}

static inline bool kmmscand_wants_room(int nid)
{
	return false;
}

static inline int kmmscand_prctl_set(struct mm_struct *mm,
				     unsigned long mode)
{
	return -EINVAL;
}

static inline int kmmscand_prctl_get(struct mm_struct *mm)
{
	return -EINVAL;
}
#endif /* CONFIG_KMMSCAND */

#endif /* _LINUX_KMMSCAND_H */
