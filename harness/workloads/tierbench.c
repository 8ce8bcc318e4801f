// SPDX-License-Identifier: GPL-2.0
/*
 * tierbench: the make bench workload.
 *
 * Workers (processes) each map SIZE MiB of anonymous memory, fault it in on
 * the slow node, and then access a hot part of it for SECONDS.  The parent
 * does no access of its own: it samples, every interval, where each
 * worker's pages are (move_pages() on the worker's pid) and what
 * /proc/vmstat says, and prints one line per sample and one result line.
 *
 * Access patterns (-p):
 *   uniform  uniformly random cache lines within the hot part
 *   zipf     Zipf-like (exponent 1) over all pages, ranks shuffled; the hot
 *            set is the HOT MiB of highest rank
 *   moving   uniform within a hot window that moves to the next HOT MiB
 *            slice every -m seconds
 *
 * -P takes a worker count, or groups of workers of their own sizes:
 * "-P 4:256,64:8" is 4 workers of 256 MiB and 64 of 8 MiB, each with the
 * hot share -H / -s of its own mapping (pattern uniform only).  The
 * result line gives, besides the times of the whole workload, each
 * worker's own time to 90% of its hot set: the slowest, the median and how
 * many got there.
 *
 * -T N runs N threads in each worker, all accessing its hot part with the
 * same pattern, each with its own random stream: one process whose hint
 * faults (or TLB flushes) come from many CPUs at once.
 *
 * -k PAGES bounds what a sample costs with many workers: the sampler then
 * looks at a fixed PAGES pages of each worker (at most), half of them
 * spread evenly over its ever-hot pages and the rest over the others, each
 * standing for its share of its part, so a sample asks move_pages() about
 * at most workers * PAGES pages whatever the sizes.  The figures of a
 * sample are then estimates; without -k every page is looked at.  With -k,
 * or more than one worker, the sampler runs at real-time priority
 * (SCHED_FIFO), so that its share of the CPUs does not fall as 1 / workers
 * and samples keep their interval: it sleeps between samples, and -k
 * bounds how long it runs in one.
 *
 * -o places the hot set (every page that is ever hot) on the fast node
 * before the run: the oracle.  -F MiB first fills the fast node with cold
 * memory of the parent's, which the workers do not map (MADV_DONTFORK),
 * until only MiB are left free; with -w, MiB above the node's high
 * watermark.  -L locks that filler (mlock), so that
 * nothing can demote it and the fast node stays capped.
 *
 * -r FILE: once every worker has placed its memory, and before the run
 * starts, write the workers' pids to FILE, one a line, and only then give
 * it its name (a rename), so that a script waiting for FILE finds it
 * whole: bench.sh turns DAMON on there.
 *
 * Every access pattern has a known probability per page (its weight), so
 * each sample also gives the share of the accesses that the fast node
 * serves (hit) and the best share the same number of fast-node pages could
 * serve, had they been the most accessed pages (ohit).
 *
 * Lines:
 *   S t=<s> hot=<pct> cold=<pct> ops=<n> promoted=<pages> ptes=<n>
 *     hit=<share> ohit=<share> fast=<pages> fmin=<MiB>
 *   R key=value ...          (see print_result())
 *   V counter=delta ...      (see print_vmstat_deltas())
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <numaif.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "vmstat_delta.h"

#define MIB		(1UL << 20)
#define CACHE_LINE	64
/* Accesses between two looks at the clock and the stop flag. */
#define BATCH		16384
#define MAX_WORKERS	1024
/* Threads -T may run in each worker */
#define MAX_THREADS	64
/* Groups of workers of one size that -P may name. */
#define MAX_GROUPS	16
#define MAX_SAMPLES	4096
#define MAX_PHASES	64
/* Zipf exponent of pattern zipf: 1 is the classic web/cache skew. */
#define ZIPF_S		1.0
/*
 * How often the parent looks at the fast node's free pages against its
 * min watermark between two samples: a dip shorter than this is missed.
 */
#define ZONEINFO_PERIOD	0.05

enum pattern { UNIFORM, ZIPF, MOVING };

struct opts {
	enum pattern pattern;
	size_t size, hot;	/* bytes per worker */
	int slow, fast, workers, oracle;
	double secs, interval, move_period;
	unsigned long seed;
	long fill_leave_mib;	/* -1: no filler */
	int fill_above_high;	/* fill_leave_mib counts above high wmark */
	int fill_lock;		/* mlock the filler: it cannot be demoted */
	size_t sample_pages;	/* -k: pages sampled per worker, 0: all */
	int mixed;		/* -P with groups: sizes of their own */
	int threads;		/* -T: accessing threads per worker */
	const char *ready_file;	/* -r: workers' pids, once placed */
};

/*
 * Each worker's mapping and hot part, pages: o.size and o.hot, or its
 * group's with -P N:MiB,...  A worker sets o.size and o.hot to its own.
 */
static size_t w_pages[MAX_WORKERS], w_hot_pages[MAX_WORKERS];

/* What a worker publishes to the parent (shared anonymous memory). */
struct worker_pub {
	volatile pid_t pid;
	volatile int ready;
	char *volatile base;
	volatile unsigned long ops;
	/* CPU time spent during the run (not placing memory), seconds */
	volatile double sys_s, user_s;
};

struct shared {
	volatile int place, go, stop;
	volatile double t0;
	struct worker_pub w[MAX_WORKERS];
};

struct sample {
	double t, hot, cold;
	unsigned long ops, promoted, ptes;
	double hit, ohit;	/* shares of the accesses, see sample_placement() */
	unsigned long fast;	/* the workload's pages on the fast node */
	double fmin_mib;	/* lowest free - min of a fast-node zone, since the last */
};

static struct opts o = {
	.pattern = UNIFORM, .size = 768 * MIB, .hot = 192 * MIB, .slow = 1,
	.fast = 0, .workers = 1, .secs = 20, .interval = 0.5,
	.move_period = 8, .seed = 42, .fill_leave_mib = -1, .threads = 1,
};
static long psz;
static struct shared *sh;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void die(const char *what)
{
	fprintf(stderr, "tierbench: %s: %s\n", what, strerror(errno));
	exit(2);
}

