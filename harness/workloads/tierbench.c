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
 * -o places the hot set (every page that is ever hot) on the fast node
 * before the run: the oracle.  -F MiB first fills the fast node with cold
 * memory of the parent's until only MiB are left free.
 *
 * Lines:
 *   S t=<s> hot=<pct> cold=<pct> ops=<n> promoted=<pages> ptes=<n>
 *   R key=value ...          (see print_result())
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <numaif.h>
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

#define MIB		(1UL << 20)
#define CACHE_LINE	64
/* Accesses between two looks at the clock and the stop flag. */
#define BATCH		16384
#define MAX_WORKERS	256
#define MAX_SAMPLES	4096
#define MAX_PHASES	64
/* Zipf exponent of pattern zipf: 1 is the classic web/cache skew. */
#define ZIPF_S		1.0

enum pattern { UNIFORM, ZIPF, MOVING };

struct opts {
	enum pattern pattern;
	size_t size, hot;	/* bytes per worker */
	int slow, fast, workers, oracle;
	double secs, interval, move_period;
	unsigned long seed;
	long fill_leave_mib;	/* -1: no filler */
};

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
	volatile int go, stop;
	volatile double t0;
	struct worker_pub w[MAX_WORKERS];
};

struct sample {
	double t, hot, cold;
	unsigned long ops, promoted, ptes;
};

