// SPDX-License-Identifier: GPL-2.0
/*
 * Helpers for the memory tiering selftests; see tiering_util.h.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <numaif.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "tiering_util.h"

/*
 * Pages asked about per move_pages() call: small enough for the stack,
 * large enough that a 64 MiB census takes a few dozen calls.
 */
#define TIER_CENSUS_BATCH	512

/*
 * How often tier_wait() tests its condition: often enough to stop within a
 * fraction of a second of it holding, rarely enough that the census (one
 * move_pages() lookup per page) costs little next to the touching.
 */
#define TIER_POLL_MS		200

/* Used when the kernel does not say its PMD size (no THP): x86_64's. */
#define TIER_DEFAULT_PMD_SIZE	(2UL << 20)

#define TIER_PMD_SIZE_FILE \
	"/sys/kernel/mm/transparent_hugepage/hpage_pmd_size"
#define TIER_NODE_DIR		"/sys/devices/system/node"

static size_t tier_page_size(void)
{
	return (size_t)sysconf(_SC_PAGESIZE);
}

int tier_read_str(const char *path, char *buf, size_t len)
{
	ssize_t ret;
	int fd;

	if (!len)
		return -EINVAL;
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return -errno;
	ret = read(fd, buf, len - 1);
	if (ret < 0) {
		ret = -errno;
		close(fd);
		return ret;
	}
	close(fd);
	buf[ret] = '\0';
	while (ret > 0 && isspace((unsigned char)buf[ret - 1]))
		buf[--ret] = '\0';
	return 0;
}

int tier_read_long(const char *path, long *value)
{
	char buf[TIER_VALUE_LEN], *end;
	int ret;

	ret = tier_read_str(path, buf, sizeof(buf));
	if (ret)
		return ret;
	errno = 0;
	*value = strtol(buf, &end, 10);
	if (errno)
		return -errno;
	if (end == buf || *end)
		return -EINVAL;
	return 0;
}

/*
 * Write @value with one write(), as "echo -n value > path" does: a sysfs or
 * sysctl store sees exactly these bytes. 0 on success, else -errno.
 */
int tier_write_str(const char *path, const char *value)
{
	size_t len = strlen(value);
	ssize_t ret;
	int fd;

	fd = open(path, O_WRONLY);
	if (fd < 0)
		return -errno;
	ret = write(fd, value, len);
	if (ret < 0) {
		ret = -errno;
		close(fd);
		return ret;
	}
	close(fd);
	return (size_t)ret == len ? 0 : -EIO;
}

int tier_write_long(const char *path, long value)
{
	char buf[TIER_VALUE_LEN];

	snprintf(buf, sizeof(buf), "%ld", value);
	return tier_write_str(path, buf);
}

int tier_vmstat(const char *name, unsigned long *value)
{
	char key[TIER_VALUE_LEN];
	unsigned long val;
	int ret = -ENOENT;
	FILE *fp;

	fp = fopen("/proc/vmstat", "r");
	if (!fp)
		return -errno;
	while (fscanf(fp, "%63s %lu", key, &val) == 2) {
		if (!strcmp(key, name)) {
			*value = val;
			ret = 0;
			break;
		}
	}
	fclose(fp);
	return ret;
}

/*
 * Fold every CPU's pending counter deltas into /proc/vmstat now (root
 * only), so that the node counters read next are exact.
 */
int tier_vmstat_refresh(void)
{
	return tier_write_str("/proc/sys/vm/stat_refresh", "1");
}

/* One zone of /proc/zoneinfo, as tier_node_marks() reads it. */
struct tier_zone {
	unsigned long free, min, low, high, reserve;
};

/* Add @zone to @marks, and what a promotion may take of it to the room. */
static void tier_add_zone(struct tier_node_marks *marks,
			  const struct tier_zone *zone)
{
	unsigned long floor = zone->high + zone->reserve;

	marks->free += zone->free;
	marks->min += zone->min;
	marks->low += zone->low;
	marks->high += zone->high;
	if (zone->free > floor)
		marks->room += zone->free - floor;
}

/*
 * The largest lowmem reserve of a "protection: (0, 1950, ...)" line: the
 * one against the highest zone a movable allocation may come from.
 */
static unsigned long tier_zone_reserve(const char *line)
{
	const char *p = strchr(line, '(');
	unsigned long v, max = 0;
	char *end;

	if (!p)
		return 0;
	for (p++; *p && *p != ')'; p = end) {
		v = strtoul(p, &end, 10);
		if (end == p)
			break;
		if (v > max)
			max = v;
		while (*end == ',' || *end == ' ')
			end++;
	}
	return max;
}