static void *xmalloc(size_t n)
{
	void *p = calloc(1, n);

	if (!p)
		die("calloc");
	return p;
}

static uint64_t xorshift(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

/* ---- page order: which pages form the hot set ---- */

/*
 * order[i] is the page index of rank i; the hot set is ranks [0, hot
 * pages).  uniform and moving keep the identity; zipf shuffles, so hot pages
 * are spread over the whole mapping as in a real skewed workload.
 */
static size_t *page_order(size_t npages, uint64_t seed)
{
	size_t *order = xmalloc(npages * sizeof(*order));
	size_t i;

	for (i = 0; i < npages; i++)
		order[i] = i;
	if (o.pattern != ZIPF)
		return order;
	for (i = npages - 1; i > 0; i--) {
		size_t j = xorshift(&seed) % (i + 1), t = order[i];

		order[i] = order[j];
		order[j] = t;
	}
	return order;
}

static double *zipf_cdf(size_t npages)
{
	double *cdf = xmalloc(npages * sizeof(*cdf)), sum = 0;
	size_t i;

	for (i = 0; i < npages; i++) {
		sum += 1.0 / pow(i + 1, ZIPF_S);
		cdf[i] = sum;
	}
	for (i = 0; i < npages; i++)
		cdf[i] /= sum;
	return cdf;
}

static size_t zipf_rank(const double *cdf, size_t n, uint64_t *x)
{
	double u = (xorshift(x) >> 11) * (1.0 / 9007199254740992.0);
	size_t lo = 0, hi = n - 1;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (cdf[mid] < u)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static int nr_phases(void)
{
	int n;

	if (o.pattern != MOVING)
		return 1;
	n = (int)ceil(o.secs / o.move_period);
	if (n > (int)(o.size / o.hot))
		n = o.size / o.hot;
	return n < 1 ? 1 : n;
}

/* Pages that are hot at some time: the oracle puts these on the fast node. */
static size_t ever_hot_pages(void)
{
	return nr_phases() * (o.hot / psz);
}

/* ---- placement ---- */

static void bind_to(int node)
{
	unsigned long mask = 1UL << node;

	if (set_mempolicy(MPOL_BIND, &mask, 64))
		die("set_mempolicy");
}

/*
 * Moves the pages of ranks [0, @n) to @node, the most accessed last: they
 * are then the newest on the node's LRU, so that if the move has to make
 * room by reclaim (a node capped by -F), it demotes the least accessed.
 */
static void move_to(char *base, const size_t *order, size_t n, int node)
{
	void **pages = xmalloc(n * sizeof(*pages));
	int *nodes = xmalloc(n * sizeof(*nodes));
	int *status = xmalloc(n * sizeof(*status));
	size_t i;

	for (i = 0; i < n; i++) {
		pages[i] = base + order[n - 1 - i] * psz;
		nodes[i] = node;
	}
	if (move_pages(0, n, pages, nodes, status, MPOL_MF_MOVE) < 0)
		die("move_pages (oracle placement)");
	free(pages);
	free(nodes);
	free(status);
}

static char *place_memory(const size_t *order)
{
	char *base = mmap(NULL, o.size, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (base == MAP_FAILED)
		die("mmap");
	bind_to(o.slow);
	memset(base, 1, o.size);
	set_mempolicy(MPOL_DEFAULT, NULL, 0);
	if (o.oracle)
		move_to(base, order, ever_hot_pages(), o.fast);
	return base;
}

/* ---- worker ---- */

static double tv_diff(const struct timeval *a, const struct timeval *b)
{
	return (a->tv_sec - b->tv_sec) + (a->tv_usec - b->tv_usec) / 1e6;
}

static size_t hot_page(const size_t *order, const double *cdf, size_t npages,
		       double t, uint64_t *x)
{
	size_t hot_pages = o.hot / psz;

	switch (o.pattern) {
	case ZIPF:
		return order[zipf_rank(cdf, npages, x)];
	case MOVING: {
		size_t phase = (size_t)(t / o.move_period) % nr_phases();

		return phase * hot_pages + xorshift(x) % hot_pages;
	}
	default:
		return xorshift(x) % hot_pages;
	}
}


/* Wait until the parent sets @flag; hundreds of waiters keep no CPU busy */
static void wait_for_parent(volatile int *flag)
{
	while (!*flag)
		usleep(o.workers > 64 ? 10000 : 1000);
}

/* One accessing thread of a worker: its random stream and its count */
struct accessor {
	pthread_t thread;
	char *base;
	const size_t *order;
	const double *cdf;
	size_t npages;
	uint64_t x;
	volatile unsigned long ops;
};

/* One batch of accesses to the hot part, as it is at this time */
static void access_batch(struct accessor *a)
{
	size_t lines = psz / CACHE_LINE;
	double t = now() - sh->t0;
	int i;

	for (i = 0; i < BATCH; i++) {
		size_t pg = hot_page(a->order, a->cdf, a->npages, t, &a->x);

		a->base[pg * psz + (xorshift(&a->x) % lines) * CACHE_LINE]++;
	}
	a->ops += BATCH;
}

/* An extra accessor thread: access until the parent says stop. */
static void *access_loop(void *arg)
{
	while (!sh->stop)
		access_batch(arg);
	return NULL;
}

/*
 * The worker's own thread accesses too, and publishes the ops of all @n
 * accessors, so that the parent sees one count per worker.
 */
static void access_and_publish(struct accessor *acc, int n,
			       volatile unsigned long *ops)
{
	while (!sh->stop) {
		unsigned long sum = 0;
		int i;

		access_batch(&acc[0]);
		for (i = 0; i < n; i++)
			sum += acc[i].ops;
		*ops = sum;
	}
}

static void worker(int id)
{
	size_t npages = o.size / psz;
	size_t *order = page_order(npages, o.seed + id);
	double *cdf = o.pattern == ZIPF ? zipf_cdf(npages) : NULL;
	struct worker_pub *me = &sh->w[id];
	struct accessor acc[MAX_THREADS];
	struct rusage r0, r1;
	unsigned long sum = 0;
	char *base;
	int i;

	wait_for_parent(&sh->place);
	base = place_memory(order);
	me->base = base;
	me->pid = getpid();
	__sync_synchronize();
	me->ready = 1;
	wait_for_parent(&sh->go);
	getrusage(RUSAGE_SELF, &r0);
	for (i = 0; i < o.threads; i++) {
		acc[i] = (struct accessor){
			.base = base, .order = order, .cdf = cdf,
			.npages = npages,
			.x = 88172645463325252ULL ^
			     (o.seed * 2654435761UL + id * MAX_THREADS + i),
		};
		if (i && pthread_create(&acc[i].thread, NULL, access_loop,
					&acc[i]))
			die("pthread_create (accessor)");
	}
	access_and_publish(acc, o.threads, &me->ops);
	for (i = 1; i < o.threads; i++)
		pthread_join(acc[i].thread, NULL);
	for (i = 0; i < o.threads; i++)
		sum += acc[i].ops;
	me->ops = sum;
	getrusage(RUSAGE_SELF, &r1);
	me->sys_s = tv_diff(&r1.ru_stime, &r0.ru_stime);
	me->user_s = tv_diff(&r1.ru_utime, &r0.ru_utime);
	exit(0);
}

/* ---- parent: filler, sampling, results ---- */

static long node_free_mib(int node)
{
	char path[96], line[256];
	long kb = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/sys/devices/system/node/node%d/meminfo",
		 node);
	f = fopen(path, "r");
	if (!f)
		die(path);
	while (fgets(line, sizeof(line), f))
		if (strstr(line, "MemFree:"))
			sscanf(strstr(line, "MemFree:") + 8, "%ld", &kb);
	fclose(f);
	return kb / 1024;
}

/* ---- the fast node's watermarks (/proc/zoneinfo) ---- */

struct node_marks {
	long high;		/* sum over the node's zones, pages */
	long free_over_min;	/* lowest free - min of one of its zones, pages */
	int unreclaimable;	/* kswapd has given the node up */
};

/* The figures of a zone, as /proc/zoneinfo lists them before "managed". */
struct zone_figures {
	long free, min, high;
};

static void add_zone(struct node_marks *m, const struct zone_figures *z)
{
	m->high += z->high;
	if (z->free - z->min < m->free_over_min)
		m->free_over_min = z->free - z->min;
}

/* Watermarks of the populated zones of @node. */
static struct node_marks node_marks(int node)
{
	struct node_marks m = { .high = 0, .free_over_min = LONG_MAX,
				.unreclaimable = 0 };
	struct zone_figures z = { 0, 0, 0 };
	FILE *f = fopen("/proc/zoneinfo", "r");
	char line[256], zone[32];
	int cur = -1, gave_up;
	long managed;

	if (!f)
		die("/proc/zoneinfo");
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "Node %d, zone %31s", &cur, zone) == 2)
			continue;
		if (cur != node)
			continue;
		if (sscanf(line, " pages free %ld", &z.free) == 1 ||
		    sscanf(line, " min %ld", &z.min) == 1 ||
		    sscanf(line, " high %ld", &z.high) == 1)
			continue;
		/* "managed" ends the figures of a zone */
		if (sscanf(line, " managed %ld", &managed) == 1 && managed > 0)
			add_zone(&m, &z);
		if (sscanf(line, " node_unreclaimable: %d", &gave_up) == 1)
			m.unreclaimable |= gave_up;
	}
	fclose(f);
	return m;
}