static struct opts o = {
	.pattern = UNIFORM, .size = 768 * MIB, .hot = 192 * MIB, .slow = 1,
	.fast = 0, .workers = 1, .secs = 20, .interval = 0.5,
	.move_period = 8, .seed = 42, .fill_leave_mib = -1,
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

static void move_to(char *base, const size_t *order, size_t n, int node)
{
	void **pages = xmalloc(n * sizeof(*pages));
	int *nodes = xmalloc(n * sizeof(*nodes));
	int *status = xmalloc(n * sizeof(*status));
	size_t i;

	for (i = 0; i < n; i++) {
		pages[i] = base + order[i] * psz;
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

static void worker(int id)
{
	size_t npages = o.size / psz, lines = psz / CACHE_LINE;
	uint64_t x = 88172645463325252ULL ^ (o.seed * 2654435761UL + id);
	size_t *order = page_order(npages, o.seed + id);
	double *cdf = o.pattern == ZIPF ? zipf_cdf(npages) : NULL;
	struct worker_pub *me = &sh->w[id];
	char *base = place_memory(order);
	unsigned long ops = 0;
	struct rusage r0, r1;

	me->base = base;
	me->pid = getpid();
	__sync_synchronize();
	me->ready = 1;
	while (!sh->go)
		usleep(1000);
	getrusage(RUSAGE_SELF, &r0);
	while (!sh->stop) {
		double t = now() - sh->t0;
		int i;

		for (i = 0; i < BATCH; i++) {
			size_t pg = hot_page(order, cdf, npages, t, &x);

			base[pg * psz + (xorshift(&x) % lines) * CACHE_LINE]++;
		}
		ops += BATCH;
		me->ops = ops;
	}
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

/* Cold memory of our own on the fast node, until only @leave MiB are free. */
static void fill_fast_node(long leave)
{
	long want = node_free_mib(o.fast) - leave;
	char *p;

	if (want <= 0)
		return;
	p = mmap(NULL, want * MIB, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		die("mmap (filler)");
	/* Preferred, not bound: demotion may move it to the slow node. */
	{
		unsigned long mask = 1UL << o.fast;

		if (set_mempolicy(MPOL_PREFERRED, &mask, 64))
			die("set_mempolicy (filler)");
	}
	memset(p, 2, want * MIB);
	set_mempolicy(MPOL_DEFAULT, NULL, 0);
	printf("filler: %ld MiB on node %d, %ld MiB left free\n", want, o.fast,
	       node_free_mib(o.fast));
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

/* CPU seconds used so far by the kernel thread named @comm (0: none). */
static double kthread_cpu(const char *comm)
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
		if (!p || strncmp(p + 1, comm, strlen(comm)) ||
		    p[1 + strlen(comm)] != ')')
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

/* Per worker: page addresses in rank order and the last node seen. */
struct watch {
	void **pages;
	int *status;
	signed char *was_fast;	/* -1 never fast, 1 fast now, 0 left fast */
};

static struct watch *watch;
static unsigned long pingpong;

static void watch_init(size_t npages)
{
	int w;

	watch = xmalloc(o.workers * sizeof(*watch));
	for (w = 0; w < o.workers; w++) {
		size_t *order = page_order(npages, o.seed + w);
		size_t i;

		watch[w].pages = xmalloc(npages * sizeof(void *));
		watch[w].status = xmalloc(npages * sizeof(int));
		watch[w].was_fast = xmalloc(npages);
		for (i = 0; i < npages; i++) {
			watch[w].pages[i] = sh->w[w].base + order[i] * psz;
			watch[w].was_fast[i] = -1;
		}
		free(order);
	}
}

/* Hot pages of the current phase and cold ones (all others) on fast, %. */
static void sample_placement(size_t npages, double t, double *hot, double *cold)
{
	size_t hot_pages = o.hot / psz, hot_fast = 0, cold_fast = 0, ncold = 0;
	size_t phase = o.pattern == MOVING ?
		(size_t)(t / o.move_period) % nr_phases() : 0;
	int w;

	for (w = 0; w < o.workers; w++) {
		struct watch *wa = &watch[w];
		size_t i;

		if (move_pages(sh->w[w].pid, npages, wa->pages, NULL,
			       wa->status, 0) < 0)
			die("move_pages (sampling)");
		for (i = 0; i < npages; i++) {
			int fast = wa->status[i] >= 0 && wa->status[i] != o.slow;
			int is_hot = i >= phase * hot_pages &&
				     i < (phase + 1) * hot_pages;

			if (fast && wa->was_fast[i] != 1)
				wa->was_fast[i] = 1;
			else if (!fast && wa->was_fast[i] == 1) {
				wa->was_fast[i] = 0;
				pingpong++;
			}
			if (is_hot)
				hot_fast += fast;
			else {
				cold_fast += fast;
				ncold++;
			}
		}
	}
	*hot = 100.0 * hot_fast / (hot_pages * o.workers);
	*cold = ncold ? 100.0 * cold_fast / ncold : 0;
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

static void print_result(const struct sample *s, int n, double kcpu,
			 double app_sys, double app_user,
			 unsigned long hint_faults, unsigned long demoted)
{
	double t50 = crossing(s, n, 0, 50), t90 = crossing(s, n, 0, 90);
	double peak = 0, last_t = s[n - 1].t, tail_from = last_t * 0.75;
	unsigned long promoted = s[n - 1].promoted;
	int i, tail = 0, converged = t90 >= 0;
	double t_active = 0;

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
	       "hint_faults=%lu pingpong_pages=%lu demoted_pages=%lu\n",
	       t50, t90, converged, s[n - 1].cold, s[n - 1].hot, s[n - 1].ops,
	       s[n - 1].ops / last_t,
	       tail && tail < n - 1 ?
	       (s[n - 1].ops - s[tail].ops) / (last_t - s[tail].t) : 0,
	       promoted, promoted * (double)psz / MIB,
	       t_active > 0 ? promoted * (double)psz / MIB / t_active : 0,
	       peak, s[n - 1].ptes, kcpu, app_sys, app_user,
	       hint_faults, pingpong, demoted);
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
		if (!pid)
			worker(w);
	}
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

static void run(void)
{
	size_t npages = o.size / psz;
	struct sample *s = xmalloc(MAX_SAMPLES * sizeof(*s));
	unsigned long p0, pt0, hf0, dm0;
	double k0, next, app_sys = 0, app_user = 0;
	int n = 0, w;

	if (o.fill_leave_mib >= 0)
		fill_fast_node(o.fill_leave_mib);
	start_workers();
	watch_init(npages);
	p0 = vmstat("pgpromote_success");
	pt0 = ptes_examined();
	hf0 = vmstat("numa_hint_faults");
	dm0 = vmstat("pgdemote_");
	k0 = kthread_cpu("kmmscand");
	sh->t0 = now();
	__sync_synchronize();
	sh->go = 1;
	next = sh->t0;
	while (n < MAX_SAMPLES) {
		struct sample *c = &s[n];

		next += o.interval;
		while (now() < next)
			usleep(2000);
		c->t = now() - sh->t0;
		c->ops = total_ops();
		c->promoted = vmstat("pgpromote_success") - p0;
		c->ptes = ptes_examined() - pt0;
		sample_placement(npages, c->t, &c->hot, &c->cold);
		printf("S t=%.2f hot=%.1f cold=%.2f ops=%lu promoted=%lu ptes=%lu\n",
		       c->t, c->hot, c->cold, c->ops, c->promoted, c->ptes);
		fflush(stdout);
		n++;
		if (c->t >= o.secs)
			break;
	}
	sh->stop = 1;
	for (w = 0; w < o.workers; w++) {
		waitpid(sh->w[w].pid, NULL, 0);
		app_sys += sh->w[w].sys_s;
		app_user += sh->w[w].user_s;
	}
	print_result(s, n, kthread_cpu("kmmscand") - k0, app_sys, app_user,
		     vmstat("numa_hint_faults") - hf0, vmstat("pgdemote_") - dm0);
}

static void usage(const char *prog)
{
	fprintf(stderr,
		"usage: %s [-p uniform|zipf|moving] [-s MiB] [-H MiB] [-P workers]\n"
		"       [-t s] [-i ms] [-m s] [-S seed] [-n slow] [-f fast] [-o] [-F MiB]\n",
		prog);
	exit(2);
}

static void parse(int argc, char **argv)
{
	int opt;

	while ((opt = getopt(argc, argv, "p:s:H:P:t:i:m:S:n:f:oF:")) != -1) {
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
		case 'P': o.workers = atoi(optarg); break;
		case 't': o.secs = atof(optarg); break;
		case 'i': o.interval = atof(optarg) / 1000; break;
		case 'm': o.move_period = atof(optarg); break;
		case 'S': o.seed = strtoul(optarg, NULL, 0); break;
		case 'n': o.slow = atoi(optarg); break;
		case 'f': o.fast = atoi(optarg); break;
		case 'o': o.oracle = 1; break;
		case 'F': o.fill_leave_mib = atol(optarg); break;
		default: usage(argv[0]);
		}
	}
	if (!o.hot || o.hot > o.size || o.workers < 1 ||
	    o.workers > MAX_WORKERS || o.secs <= 0 || o.interval <= 0 ||
	    o.move_period <= 0 || o.slow < 0 || o.slow >= 64 || o.fast < 0 ||
	    o.fast >= 64)
		usage(argv[0]);
}

int main(int argc, char **argv)
{
	psz = sysconf(_SC_PAGESIZE);
	parse(argc, argv);
	o.size -= o.size % psz;
	o.hot -= o.hot % psz;
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED)
		die("mmap (shared)");
	setvbuf(stdout, NULL, _IOLBF, 0);
	run();
	return 0;
}