/*
 * Read the free pages and watermarks of @node's zones from /proc/zoneinfo
 * into @marks. 0 on success, -ENOENT if the node has no zones there.
 */
int tier_node_marks(int node, struct tier_node_marks *marks)
{
	struct tier_zone zone = { 0 };
	bool ours = false, found = false;
	char line[512];
	FILE *fp;
	int nid;

	memset(marks, 0, sizeof(*marks));
	fp = fopen("/proc/zoneinfo", "r");
	if (!fp)
		return -errno;
	while (fgets(line, sizeof(line), fp)) {
		if (sscanf(line, "Node %d, zone", &nid) == 1) {
			if (ours)
				tier_add_zone(marks, &zone);
			memset(&zone, 0, sizeof(zone));
			ours = nid == node;
			found |= ours;
		} else if (!ours) {
			continue;
		} else if (sscanf(line, " pages free %lu", &zone.free) == 1 ||
			   sscanf(line, " min %lu", &zone.min) == 1 ||
			   sscanf(line, " low %lu", &zone.low) == 1 ||
			   sscanf(line, " high %lu", &zone.high) == 1) {
			continue;
		} else if (strstr(line, "protection:")) {
			zone.reserve = tier_zone_reserve(line);
		}
	}
	if (ours)
		tier_add_zone(marks, &zone);
	fclose(fp);
	return found ? 0 : -ENOENT;
}

/* Sum of @node's zones' high watermarks, in bytes; 0 if unknown. */
unsigned long tier_node_high_wmark(int node)
{
	struct tier_node_marks marks;

	if (tier_node_marks(node, &marks))
		return 0;
	return marks.high * tier_page_size();
}

/* Parse a node list in the kernel's "0-1,3" format into a node mask. */
int tier_parse_nodelist(const char *list, unsigned long long *mask)
{
	const char *p = list;
	long first, last;
	char *end;

	*mask = 0;
	while (*p && !isspace((unsigned char)*p)) {
		first = strtol(p, &end, 10);
		if (end == p)
			return -EINVAL;
		last = first;
		p = end;
		if (*p == '-') {
			last = strtol(p + 1, &end, 10);
			if (end == p + 1)
				return -EINVAL;
			p = end;
		}
		if (first < 0 || last < first || last >= TIER_MAX_NODES)
			return -ERANGE;
		for (; first <= last; first++)
			*mask |= 1ULL << first;
		if (*p == ',')
			p++;
		else if (*p && !isspace((unsigned char)*p))
			return -EINVAL;
	}
	return 0;
}

static int tier_read_nodelist(const char *path, unsigned long long *mask)
{
	char buf[256];
	int ret;

	ret = tier_read_str(path, buf, sizeof(buf));
	if (ret)
		return ret;
	return tier_parse_nodelist(buf, mask);
}

static int tier_cmp_ids(const void *a, const void *b)
{
	return *(const int *)a - *(const int *)b;
}

/*
 * Read the memory tiers from sysfs, top tier first. Tiers without nodes
 * are left out. -ENOENT when the kernel has no memory tiering.
 */
int tier_read_layout(struct tier_layout *layout)
{
	int ids[TIER_MAX_TIERS], nr = 0, i, ret;
	char path[512];
	struct dirent *de;
	DIR *dir;

	memset(layout, 0, sizeof(*layout));
	dir = opendir(TIER_MEMORY_TIERING_DIR);
	if (!dir)
		return -errno;
	while ((de = readdir(dir))) {
		int id;

		if (sscanf(de->d_name, "memory_tier%d", &id) != 1)
			continue;
		if (nr == TIER_MAX_TIERS) {
			closedir(dir);
			return -E2BIG;
		}
		ids[nr++] = id;
	}
	closedir(dir);
	qsort(ids, nr, sizeof(ids[0]), tier_cmp_ids);

	for (i = 0; i < nr; i++) {
		unsigned long long mask;

		snprintf(path, sizeof(path), "%s/memory_tier%d/nodelist",
			 TIER_MEMORY_TIERING_DIR, ids[i]);
		ret = tier_read_nodelist(path, &mask);
		if (ret)
			return ret;
		if (!mask)
			continue;
		layout->tier_id[layout->nr_tiers] = ids[i];
		layout->nodes[layout->nr_tiers] = mask;
		layout->nr_tiers++;
	}
	return 0;
}