static double pages_mib(long pages)
{
	return (double)pages * psz / MIB;
}

/* MiB free on the fast node, above its high watermark with -w. */
static long fast_room_mib(void)
{
	long room = node_free_mib(o.fast);

	if (o.fill_above_high)
		room -= (long)pages_mib(node_marks(o.fast).high);
	return room;
}

/*
 * Gives the end of the filler (@mib MiB at @p) back until the fast node
 * has @leave MiB of room again, if filling took more than asked: page
 * tables and the pages that fell back to the slow node below the low
 * watermark.  Returns the MiB left.
 */
static long trim_filler(char *p, long mib, long leave)
{
	while (mib > 0 && fast_room_mib() < leave) {
		mib--;
		if (munmap(p + mib * MIB, MIB))
			die("munmap (filler)");
	}
	return mib;
}

/*
 * Cold memory of our own on the fast node, until only @leave MiB are free
 * (above the high watermark with -w).  Preferred, not bound: demotion may
 * move it to the slow node, unless -L locks it there.
 */
static void fill_fast_node(long leave)
{
	unsigned long mask = 1UL << o.fast;
	long want = fast_room_mib() - leave;
	char *p;

	if (want <= 0)
		return;
	p = mmap(NULL, want * MIB, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		die("mmap (filler)");
	/*
	 * The filler stands for other processes' memory: the workers must not
	 * map it, or kmmscand would scan it in every one of them.
	 */
	if (madvise(p, want * MIB, MADV_DONTFORK))
		die("madvise (filler)");
	if (set_mempolicy(MPOL_PREFERRED, &mask, 64))
		die("set_mempolicy (filler)");
	/* mlock() faults every page in, for writing: no memset needed */
	if (o.fill_lock) {
		if (mlock(p, want * MIB))
			die("mlock (filler)");
	} else {
		memset(p, 2, want * MIB);
	}
	set_mempolicy(MPOL_DEFAULT, NULL, 0);
	want = trim_filler(p, want, leave);
	printf("filler: %ld MiB%s on node %d, %ld MiB left free, %.0f MiB "
	       "above the high watermark\n", want,
	       o.fill_lock ? " locked" : "", o.fast, node_free_mib(o.fast),
	       node_free_mib(o.fast) - pages_mib(node_marks(o.fast).high));
}

static unsigned long vmstat(const char *key)
{
	char name[128];
	unsigned long v, sum = 0;
	size_t klen = strlen(key);
	FILE *f = fopen("/proc/vmstat", "r");

	if (!f)
		die("/proc/vmstat");
	while (fscanf(f, "%127s %lu", name, &v) == 2)
		if (!strncmp(name, key, klen) && (key[klen - 1] == '_' ||
						  !name[klen]))
			sum += v;
	fclose(f);
	return sum;
}

/*
 * Whether @name (a comm as /proc/PID/stat shows it, after its '(') is
 * @prefix, with a number after it (a node's, a kdamond's index) or not,
 * then ')'.
 */
static int comm_is(const char *name, const char *prefix)
{
	size_t len = strlen(prefix);

	if (strncmp(name, prefix, len))
		return 0;
	name += len;
	while (isdigit((unsigned char)*name))
		name++;
	return *name == ')';
}

/*
 * CPU seconds used so far by the kernel threads named @prefix, with or
 * without a node number (kswapd0, kswapd1, ...); 0 if there are none.
 */
static double kthread_cpu(const char *prefix)
{
	double hz = sysconf(_SC_CLK_TCK), cpu = 0;
	struct dirent *d;
	DIR *proc = opendir("/proc");
	char path[300], buf[512];

	while (proc && (d = readdir(proc))) {
		unsigned long ut, st;
		char *p;
		FILE *f;

		if (!isdigit(d->d_name[0]))
			continue;
		snprintf(path, sizeof(path), "/proc/%s/stat", d->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (!fgets(buf, sizeof(buf), f))
			buf[0] = 0;
		fclose(f);
		p = strchr(buf, '(');
		if (!p || !comm_is(p + 1, prefix))
			continue;
		p = strchr(p, ')');
		/* fields 14 and 15: utime, stime; p is just before field 3 */
		if (sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu",
			   &ut, &st) == 2)
			cpu += (ut + st) / hz;
	}
	if (proc)
		closedir(proc);
	return cpu;
}

/* ---- access weights: what share of the accesses each page gets ---- */

/* Pattern zipf's cumulative weights by rank, as the workers draw them. */
static double *rank_cdf;

static void weights_init(size_t npages)
{
	if (o.pattern == ZIPF)
		rank_cdf = zipf_cdf(npages);
}

/*
 * Share of a worker's accesses that go to its page of rank @i while the
 * hot part is @phase (uniform and zipf have the one phase 0), for a
 * worker with @hot_pages hot pages.
 */
static double rank_weight(size_t i, size_t phase, size_t hot_pages)
{
	if (o.pattern == ZIPF)
		return i ? rank_cdf[i] - rank_cdf[i - 1] : rank_cdf[0];
	if (i < phase * hot_pages || i >= (phase + 1) * hot_pages)
		return 0;
	return 1.0 / hot_pages;
}

/* Share of a worker's accesses that its @k most accessed pages get. */
static double top_share(size_t k, size_t npages)
{
	size_t hot_pages = o.hot / psz;

	if (!k)
		return 0;
	if (o.pattern == ZIPF)
		return rank_cdf[(k < npages ? k : npages) - 1];
	return k >= hot_pages ? 1 : (double)k / hot_pages;
}

/* Workers by hot pages, fewest first: -P groups, their best pages first. */
static int *by_hot;

static int cmp_hot(const void *a, const void *b)
{
	size_t x = w_hot_pages[*(const int *)a], y = w_hot_pages[*(const int *)b];

	return x < y ? -1 : x > y;
}

/*
 * The best hit @fast pages of the workload on the fast node could give:
 * the share of the accesses of its most accessed pages.  Every worker
 * gets an equal share of the accesses and the same weights by rank, so
 * the best pages are the top fast / workers ranks of each worker and the
 * next rank of fast % workers of them.  With -P groups (uniform only) a
 * hot page of a worker with fewer hot pages weighs more: those first.
 */
static double oracle_hit(size_t fast, size_t npages)
{
	size_t q = fast / o.workers, r = fast % o.workers;
	double next = top_share(q + 1, npages) - top_share(q, npages), hit = 0;
	int i;

	if (!o.mixed)
		return top_share(q, npages) + next * r / o.workers;
	for (i = 0; i < o.workers && fast; i++) {
		size_t hot = w_hot_pages[by_hot[i]];
		size_t take = fast < hot ? fast : hot;

		hit += (double)take / hot / o.workers;
		fast -= take;
	}
	return hit;
}

/* ---- where the pages are ---- */

/*
 * What the sampler has seen of a page: promoted is "on the fast node,
 * after having been seen on the slow one"; a promoted page seen on the
 * slow node again has ping-ponged.  Pages the oracle placed are not
 * promoted until they have been on the slow node once.
 */
enum page_seen {
	SEEN_SLOW	= 1,
	SEEN_PROMOTED	= 2,	/* now: cleared when seen slow again */
	SEEN_PINGPONG	= 4,	/* ever */
};

/*
 * Per worker: the pages the sampler looks at (every page, or those -k
 * picks), by rank, the pages each stands for, and what was seen of each;
 * the share of its hot set on the fast node at the last sample, and when
 * that first reached 90% (-1: not yet).
 */
struct watch {
	size_t n;
	void **pages;
	size_t *rank;
	double *stands_for;
	int *status;
	unsigned char *seen;
	double hot_pct, t90;
};

static struct watch *watch;
/*
 * Pages that ping-ponged at least once, and times a page ping-ponged
 * (estimates with -k: each watched page counts for those it stands for).
 */
static double pingpong_pages, pingpong_events;
/* The time of the last sample, for the workers' crossings. */
static double last_sample_t;

/* Adds ranks [@from, @from + @count) to @wa, @k of them spread evenly. */
static void watch_ranks(struct watch *wa, char *base, const size_t *order,
			size_t from, size_t count, size_t k)
{
	size_t j;

	for (j = 0; j < k; j++) {
		size_t i = from + j * count / k;

		wa->rank[wa->n] = i;
		wa->pages[wa->n] = base + order[i] * psz;
		wa->stands_for[wa->n] = (double)count / k;
		wa->n++;
	}
}

/*
 * Which pages of worker @w the sampler looks at: every one, or with -k at
 * most o.sample_pages, half of them over its ever-hot ranks (more if the
 * rest is short) and the others over the rest.  A sample then costs a
 * move_pages() of at most o.sample_pages pages per worker.
 */
static void watch_pick(struct watch *wa, int w)
{
	size_t npages = w_pages[w], k = o.sample_pages;
	size_t hot = nr_phases() * w_hot_pages[w], k_hot, k_cold;
	size_t *order = page_order(npages, o.seed + w);

	if (hot > npages)
		hot = npages;
	if (!k || k >= npages) {
		k_hot = hot;
		k_cold = npages - hot;
	} else {
		k_cold = npages - hot < k - k / 2 ? npages - hot : k - k / 2;
		k_hot = hot < k - k_cold ? hot : k - k_cold;
	}
	wa->n = 0;
	wa->pages = xmalloc((k_hot + k_cold) * sizeof(void *));
	wa->rank = xmalloc((k_hot + k_cold) * sizeof(size_t));
	wa->stands_for = xmalloc((k_hot + k_cold) * sizeof(double));
	wa->status = xmalloc((k_hot + k_cold) * sizeof(int));
	wa->seen = xmalloc(k_hot + k_cold);
	watch_ranks(wa, sh->w[w].base, order, 0, hot, k_hot);
	watch_ranks(wa, sh->w[w].base, order, hot, npages - hot, k_cold);
	wa->t90 = -1;
	free(order);
}

static void watch_init(size_t npages)
{
	int w;

	watch = xmalloc(o.workers * sizeof(*watch));
	by_hot = xmalloc(o.workers * sizeof(*by_hot));
	for (w = 0; w < o.workers; w++) {
		watch_pick(&watch[w], w);
		by_hot[w] = w;
	}
	qsort(by_hot, o.workers, sizeof(*by_hot), cmp_hot);
	weights_init(npages);
}

static void note_page(unsigned char *seen, int fast, double stands_for)
{
	if (fast) {
		if (*seen & SEEN_SLOW)
			*seen |= SEEN_PROMOTED;
		return;
	}
	if (*seen & SEEN_PROMOTED) {
		pingpong_events += stands_for;
		if (!(*seen & SEEN_PINGPONG))
			pingpong_pages += stands_for;
		*seen = (*seen & ~SEEN_PROMOTED) | SEEN_PINGPONG;
	}
	*seen |= SEEN_SLOW;
}

/*
 * A worker's hot share on the fast node is now @pct at @t: notes when it
 * first reached 90%, interpolated between samples as crossing() does.
 */
static void note_worker_hot(struct watch *wa, double t, double pct)
{
	if (wa->t90 < 0 && pct >= 90) {
		if (last_sample_t <= 0 || pct == wa->hot_pct)
			wa->t90 = t;
		else
			wa->t90 = last_sample_t + (t - last_sample_t) *
				  (90 - wa->hot_pct) / (pct - wa->hot_pct);
	}
	wa->hot_pct = pct;
}

/*
 * Fills @c's placement figures: the hot pages of the current phase and
 * the cold ones (all others) on the fast node, %; the workload's pages
 * there; the share of the accesses they serve (hit) and the best share
 * as many pages could serve (ohit).  Workers count equally in hit; the
 * shares count pages.  Also notes each worker's own hot share.
 */
static void sample_placement(size_t npages, struct sample *c)
{
	size_t phase = o.pattern == MOVING ?
		(size_t)(c->t / o.move_period) % nr_phases() : 0;
	double hit = 0, hot_fast = 0, cold_fast = 0, ncold = 0, nhot = 0;
	int w;

	for (w = 0; w < o.workers; w++) {
		struct watch *wa = &watch[w];
		size_t hot_pages = w_hot_pages[w], j;
		double w_hot_fast = 0;

		if (move_pages(sh->w[w].pid, wa->n, wa->pages, NULL,
			       wa->status, 0) < 0)
			die("move_pages (sampling)");
		for (j = 0; j < wa->n; j++) {
			size_t i = wa->rank[j];
			double m = wa->stands_for[j];
			int fast = wa->status[j] >= 0 && wa->status[j] != o.slow;
			int is_hot = i >= phase * hot_pages &&
				     i < (phase + 1) * hot_pages;

			if (wa->status[j] >= 0)
				note_page(&wa->seen[j], fast, m);
			if (fast)
				hit += rank_weight(i, phase, hot_pages) * m;
			if (is_hot)
				w_hot_fast += fast * m;
			else {
				cold_fast += fast * m;
				ncold += m;
			}
		}
		hot_fast += w_hot_fast;
		nhot += hot_pages;
		note_worker_hot(wa, c->t, 100.0 * w_hot_fast / hot_pages);
	}
	last_sample_t = c->t;
	c->fast = (unsigned long)(hot_fast + cold_fast + 0.5);
	c->hot = 100.0 * hot_fast / nhot;
	c->cold = ncold ? 100.0 * cold_fast / ncold : 0;
	c->hit = hit / o.workers;
	c->ohit = oracle_hit(c->fast, npages);
}

static unsigned long total_ops(void)
{
	unsigned long ops = 0;
	int w;

	for (w = 0; w < o.workers; w++)
		ops += sh->w[w].ops;
	return ops;
}

/* Time at which @pct was first reached, interpolated between samples. */
static double crossing(const struct sample *s, int n, int from, double pct)
{
	int i;

	for (i = from; i < n; i++) {
		if (s[i].hot < pct)
			continue;
		if (i == from || s[i].hot == s[i - 1].hot)
			return s[i].t;
		return s[i - 1].t + (s[i].t - s[i - 1].t) *
			(pct - s[i - 1].hot) / (s[i].hot - s[i - 1].hot);
	}
	return -1;
}

/*
 * Convergence of pattern moving: mean, over the phases, of the time from
 * the phase's start until 90% of its window is on the fast node; a phase
 * that never gets there counts as its whole length.
 */
static void phase_convergence(const struct sample *s, int n, double *t50,
			      double *t90, int *converged)
{
	double sum50 = 0, sum90 = 0;
	int p, phases = nr_phases();

	*converged = 0;
	for (p = 0; p < phases; p++) {
		double start = p * o.move_period, c50, c90;
		int i = 0;

		while (i < n && s[i].t < start + o.interval / 2)
			i++;
		c50 = crossing(s, n, i, 50);
		c90 = crossing(s, n, i, 90);
		if (c90 >= 0 && c90 < start + o.move_period)
			(*converged)++;
		sum50 += (c50 >= 0 && c50 < start + o.move_period) ?
			 c50 - start : o.move_period;
		sum90 += (c90 >= 0 && c90 < start + o.move_period) ?
			 c90 - start : o.move_period;
	}
	*t50 = sum50 / phases;
	*t90 = sum90 / phases;
}

/* What the run cost outside the workers, from its start to its end. */
struct run_cost {
	double kmmscand_cpu, kswapd_cpu, kcompactd_cpu, damon_cpu;
	unsigned long hint_faults, demoted, tlb_shootdowns;
	int unreclaimable;	/* kswapd had given the fast node up */
	struct vmstat_snap vm;
};

/*
 * TLB shootdown IPIs received by all CPUs so far: the "TLB" line of
 * /proc/interrupts (x86); 0 where there is none.
 */
static unsigned long tlb_shootdowns(void)
{
	FILE *f = fopen("/proc/interrupts", "r");
	unsigned long sum = 0;
	char line[4096];

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		char *p = line, *end;

		while (isspace((unsigned char)*p))
			p++;
		if (strncmp(p, "TLB:", 4))
			continue;
		for (p += 4;; p = end) {
			unsigned long v = strtoul(p, &end, 10);

			if (end == p)
				break;
			sum += v;
		}
		break;
	}
	fclose(f);
	return sum;
}

