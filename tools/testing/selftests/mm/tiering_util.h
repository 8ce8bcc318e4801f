/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers for the memory tiering selftests (numa_tiering, kmmscand): the
 * memory-tier layout, placing anonymous memory on a node while leaving its
 * memory policy free to let it move, counting where a range's pages sit,
 * /proc/vmstat counters, sysctl and sysfs knobs, and bounded waits that keep
 * a hot set hot while they poll.
 */
#ifndef __TIERING_UTIL_H
#define __TIERING_UTIL_H

#include <stdbool.h>
#include <stddef.h>

/* Node ids the helpers handle: one 64-bit mask, as x86_64's NODES_SHIFT=6. */
#define TIER_MAX_NODES		64
/* More tiers than any machine builds (each abstract distance chunk is one). */
#define TIER_MAX_TIERS		16

#define TIER_MEMORY_TIERING_DIR	"/sys/devices/virtual/memory_tiering"
#define TIER_NUMA_BALANCING	"/proc/sys/kernel/numa_balancing"
/* kernel.numa_balancing mode that promotes from lower tiers (tiering mode). */
#define TIER_NUMAB_TIERING	2

/* Room for any value a knob, sysctl or vmstat line holds. */
#define TIER_VALUE_LEN		64

/* The memory tiers, top (lowest-numbered, fastest) first. */
struct tier_layout {
	int nr_tiers;
	int tier_id[TIER_MAX_TIERS];		/* N of memory_tierN */
	unsigned long long nodes[TIER_MAX_TIERS];	/* node mask per tier */
};

/* A range of anonymous memory the tests place, touch and count. */
struct tier_region {
	char *addr;
	size_t size;
};

/* Where the pages of a region are; absent counts unmapped or failed pages. */
struct tier_census {
	unsigned long on_node[TIER_MAX_NODES];
	unsigned long absent;
	unsigned long total;
};

/*
 * Make the compiler compute @val, and so do the load it comes from, even
 * when nothing uses it: how the helpers touch memory just to access it.
 */
static inline void tier_keep(unsigned long val)
{
	asm volatile("" : : "r"(val));
}

/* Make the compiler do every memory access written before this point. */
static inline void tier_barrier(void)
{
	asm volatile("" : : : "memory");
}

/* The condition tier_wait() polls for: true when it holds. */
typedef bool (*tier_cond_fn)(void *arg);

/*
 * A condition on a region: at least min_pages of its pages are on node.
 * last_pages records the count of the last poll, for the test's log.
 */
struct tier_share {
	struct tier_region region;
	int node;
	unsigned long min_pages;
	unsigned long last_pages;
};

/* A condition on a /proc/vmstat counter: it reached at least min. */
struct tier_counter {
	const char *name;
	unsigned long min;
	unsigned long last;
};

/*
 * Free pages and watermarks of a node, summed over its zones, in pages, as
 * /proc/zoneinfo shows them. @room counts, zone by zone, the free pages
 * above the high watermark and the lowmem reserve that protects the zone
 * from movable allocations: what a promotion to the node may take without
 * pushing a zone below its high watermark. 0 when no zone has any.
 */
struct tier_node_marks {
	unsigned long free;
	unsigned long min;
	unsigned long low;
	unsigned long high;
	unsigned long room;
};

/*
 * How long node counters such as pgpromote_success may lag: they reach
 * /proc/vmstat as the per-CPU deltas are folded in, about every second
 * (vm.stat_interval), later on CPUs that sleep. tier_vmstat_refresh()
 * folds them at once; this bounds the wait where it cannot.
 */
#define TIER_VMSTAT_LAG_MS	(10 * 1000)

/* Layout */
int tier_read_layout(struct tier_layout *layout);
int tier_of_node(const struct tier_layout *layout, int node);
int tier_parse_nodelist(const char *list, unsigned long long *mask);
bool tier_node_has_cpus(int node);
bool tier_node_has_memory(int node);
int tier_pick_nodes(const struct tier_layout *layout, int *top, int *slow);

/* Placement and census */
int tier_place_on_node(struct tier_region *region, int node);
int tier_alloc_on_node(struct tier_region *region, size_t size, int node,
		       bool thp);
void tier_free(struct tier_region *region);
int tier_census(const struct tier_region *region, struct tier_census *census);
long tier_pages_on_node(const struct tier_region *region, int node);
unsigned long tier_nr_pages(const struct tier_region *region);
int tier_flush_tlb(const struct tier_region *regions, int nr);
int tier_clear_refs(const struct tier_region *regions, int nr);

/* Counters and knobs */
int tier_vmstat(const char *name, unsigned long *value);
int tier_vmstat_refresh(void);
int tier_read_str(const char *path, char *buf, size_t len);
int tier_read_long(const char *path, long *value);
int tier_write_str(const char *path, const char *value);
int tier_write_long(const char *path, long value);
int tier_node_marks(int node, struct tier_node_marks *marks);
unsigned long tier_node_high_wmark(int node);

/* Time and waiting */
double tier_now(void);
void tier_touch(const struct tier_region *regions, int nr);
bool tier_wait(const struct tier_region *hot, int nr_hot, tier_cond_fn cond,
	       void *arg, unsigned int timeout_ms);
void tier_share_init(struct tier_share *share,
		     const struct tier_region *region, int node,
		     unsigned int percent);
bool tier_share_reached(void *arg);
bool tier_counter_reached(void *arg);

#endif /* __TIERING_UTIL_H */