/* Index of @node's tier in @layout (0: top tier), -1 if in none. */
int tier_of_node(const struct tier_layout *layout, int node)
{
	int i;

	if (node < 0 || node >= TIER_MAX_NODES)
		return -1;
	for (i = 0; i < layout->nr_tiers; i++)
		if (layout->nodes[i] & (1ULL << node))
			return i;
	return -1;
}

bool tier_node_has_cpus(int node)
{
	char path[128], buf[256];

	snprintf(path, sizeof(path), "%s/node%d/cpulist", TIER_NODE_DIR, node);
	if (tier_read_str(path, buf, sizeof(buf)))
		return false;
	return buf[0] != '\0';
}

bool tier_node_has_memory(int node)
{
	unsigned long long mask;

	if (node < 0 || node >= TIER_MAX_NODES)
		return false;
	if (tier_read_nodelist(TIER_NODE_DIR "/has_memory", &mask))
		return false;
	return mask & (1ULL << node);
}

/*
 * Choose the nodes a test moves memory between: @top, a node with memory in
 * the top tier (one with CPUs if there is one), and @slow, the first node
 * with memory in a lower tier. -ENODEV when there are no such two nodes.
 */
int tier_pick_nodes(const struct tier_layout *layout, int *top, int *slow)
{
	int node;

	*top = -1;
	*slow = -1;
	if (layout->nr_tiers < 2)
		return -ENODEV;
	for (node = 0; node < TIER_MAX_NODES; node++) {
		int tier = tier_of_node(layout, node);

		if (tier < 0 || !tier_node_has_memory(node))
			continue;
		if (tier == 0) {
			if (*top < 0 || (!tier_node_has_cpus(*top) &&
					 tier_node_has_cpus(node)))
				*top = node;
		} else if (*slow < 0) {
			*slow = node;
		}
	}
	return *top >= 0 && *slow >= 0 ? 0 : -ENODEV;
}

/*
 * Fault every page of @region in on @node. The node is forced through the
 * task's policy for the time of the faults only, so the VMA keeps the
 * default policy and whatever promotes pages is free to move them.
 */
int tier_place_on_node(struct tier_region *region, int node)
{
	unsigned long mask = 1UL << node;
	size_t psz = tier_page_size(), off;
	int ret = 0;

	if (node < 0 || node >= TIER_MAX_NODES)
		return -EINVAL;
	/* maxnode counts one past the last bit the kernel reads. */
	if (set_mempolicy(MPOL_BIND, &mask, TIER_MAX_NODES + 1))
		return -errno;
	for (off = 0; off < region->size; off += psz)
		region->addr[off] = 1;
	if (set_mempolicy(MPOL_DEFAULT, NULL, 0))
		ret = -errno;
	return ret;
}

static size_t tier_pmd_size(void)
{
	long size;

	if (tier_read_long(TIER_PMD_SIZE_FILE, &size) || size <= 0)
		return TIER_DEFAULT_PMD_SIZE;
	return size;
}

/*
 * Map @size bytes of private anonymous memory and place it on @node. With
 * @thp the range is PMD-aligned and MADV_HUGEPAGE, so it can be THPs;
 * without, MADV_NOHUGEPAGE keeps it in base pages whatever the THP mode.
 */