/*
 * CPU seconds used so far by kmmscand: the kernel's own count where it
 * keeps one (kmmscand_cpu_us: the thread and its migration workers, which
 * run as kworkers that /proc cannot tell apart from others), else the
 * kmmscand thread's.
 */
static double kmmscand_cpu(void)
{
	if (access("/sys/kernel/mm/kmmscand", F_OK))
		return kthread_cpu("kmmscand");
	return vmstat("kmmscand_cpu_us") / 1e6;
}

static void read_cost(struct run_cost *c)
{
	c->kmmscand_cpu = kmmscand_cpu();
	c->kswapd_cpu = kthread_cpu("kswapd");
	c->kcompactd_cpu = kthread_cpu("kcompactd");
	/* DAMON's monitoring threads: kdamond.0, kdamond.1, ... */
	c->damon_cpu = kthread_cpu("kdamond.");
	c->hint_faults = vmstat("numa_hint_faults");
	c->demoted = vmstat("pgdemote_");
	c->tlb_shootdowns = tlb_shootdowns();
	c->unreclaimable = node_marks(o.fast).unreclaimable;
	vmstat_snap(&c->vm);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/*
 * The workers' own times to 90% of their hot sets: the slowest (-1 if one
 * never got there), the median (-1 if half of them did not), and how
 * many got there.
 */
static void worker_t90(double *worst, double *median, int *reached)
{
	double *t = xmalloc(o.workers * sizeof(*t));
	int w, mid = (o.workers - 1) / 2;

	*reached = 0;
	for (w = 0; w < o.workers; w++) {
		/* never: after every time, for the sort */
		t[w] = watch[w].t90 >= 0 ? watch[w].t90 : INFINITY;
		*reached += watch[w].t90 >= 0;
	}
	qsort(t, o.workers, sizeof(*t), cmp_double);
	*worst = isinf(t[o.workers - 1]) ? -1 : t[o.workers - 1];
	*median = isinf(t[mid]) ? -1 : t[mid];
	free(t);
}

/*
 * The guest stalled: a real-time thread that sleeps STALL_TICK_S at a time
 * woke more than STALL_MIN_S late.  Nothing of the guest keeps such a
 * thread off both CPUs that long but kernel code that runs without a
 * preemption point on each of them, or the emulator not running the guest;
 * either way the run's figures say so (stall_total_s, stall_max_s).
 * A 10 ms tick resolves stalls of a few ticks at the cost of 100 wakeups a
 * second; 50 ms is above what a real-time wakeup under TCG takes when the
 * guest runs (a few ms), so only stalls count.
 */
#define STALL_TICK_S	0.010
#define STALL_MIN_S	0.050

static struct {
	volatile int stop;
	double total, max;
} stall;

static void *stall_watch(void *arg)
{
	struct sched_param sp = { .sched_priority = 2 };
	struct timespec tick = { 0, (long)(STALL_TICK_S * 1e9) };
	double last = now(), t, late;

	(void)arg;
	/* At normal priority, being kept waiting would count too: unknown */
	if (pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp)) {
		stall.total = stall.max = -1;
		return NULL;
	}
	while (!stall.stop) {
		nanosleep(&tick, NULL);
		t = now();
		late = t - last - STALL_TICK_S;
		last = t;
		if (late > STALL_MIN_S) {
			stall.total += late;
			if (late > stall.max)
				stall.max = late;
		}
	}
	return NULL;
}

static void print_result(const struct sample *s, int n,
			 const struct run_cost *c0, const struct run_cost *c1,
			 double app_sys, double app_user, long free_over_min)
{
	double t50 = crossing(s, n, 0, 50), t90 = crossing(s, n, 0, 90);
	double peak = 0, last_t = s[n - 1].t, tail_from = last_t * 0.75;
	unsigned long promoted = s[n - 1].promoted;
	int i, tail = 0, converged = t90 >= 0, procs_t90;
	double t_active = 0, t90_worst, t90_median;

	worker_t90(&t90_worst, &t90_median, &procs_t90);
	if (o.pattern == MOVING)
		phase_convergence(s, n, &t50, &t90, &converged);
	for (i = 1; i < n; i++) {
		double mbps = (s[i].promoted - s[i - 1].promoted) * psz / MIB /
			      (s[i].t - s[i - 1].t);

		if (mbps > peak)
			peak = mbps;
		if (s[i].promoted != s[i - 1].promoted)
			t_active = s[i].t;
		if (!tail && s[i].t >= tail_from)
			tail = i;
	}
	printf("R t50=%.2f t90=%.2f converged=%d cold_promoted_pct=%.2f "
	       "final_hot_pct=%.1f ops=%lu ops_per_s=%.0f tail_ops_per_s=%.0f "
	       "promoted_pages=%lu promoted_mb=%.1f mbps=%.1f peak_mbps=%.1f "
	       "ptes=%lu kmmscand_cpu_s=%.2f app_sys_s=%.2f app_user_s=%.2f "
	       "hint_faults=%lu pingpong_pages=%lu demoted_pages=%lu "
	       "pingpong_events=%lu kswapd_cpu_s=%.2f kcompactd_cpu_s=%.2f "
	       "final_hit=%.4f final_oracle_hit=%.4f final_fast_pages=%lu "
	       "min_free_over_min_mib=%.2f fast_unreclaimable_start=%d "
	       "fast_unreclaimable_end=%d t90_worst=%.2f t90_median=%.2f "
	       "procs_t90=%d damon_cpu_s=%.2f stall_total_s=%.2f "
	       "stall_max_s=%.2f tlb_shootdowns=%lu\n",
	       t50, t90, converged, s[n - 1].cold, s[n - 1].hot, s[n - 1].ops,
	       s[n - 1].ops / last_t,
	       tail && tail < n - 1 ?
	       (s[n - 1].ops - s[tail].ops) / (last_t - s[tail].t) : 0,
	       promoted, promoted * (double)psz / MIB,
	       t_active > 0 ? promoted * (double)psz / MIB / t_active : 0,
	       peak, s[n - 1].ptes, c1->kmmscand_cpu - c0->kmmscand_cpu,
	       app_sys, app_user, c1->hint_faults - c0->hint_faults,
	       (unsigned long)(pingpong_pages + 0.5), c1->demoted - c0->demoted,
	       (unsigned long)(pingpong_events + 0.5),
	       c1->kswapd_cpu - c0->kswapd_cpu,
	       c1->kcompactd_cpu - c0->kcompactd_cpu,
	       s[n - 1].hit, s[n - 1].ohit, s[n - 1].fast,
	       pages_mib(free_over_min), c0->unreclaimable, c1->unreclaimable,
	       t90_worst, t90_median, procs_t90,
	       c1->damon_cpu - c0->damon_cpu, stall.total, stall.max,
	       c1->tlb_shootdowns - c0->tlb_shootdowns);
	print_vmstat_deltas(&c0->vm, &c1->vm);
}