int tier_alloc_on_node(struct tier_region *region, size_t size, int node,
		       bool thp)
{
	size_t align = thp ? tier_pmd_size() : 0;
	char *map, *start;
	int ret;

	region->addr = NULL;
	region->size = 0;
	map = mmap(NULL, size + align, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (map == MAP_FAILED)
		return -errno;
	start = map;
	if (align) {
		start = (char *)(((unsigned long)map + align - 1) & ~(align - 1));
		if (start > map)
			munmap(map, start - map);
		if (start + size < map + size + align)
			munmap(start + size, map + size + align - (start + size));
	}
	region->addr = start;
	region->size = size;
	/* EINVAL only means a kernel without THP: base pages either way. */
	if (madvise(start, size, thp ? MADV_HUGEPAGE : MADV_NOHUGEPAGE) &&
	    errno != EINVAL) {
		ret = -errno;
		tier_free(region);
		return ret;
	}
	ret = tier_place_on_node(region, node);
	if (ret)
		tier_free(region);
	return ret;
}

void tier_free(struct tier_region *region)
{
	if (region->addr)
		munmap(region->addr, region->size);
	region->addr = NULL;
	region->size = 0;
}

unsigned long tier_nr_pages(const struct tier_region *region)
{
	return region->size / tier_page_size();
}

/* Count on which node each page of @region is, with move_pages(nodes=NULL). */
int tier_census(const struct tier_region *region, struct tier_census *census)
{
	unsigned long nr = tier_nr_pages(region), done, i, batch;
	int status[TIER_CENSUS_BATCH];
	void *pages[TIER_CENSUS_BATCH];
	size_t psz = tier_page_size();

	memset(census, 0, sizeof(*census));
	for (done = 0; done < nr; done += batch) {
		batch = nr - done;
		if (batch > TIER_CENSUS_BATCH)
			batch = TIER_CENSUS_BATCH;
		for (i = 0; i < batch; i++)
			pages[i] = region->addr + (done + i) * psz;
		if (move_pages(0, batch, pages, NULL, status, 0))
			return -errno;
		for (i = 0; i < batch; i++) {
			if (status[i] >= 0 && status[i] < TIER_MAX_NODES)
				census->on_node[status[i]]++;
			else
				census->absent++;
		}
	}
	census->total = nr;
	return 0;
}

/* Pages of @region on @node, or -errno. */
long tier_pages_on_node(const struct tier_region *region, int node)
{
	struct tier_census census;
	int ret;

	if (node < 0 || node >= TIER_MAX_NODES)
		return -EINVAL;
	ret = tier_census(region, &census);
	if (ret)
		return ret;
	return census.on_node[node];
}

/*
 * Flush the TLB entries of @regions.  Clearing Accessed bits (clear_refs)
 * does not flush, and a CPU that keeps a translation cached never sets the
 * bit again: a hot set that the TLB holds (a few 2 MiB THPs, or base pages
 * of a task that keeps its CPU) would have its accesses go unseen.
 * Changing the protection back and forth flushes the range.
 */
int tier_flush_tlb(const struct tier_region *regions, int nr)
{
	int i;

	for (i = 0; i < nr; i++) {
		if (mprotect(regions[i].addr, regions[i].size, PROT_READ) ||
		    mprotect(regions[i].addr, regions[i].size,
			     PROT_READ | PROT_WRITE))
			return -errno;
	}
	return 0;
}

/*
 * Clear the Accessed bits of every page the process maps, so that only
 * accesses from now on count (placing memory sets them on every page),
 * and flush the TLB entries of the @nr @regions whose accesses are to
 * count, see tier_flush_tlb().
 */
int tier_clear_refs(const struct tier_region *regions, int nr)
{
	int ret = tier_write_str("/proc/self/clear_refs", "1");

	return ret ? ret : tier_flush_tlb(regions, nr);
}

double tier_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Read one word of every page of @regions. */
void tier_touch(const struct tier_region *regions, int nr)
{
	size_t psz = tier_page_size(), off;
	unsigned long word;
	int i;

	for (i = 0; i < nr; i++) {
		for (off = 0; off < regions[i].size; off += psz) {
			word = *(unsigned long *)(regions[i].addr + off);
			tier_keep(word);
		}
	}
}

/*
 * Wait until @cond(@arg) holds or @timeout_ms has passed, touching the
 * @nr_hot regions of @hot all the while so that they stay hot. Returns
 * whether @cond held. The condition is tested once more at the deadline.
 */
bool tier_wait(const struct tier_region *hot, int nr_hot, tier_cond_fn cond,
	       void *arg, unsigned int timeout_ms)
{
	double deadline = tier_now() + timeout_ms / 1000.0;
	double next;

	for (;;) {
		if (cond(arg))
			return true;
		if (tier_now() >= deadline)
			return false;
		next = tier_now() + TIER_POLL_MS / 1000.0;
		if (next > deadline)
			next = deadline;
		if (nr_hot) {
			do {
				tier_touch(hot, nr_hot);
			} while (tier_now() < next);
		} else {
			usleep(TIER_POLL_MS * 1000);
		}
	}
	return false;
}

/* Condition: at least @percent of @region's pages are on @node. */
void tier_share_init(struct tier_share *share,
		     const struct tier_region *region, int node,
		     unsigned int percent)
{
	unsigned long nr = tier_nr_pages(region);

	share->region = *region;
	share->node = node;
	share->min_pages = (nr * percent + 99) / 100;
	share->last_pages = 0;
}

bool tier_share_reached(void *arg)
{
	struct tier_share *share = arg;
	long n = tier_pages_on_node(&share->region, share->node);

	if (n < 0)
		return false;
	share->last_pages = n;
	return (unsigned long)n >= share->min_pages;
}

bool tier_counter_reached(void *arg)
{
	struct tier_counter *counter = arg;

	/* Without it, the wait covers the lag. */
	tier_vmstat_refresh();
	if (tier_vmstat(counter->name, &counter->last))
		return false;
	return counter->last >= counter->min;
}