static unsigned long ptes_examined(void)
{
	/* kmmscand's walk, or NUMA balancing's PTE updates (its scan). */
	return vmstat("kmmscand_pte_scanned") + vmstat("numa_pte_updates");
}

static void start_workers(void)
{
	int w, ready;

	for (w = 0; w < o.workers; w++) {
		pid_t pid = fork();

		if (pid < 0)
			die("fork");
		if (!pid) {
			/* the worker's own size, for all that it calls */
			o.size = w_pages[w] * psz;
			o.hot = w_hot_pages[w] * psz;
			worker(w);
		}
	}
	/*
	 * Forked all before any places its memory: the forks would otherwise
	 * wait for CPUs behind the workers placing theirs and spread over
	 * 0.6 s with 64 of them, and with them the time each process is
	 * first looked at (kmmscand's scan_delay_ms, NUMA balancing's
	 * numa_balancing_scan_delay_ms, both counted from the fork).
	 */
	sh->place = 1;
	do {
		usleep(10000);
		if (waitpid(-1, NULL, WNOHANG) > 0) {
			fprintf(stderr, "tierbench: a worker died while placing its memory\n");
			exit(2);
		}
		for (ready = 0, w = 0; w < o.workers; w++)
			ready += sh->w[w].ready;
	} while (ready < o.workers);
}

/* -r: the workers' pids to o.ready_file, which appears whole. */
static void announce_placed(void)
{
	char tmp[PATH_MAX];
	FILE *f;
	int w;

	if (!o.ready_file)
		return;
	snprintf(tmp, sizeof(tmp), "%s.tmp", o.ready_file);
	f = fopen(tmp, "w");
	if (!f)
		die("-r file");
	for (w = 0; w < o.workers; w++)
		fprintf(f, "%d\n", (int)sh->w[w].pid);
	if (fclose(f) || rename(tmp, o.ready_file))
		die("-r file");
}

/*
 * Waits until @until, looking at the fast node's watermarks now and every
 * ZONEINFO_PERIOD; returns the lowest free - min of its zones seen, pages.
 * It looks once even if @until has passed (a sample that overran).
 */
static long wait_watching_free(double until)
{
	long lowest = node_marks(o.fast).free_over_min;
	double next_look = now() + ZONEINFO_PERIOD;

	while (now() < until) {
		if (now() >= next_look) {
			long v = node_marks(o.fast).free_over_min;

			if (v < lowest)
				lowest = v;
			next_look = now() + ZONEINFO_PERIOD;
		}
		usleep(2000);
	}
	return lowest;
}

static void print_sample(const struct sample *c)
{
	printf("S t=%.2f hot=%.1f cold=%.2f ops=%lu promoted=%lu ptes=%lu "
	       "hit=%.4f ohit=%.4f fast=%lu fmin=%.2f\n",
	       c->t, c->hot, c->cold, c->ops, c->promoted, c->ptes, c->hit,
	       c->ohit, c->fast, c->fmin_mib);
	fflush(stdout);
}

/*
 * With -k: the sampler runs before the workers whenever it is runnable,
 * or with many workers its share of the CPUs, and so the time a sample
 * takes, would grow with their number.  -k bounds the time it runs.
 */
static void sample_at_rt_priority(void)
{
	struct sched_param sp = { .sched_priority = 1 };

	if (sched_setscheduler(0, SCHED_FIFO, &sp))
		fprintf(stderr, "tierbench: no SCHED_FIFO for the sampler (%s): "
			"samples may take longer with many workers\n",
			strerror(errno));
}

static void run(void)
{
	size_t npages = o.size / psz;
	struct sample *s = xmalloc(MAX_SAMPLES * sizeof(*s));
	struct run_cost *c0 = xmalloc(sizeof(*c0)), *c1 = xmalloc(sizeof(*c1));
	unsigned long p0, pt0;
	double next, app_sys = 0, app_user = 0;
	long lowest = node_marks(o.fast).free_over_min;
	pthread_t watch_thread;
	int n = 0, w;

	if (o.fill_leave_mib >= 0)
		fill_fast_node(o.fill_leave_mib);
	start_workers();
	announce_placed();
	watch_init(npages);
	if (o.sample_pages || o.workers > 1)
		sample_at_rt_priority();
	p0 = vmstat("pgpromote_success");
	pt0 = ptes_examined();
	read_cost(c0);
	if (pthread_create(&watch_thread, NULL, stall_watch, NULL))
		die("pthread_create (stall watch)");
	sh->t0 = now();
	__sync_synchronize();
	sh->go = 1;
	next = sh->t0;
	while (n < MAX_SAMPLES) {
		struct sample *c = &s[n];
		long free_over_min;

		next += o.interval;
		free_over_min = wait_watching_free(next);
		if (free_over_min < lowest)
			lowest = free_over_min;
		c->fmin_mib = pages_mib(free_over_min);
		c->t = now() - sh->t0;
		c->ops = total_ops();
		c->promoted = vmstat("pgpromote_success") - p0;
		c->ptes = ptes_examined() - pt0;
		sample_placement(npages, c);
		print_sample(c);
		n++;
		if (c->t >= o.secs)
			break;
	}
	sh->stop = 1;
	stall.stop = 1;
	pthread_join(watch_thread, NULL);
	for (w = 0; w < o.workers; w++) {
		waitpid(sh->w[w].pid, NULL, 0);
		app_sys += sh->w[w].sys_s;
		app_user += sh->w[w].user_s;
	}
	read_cost(c1);
	print_result(s, n, c0, c1, app_sys, app_user, lowest);
}

static void usage(const char *prog)
{
	fprintf(stderr,
		"usage: %s [-p uniform|zipf|moving] [-s MiB] [-H MiB]\n"
		"       [-P workers|workers:MiB,...] [-k pages] [-t s] [-i ms]\n"
		"       [-m s] [-S seed] [-n slow] [-f fast] [-o] [-F MiB [-w] [-L]]\n"
		"       [-T threads] [-r ready-file]\n",
		prog);
	exit(2);
}

/*
 * -P: "N" workers of o.size, or "N:MiB,N:MiB,..." groups of their own
 * sizes, each with the hot share o.hot / o.size of its size (at least a
 * page).  Fills w_pages and w_hot_pages; returns 0 if @spec is invalid.
 */
static int parse_workers(const char *spec)
{
	double share = (double)o.hot / o.size;
	int groups = 0, w;

	o.workers = 0;
	if (!strchr(spec, ':')) {
		o.workers = atoi(spec);
		if (o.workers < 1 || o.workers > MAX_WORKERS)
			return 0;
		for (w = 0; w < o.workers; w++) {
			w_pages[w] = o.size / psz;
			w_hot_pages[w] = o.hot / psz;
		}
		return 1;
	}
	while (*spec) {
		char *end;
		long n = strtol(spec, &end, 10), mib;
		size_t pages;

		if (n < 1 || *end != ':' || o.workers + n > MAX_WORKERS ||
		    ++groups > MAX_GROUPS)
			return 0;
		mib = strtol(end + 1, &end, 10);
		if (mib < 1 || (*end && *end != ','))
			return 0;
		pages = mib * MIB / psz;
		while (n--) {
			w_pages[o.workers] = pages;
			w_hot_pages[o.workers] = share * pages > 1 ?
						 share * pages : 1;
			o.workers++;
		}
		spec = *end ? end + 1 : end;
	}
	/* sizes of their own: o.size and o.hot give the hot share only */
	o.mixed = 1;
	return o.workers > 0;
}

static void parse(int argc, char **argv)
{
	const char *workers = "1";
	int opt;

	while ((opt = getopt(argc, argv, "p:s:H:P:k:t:i:m:S:n:f:oF:wLT:r:")) != -1) {
		switch (opt) {
		case 'p':
			if (!strcmp(optarg, "uniform"))
				o.pattern = UNIFORM;
			else if (!strcmp(optarg, "zipf"))
				o.pattern = ZIPF;
			else if (!strcmp(optarg, "moving"))
				o.pattern = MOVING;
			else
				usage(argv[0]);
			break;
		case 's': o.size = strtoul(optarg, NULL, 0) * MIB; break;
		case 'H': o.hot = strtoul(optarg, NULL, 0) * MIB; break;
		case 'P': workers = optarg; break;
		case 'k': o.sample_pages = strtoul(optarg, NULL, 0); break;
		case 't': o.secs = atof(optarg); break;
		case 'i': o.interval = atof(optarg) / 1000; break;
		case 'm': o.move_period = atof(optarg); break;
		case 'S': o.seed = strtoul(optarg, NULL, 0); break;
		case 'n': o.slow = atoi(optarg); break;
		case 'f': o.fast = atoi(optarg); break;
		case 'o': o.oracle = 1; break;
		case 'F': o.fill_leave_mib = atol(optarg); break;
		case 'w': o.fill_above_high = 1; break;
		case 'L': o.fill_lock = 1; break;
		case 'T': o.threads = atoi(optarg); break;
		case 'r': o.ready_file = optarg; break;
		default: usage(argv[0]);
		}
	}
	o.size -= o.size % psz;
	o.hot -= o.hot % psz;
	if (!o.hot || o.hot > o.size || !parse_workers(workers) ||
	    (o.mixed && o.pattern != UNIFORM) || o.secs <= 0 || o.interval <= 0 ||
	    o.move_period <= 0 || o.slow < 0 || o.slow >= 64 || o.fast < 0 ||
	    o.fast >= 64 || o.threads < 1 || o.threads > MAX_THREADS)
		usage(argv[0]);
}

int main(int argc, char **argv)
{
	psz = sysconf(_SC_PAGESIZE);
	parse(argc, argv);
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED)
		die("mmap (shared)");
	setvbuf(stdout, NULL, _IOLBF, 0);
	run();
	return 0;
}
