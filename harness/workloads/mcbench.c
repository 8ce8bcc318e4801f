// SPDX-License-Identifier: GPL-2.0
/*
 * mcbench: the memcached client of make bench's server workloads (s), (u)
 * and (v).
 *
 * Debian's load generators (memaslap, memcslap) draw keys uniformly; this
 * one draws them from a Zipf distribution, or (-D) from a hot spot, so that
 * the server has a hot set smaller than its data.  It speaks memcached's
 * text protocol over TCP to 127.0.0.1.
 *
 *   mcbench load [options]       set every key once, in rank order (key 0
 *                                the most popular), checking every reply
 *   mcbench run -p PID [options] load, map, place, drive, verify:
 *
 * run loads the keys, then finds each key's item in the server's memory
 * (map_items(): it reads /proc/PID/mem once, before the run), pushes the
 * server's memory to the slow node with numactl's migratepages (no memory
 * policy: promotion may move it back), drives the server for -t seconds
 * with gets of keys drawn from that distribution, and finally gets every
 * key and checks its value.  -o (the oracle) then moves the pages of the
 * hot set back to the fast node before the run.  -R FILE: once the memory
 * is placed, create FILE.placed and wait for FILE.go to exist (bench.sh
 * turns DAMON on in between).
 *
 * Values are a function of the key and the seed (make_value()), so the
 * final pass can check every byte of every value without keeping a copy.
 * A value that differs, or a key that is missing, fails the run (exit
 * status 3) after the result line is printed.
 *
 * Keys are loaded in rank order, so memcached's slab allocator puts the hot
 * keys together.  The hot set is the top -H percent of the keys; its pages
 * are those that hold a byte of one of their items.  Every page holding
 * items gets the share of the gets that its bytes of each item take
 * (weight), as tierbench's pages do: a sample gives the share of the gets
 * that the fast node serves (hit) and the best share as many fast pages
 * could serve (ohit).
 *
 * run prints, every -i milliseconds, a line
 *   S t=<s> hot=<pct> cold=<pct> hit=<share> ohit=<share> fast=<pages>
 *     fast_mib=<MiB> slow_mib=<MiB> ops=<n> promoted=<pages> ptes=<n>
 *     migrated=<pages>
 * (hot, cold: the hot set's pages and the other item pages on the fast
 * node, %; fast: item pages on the fast node; fast_mib, slow_mib: all the
 * server's anonymous memory on each node, from /proc/PID/numa_maps), then
 * a result line "R key=value ..." and a line "V counter=delta ..." of
 * /proc/vmstat deltas over the run.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <numaif.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "vmstat_delta.h"

#define MIB		(1UL << 20)
#define MAX_CONNS	64
/* Keys of one verifying multi-get, and sets of one loading batch. */
#define BATCH		64
#define MAX_SAMPLES	4096
/* The server's reply to one get, at most: header, value, END. */
#define REPLY_EXTRA	128
/* A run's result fails on data loss with this exit status. */
#define EXIT_LOST	3

struct opts {
	int port, conns, fast, slow, interval_ms;
	pid_t pid;
	unsigned long keys, seed;
	size_t vlen;
	double secs, zipf_s, hot_pct;
	double hot_gets_pct;	/* -D: a hot spot with this share, not Zipf */
	long server_mib;	/* -M: memcached's -m, for the fit check */
	int oracle;		/* -o: the hot set back on the fast node */
	const char *rendezvous;	/* -R: FILE.placed, then wait for FILE.go */
};

static struct opts o = {
	.port = 21987, .conns = 4, .fast = 0, .slow = 1, .interval_ms = 1000,
	.keys = 524288, .seed = 42, .vlen = 1024, .secs = 20, .zipf_s = 1.0,
	.hot_pct = 25, .server_mib = -1,
};

static void die(const char *what)
{
	fprintf(stderr, "mcbench: %s: %s\n", what, strerror(errno));
	exit(2);
}

static void fail(const char *what)
{
	fprintf(stderr, "mcbench: %s\n", what);
	exit(2);
}

static void *xmalloc(size_t n)
{
	void *p = malloc(n);

	if (!p)
		fail("out of memory");
	return p;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static uint64_t mix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ULL;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

/* The value of key @k: vlen bytes of a stream seeded by the key. */
static void make_value(unsigned long k, char *buf)
{
	uint64_t x = mix64(k ^ (o.seed << 32));
	size_t i;

	for (i = 0; i < o.vlen; i += 8) {
		size_t n = o.vlen - i < 8 ? o.vlen - i : 8;

		x = mix64(x);
		memcpy(buf + i, &x, n);
	}
}

static int key_name(unsigned long k, char *buf, size_t len)
{
	return snprintf(buf, len, "k%08lu", k);
}

/* ---- connections ---- */

struct conn {
	int fd;
	char *buf;
	size_t len, cap;
	double sent;		/* when the outstanding request went out */
	unsigned long key;	/* its key */
	int busy;
};

static int connect_server(void)
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_port = htons(o.port) };
	int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;

	if (fd < 0)
		die("socket");
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		close(fd);
		return -1;
	}
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fd;
}

static void conn_init(struct conn *c, int fd)
{
	memset(c, 0, sizeof(*c));
	c->fd = fd;
	c->cap = o.vlen + REPLY_EXTRA + 4096;
	c->buf = xmalloc(c->cap);
}

static void write_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			die("write to memcached");
		p += w;
		n -= w;
	}
}

/* Reads more of the server's reply into c; 0 when it closed. */
static int conn_fill(struct conn *c)
{
	ssize_t r;

	if (c->len == c->cap) {
		c->cap *= 2;
		c->buf = realloc(c->buf, c->cap);
		if (!c->buf)
			fail("out of memory");
	}
	do
		r = read(c->fd, c->buf + c->len, c->cap - c->len);
	while (r < 0 && errno == EINTR);
	if (r < 0)
		die("read from memcached");
	c->len += r;
	return r > 0;
}

static void conn_consume(struct conn *c, size_t n)
{
	memmove(c->buf, c->buf + n, c->len - n);
	c->len -= n;
}

/* Length of the first line in c (with its \r\n), or 0 if incomplete. */
static size_t line_len(const struct conn *c, size_t from)
{
	char *p = memmem(c->buf + from, c->len - from, "\r\n", 2);

	return p ? (size_t)(p - (c->buf + from)) + 2 : 0;
}

/* Blocking: the next line of the reply, consumed; NUL-terminated, no \r\n. */
static void read_line(struct conn *c, char *out, size_t outlen)
{
	size_t n;

	while (!(n = line_len(c, 0)))
		if (!conn_fill(c))
			fail("memcached closed the connection");
	if (n - 2 >= outlen)
		fail("reply line too long");
	memcpy(out, c->buf, n - 2);
	out[n - 2] = 0;
	conn_consume(c, n);
}

enum reply { INCOMPLETE, HIT, MISS, BAD };

/*
 * Parses one get reply at the start of c's buffer.  HIT: the value of
 * *key is at *val; *used: bytes to consume.  BAD: a malformed reply.
 */
static enum reply parse_get(struct conn *c, unsigned long *key, char **val,
			    size_t *vlen, size_t *used)
{
	size_t n = line_len(c, 0), end;
	char line[128];

	if (!n)
		return INCOMPLETE;
	if (n == 5 && !memcmp(c->buf, "END\r\n", 5)) {
		*used = n;
		return MISS;
	}
	if (n >= sizeof(line) || memcmp(c->buf, "VALUE k", 7))
		return BAD;
	memcpy(line, c->buf, n - 2);
	line[n - 2] = 0;
	if (sscanf(line, "VALUE k%lu %*u %zu", key, vlen) != 2)
		return BAD;
	end = n + *vlen + 2;
	if (c->len < end + 5)
		return INCOMPLETE;
	if (memcmp(c->buf + n + *vlen, "\r\nEND\r\n", 7))
		return BAD;
	*val = c->buf + n;
	*used = end + 5;
	return HIT;
}

/* ---- load ---- */

static void wait_server(void)
{
	double until = now() + 30;
	int fd;

	while ((fd = connect_server()) < 0) {
		if (now() > until)
			fail("memcached does not accept connections");
		usleep(100000);
	}
	close(fd);
}

static void do_load(void)
{
	struct conn c;
	char *val = xmalloc(o.vlen), hdr[128], line[256];
	unsigned long k, b, stored = 0;
	double t0 = now();
	int fd;

	wait_server();
	fd = connect_server();
	if (fd < 0)
		die("connect");
	conn_init(&c, fd);
	for (k = 0; k < o.keys; k += BATCH) {
		unsigned long n = o.keys - k < BATCH ? o.keys - k : BATCH;

		for (b = 0; b < n; b++) {
			char name[32];
			int hl;

			key_name(k + b, name, sizeof(name));
			hl = snprintf(hdr, sizeof(hdr), "set %s 0 0 %zu\r\n",
				      name, o.vlen);
			make_value(k + b, val);
			write_all(fd, hdr, hl);
			write_all(fd, val, o.vlen);
			write_all(fd, "\r\n", 2);
		}
		for (b = 0; b < n; b++) {
			read_line(&c, line, sizeof(line));
			if (strcmp(line, "STORED")) {
				fprintf(stderr, "mcbench: set of key %lu: %s\n",
					k + b, line);
				exit(2);
			}
			stored++;
		}
	}
	printf("mcbench: loaded %lu keys of %zu bytes in %.1f s\n", stored,
	       o.vlen, now() - t0);
	close(fd);
}

/* ---- what the server and the kernel report ---- */

/*
 * The value of "STAT @name" in the server's reply to @cmd ("stats\r\n"),
 * or -1 if it has none.
 */
static double server_stat(const char *cmd, const char *name)
{
	struct conn c;
	char line[256], want[128];
	double v = -1;
	int fd = connect_server();

	if (fd < 0)
		die("connect for stats");
	conn_init(&c, fd);
	snprintf(want, sizeof(want), "STAT %s ", name);
	write_all(fd, cmd, strlen(cmd));
	for (;;) {
		read_line(&c, line, sizeof(line));
		if (!strcmp(line, "END"))
			break;
		if (!strncmp(line, want, strlen(want)))
			v = atof(line + strlen(want));
	}
	close(fd);
	free(c.buf);
	return v;
}

/*
 * The chunk size of the slab class that holds our items: the class with
 * the most used chunks (every item has the same size).
 */
static double item_chunk_bytes(void)
{
	struct conn c;
	char line[256];
	long best_used = -1, cls, used;
	double chunk = 0, size = 0;
	long size_cls = -1;
	int fd = connect_server();

	if (fd < 0)
		die("connect for stats slabs");
	conn_init(&c, fd);
	write_all(fd, "stats slabs\r\n", 13);
	for (;;) {
		char stat[64];
		double v;

		read_line(&c, line, sizeof(line));
		if (!strcmp(line, "END"))
			break;
		if (sscanf(line, "STAT %ld:%63s %lf", &cls, stat, &v) != 3)
			continue;
		if (!strcmp(stat, "chunk_size")) {
			size = v;
			size_cls = cls;
		} else if (!strcmp(stat, "used_chunks")) {
			used = (long)v;
			if (used > best_used && size_cls == cls) {
				best_used = used;
				chunk = size;
			}
		}
	}
	close(fd);
	free(c.buf);
	return chunk;
}

static unsigned long vmstat(const char *key)
{
	FILE *f = fopen("/proc/vmstat", "r");
	char name[128];
	unsigned long v, sum = 0;
	size_t klen = strlen(key);

	if (!f)
		die("/proc/vmstat");
	while (fscanf(f, "%127s %lu", name, &v) == 2)
		if (!strncmp(name, key, klen) &&
		    (key[klen - 1] == '_' || !name[klen]))
			sum += v;
	fclose(f);
	return sum;
}

/* utime and stime of /proc/@pid/stat (all its threads), seconds. */
static int proc_cpu(pid_t pid, double *user, double *sys)
{
	char path[64], buf[1024], *p;
	unsigned long ut, st;
	double hz = sysconf(_SC_CLK_TCK);
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	if (!fgets(buf, sizeof(buf), f))
		buf[0] = 0;
	fclose(f);
	p = strrchr(buf, ')');
	if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u "
			 "%lu %lu", &ut, &st) != 2)
		return -1;
	*user = ut / hz;
	*sys = st / hz;
	return 0;
}

/*
 * CPU seconds of the kernel threads whose name is @prefix, with a number
 * after it or not (kswapd0, kdamond.0, kmmscand).
 */
static double kthread_cpu(const char *prefix)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	double cpu = 0;
	size_t len = strlen(prefix);

	while (d && (e = readdir(d))) {
		char path[300], comm[64], *q;
		double u, s;
		FILE *f;

		if (!isdigit((unsigned char)e->d_name[0]))
			continue;
		snprintf(path, sizeof(path), "/proc/%s/comm", e->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (!fgets(comm, sizeof(comm), f))
			comm[0] = 0;
		fclose(f);
		comm[strcspn(comm, "\n")] = 0;
		if (strncmp(comm, prefix, len))
			continue;
		for (q = comm + len; isdigit((unsigned char)*q); q++)
			;
		if (*q)
			continue;
		if (!proc_cpu(atoi(e->d_name), &u, &s))
			cpu += u + s;
	}
	if (d)
		closedir(d);
	return cpu;
}

/*
 * The server's anonymous pages on the fast and the slow node, MiB, from
 * /proc/PID/numa_maps (N<node>= counts base pages, huge ones included).
 */
static int server_placement(double *fast, double *slow)
{
	char path[64], *line = NULL;
	size_t cap = 0;
	unsigned long nf = 0, ns = 0;
	long psz = sysconf(_SC_PAGESIZE);
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/numa_maps", o.pid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (getline(&line, &cap, f) > 0) {
		char *tok, *save;

		if (!strstr(line, " anon="))
			continue;
		for (tok = strtok_r(line, " \n", &save); tok;
		     tok = strtok_r(NULL, " \n", &save)) {
			int node;
			unsigned long n;

			if (sscanf(tok, "N%d=%lu", &node, &n) != 2)
				continue;
			if (node == o.fast)
				nf += n;
			else if (node == o.slow)
				ns += n;
		}
	}
	free(line);
	fclose(f);
	*fast = (double)nf * psz / MIB;
	*slow = (double)ns * psz / MIB;
	return 0;
}

/* ---- where each item is: map_items() ---- */

/*
 * memcached 1.6's item on x86-64, with CAS: a 48-byte header and the
 * 8-byte CAS value before the key; the key and its NUL, then the value
 * and its "\r\n" (client flags 0 add no suffix).
 */
#define ITEM_KEY_OFFSET	56
/*
 * Bytes read from /proc/PID/mem at a time, and the overlap between two
 * reads, so that a key and the start of its value are never cut.
 */
#define MEM_CHUNK	(1UL << 20)
#define MEM_OVERLAP	64
#define KEY_LEN		9	/* "k%08lu" */
#define MOVE_BATCH	4096

/* The item pages: sorted addresses, each one's weight and hotness. */
struct ipage {
	unsigned long addr;
	double weight;
	int hot;
};

static struct ipage *pages;
static unsigned long npages, hot_pages;
/*
 * Weights sorted in decreasing order, prefix-summed: the best hit n fast
 * pages can give is best_prefix[n].
 */
static double *best_prefix;

/* Whether p holds the key "k%08lu" and its NUL; *k: which. */
static int key_at(const char *p, unsigned long *k)
{
	unsigned long v = 0;
	int i;

	if (p[0] != 'k' || p[KEY_LEN] != 0)
		return 0;
	for (i = 1; i < KEY_LEN; i++) {
		if (p[i] < '0' || p[i] > '9')
			return 0;
		v = v * 10 + (p[i] - '0');
	}
	*k = v;
	return v < o.keys;
}

/*
 * The address of each key's item: scans the server's anonymous writable
 * mappings for a key followed by the first bytes of its value (a key
 * alone is also found in connection buffers).  Returns how many were
 * found; addr[k] is 0 for the others.
 */
static unsigned long find_items(unsigned long *addr)
{
	char path[64], line[512], *buf = xmalloc(MEM_CHUNK + MEM_OVERLAP);
	char *want = xmalloc(o.vlen);
	unsigned long found = 0;
	FILE *maps;
	int mem;

	snprintf(path, sizeof(path), "/proc/%d/maps", o.pid);
	maps = fopen(path, "r");
	snprintf(path, sizeof(path), "/proc/%d/mem", o.pid);
	mem = open(path, O_RDONLY);
	if (!maps || mem < 0)
		die("the server's maps or mem");
	while (fgets(line, sizeof(line), maps)) {
		unsigned long start, end, at;
		char perms[8], name[256] = "";

		if (sscanf(line, "%lx-%lx %7s %*s %*s %*s %255s", &start, &end,
			   perms, name) < 3 || strcmp(perms, "rw-p") ||
		    (name[0] && strcmp(name, "[heap]")))
			continue;
		for (at = start; at < end; at += MEM_CHUNK) {
			size_t want_len = end - at < MEM_CHUNK + MEM_OVERLAP ?
					  end - at : MEM_CHUNK + MEM_OVERLAP;
			ssize_t got = pread(mem, buf, want_len, at);
			size_t i, n = got > 0 ? (size_t)got : 0;

			for (i = 0; i + KEY_LEN + 1 + 8 <= n && i < MEM_CHUNK;
			     i++) {
				unsigned long k;
				size_t cmp;

				if (buf[i] != 'k' || !key_at(buf + i, &k) ||
				    addr[k])
					continue;
				make_value(k, want);
				cmp = o.vlen < 8 ? o.vlen : 8;
				if (memcmp(buf + i + KEY_LEN + 1, want, cmp))
					continue;
				addr[k] = at + i;
				found++;
			}
		}
	}
	fclose(maps);
	close(mem);
	free(buf);
	free(want);
	return found;
}

static int cmp_ipage(const void *a, const void *b)
{
	unsigned long x = ((const struct ipage *)a)->addr;
	unsigned long y = ((const struct ipage *)b)->addr;

	return x < y ? -1 : x > y;
}

static int cmp_weight_desc(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x > y ? -1 : x < y;
}

/*
 * The item pages and their weights: each key's share of the gets
 * (cdf[k] - cdf[k - 1]) spread over the pages its item spans, by bytes.
 * Returns the keys found.
 */
static unsigned long map_items(const double *cdf, unsigned long hot_keys)
{
	unsigned long *addr = calloc(o.keys, sizeof(*addr)), found, k, i, n;
	long psz = sysconf(_SC_PAGESIZE);
	size_t item = ITEM_KEY_OFFSET + KEY_LEN + 1 + o.vlen + 2;
	struct ipage *all;
	double *w;

	if (!addr)
		fail("out of memory");
	found = find_items(addr);
	/* An item spans at most this many pages. */
	n = (item + psz - 1) / psz + 1;
	all = xmalloc(found * n * sizeof(*all));
	npages = 0;
	for (k = 0; k < o.keys; k++) {
		unsigned long from, to, pg;
		double p = cdf[k] - (k ? cdf[k - 1] : 0);

		if (!addr[k])
			continue;
		from = addr[k] - ITEM_KEY_OFFSET;
		to = from + item;
		for (pg = from & ~(psz - 1); pg < to; pg += psz) {
			unsigned long lo = pg > from ? pg : from;
			unsigned long hi = pg + psz < to ? pg + psz : to;

			all[npages].addr = pg;
			all[npages].weight = p * (hi - lo) / item;
			all[npages].hot = k < hot_keys;
			npages++;
		}
	}
	free(addr);
	qsort(all, npages, sizeof(*all), cmp_ipage);
	/* Merge the entries of one page. */
	for (i = 0, n = 0; i < npages; i++) {
		if (n && all[n - 1].addr == all[i].addr) {
			all[n - 1].weight += all[i].weight;
			all[n - 1].hot |= all[i].hot;
		} else {
			all[n++] = all[i];
		}
	}
	npages = n;
	pages = all;
	hot_pages = 0;
	w = xmalloc(npages * sizeof(*w));
	for (i = 0; i < npages; i++) {
		hot_pages += pages[i].hot;
		w[i] = pages[i].weight;
	}
	qsort(w, npages, sizeof(*w), cmp_weight_desc);
	best_prefix = xmalloc((npages + 1) * sizeof(*best_prefix));
	best_prefix[0] = 0;
	for (i = 0; i < npages; i++)
		best_prefix[i + 1] = best_prefix[i] + w[i];
	free(w);
	return found;
}

/*
 * Where the item pages are: moves them to @node first if @node >= 0
 * (the oracle's hot pages: @hot_only).  Fills the placement figures of a
 * sample: hot and cold pages on the fast node, hit and ohit.
 */
static void item_placement(int node, int hot_only, double *hot, double *cold,
			   double *hit, double *ohit, unsigned long *fast)
{
	void *addrs[MOVE_BATCH];
	int nodes[MOVE_BATCH], status[MOVE_BATCH];
	unsigned long i, fast_hot = 0, fast_cold = 0;
	double fast_w = 0;

	for (i = 0; i < npages; ) {
		unsigned long idx[MOVE_BATCH];
		int n = 0, j;

		for (; i < npages && n < MOVE_BATCH; i++) {
			if (hot_only && !pages[i].hot)
				continue;
			idx[n] = i;
			addrs[n] = (void *)pages[i].addr;
			nodes[n] = node;
			n++;
		}
		if (!n)
			break;
		if (move_pages(o.pid, n, addrs, node >= 0 ? nodes : NULL,
			       status, node >= 0 ? MPOL_MF_MOVE : 0) < 0)
			die("move_pages on the server");
		for (j = 0; j < n; j++) {
			const struct ipage *pg = &pages[idx[j]];

			if (status[j] != o.fast)
				continue;
			fast_w += pg->weight;
			if (pg->hot)
				fast_hot++;
			else
				fast_cold++;
		}
	}
	if (!hot)
		return;
	*hot = hot_pages ? 100.0 * fast_hot / hot_pages : 0;
	*cold = npages > hot_pages ?
		100.0 * fast_cold / (npages - hot_pages) : 0;
	*fast = fast_hot + fast_cold;
	*hit = fast_w / best_prefix[npages];
	*ohit = best_prefix[*fast] / best_prefix[npages];
}

/* ---- run ---- */

struct sample {
	double t, fast_mib, slow_mib, hot, cold, hit, ohit;
	unsigned long ops, promoted, ptes, migrated, fast;
};

static struct sample samples[MAX_SAMPLES];
static volatile int nsamples, stop_sampler;
static volatile unsigned long ops_done;
static double run_t0;

static unsigned long ptes_examined(void)
{
	return vmstat("kmmscand_pte_scanned") + vmstat("numa_pte_updates");
}

static void take_sample(double t)
{
	struct sample *s;

	if (nsamples >= MAX_SAMPLES)
		return;
	s = &samples[nsamples];
	s->t = t;
	if (server_placement(&s->fast_mib, &s->slow_mib))
		s->fast_mib = s->slow_mib = 0;
	item_placement(-1, 0, &s->hot, &s->cold, &s->hit, &s->ohit, &s->fast);
	s->ops = ops_done;
	s->promoted = vmstat("pgpromote_success");
	s->ptes = ptes_examined();
	s->migrated = vmstat("pgmigrate_success");
	printf("S t=%.2f hot=%.1f cold=%.2f hit=%.4f ohit=%.4f fast=%lu "
	       "fast_mib=%.1f slow_mib=%.1f ops=%lu promoted=%lu ptes=%lu "
	       "migrated=%lu\n", s->t, s->hot, s->cold, s->hit, s->ohit,
	       s->fast, s->fast_mib, s->slow_mib, s->ops, s->promoted, s->ptes,
	       s->migrated);
	fflush(stdout);
	nsamples++;
}

static void *sampler(void *arg)
{
	double next = run_t0 + o.interval_ms / 1000.0;

	(void)arg;
	while (!stop_sampler) {
		double t = now();

		if (t < next) {
			usleep((useconds_t)((next - t) * 1e6) + 1);
			continue;
		}
		take_sample(t - run_t0);
		next += o.interval_ms / 1000.0;
		while (next < now())
			next += o.interval_ms / 1000.0;
	}
	return NULL;
}

/*
 * The cumulative weights of ranks 0..keys-1: Zipf (exponent o.zipf_s), or
 * with -D a hot spot, where the first hot_keys ranks share o.hot_gets_pct
 * percent of the gets evenly and the others the rest: the same hot set as
 * Zipf's, with no gradient at its edge for a mechanism to cut anywhere.
 */
static double *key_cdf(unsigned long hot_keys)
{
	double *cdf = xmalloc(o.keys * sizeof(*cdf)), sum = 0, w;
	unsigned long i;

	for (i = 0; i < o.keys; i++) {
		if (!o.hot_gets_pct)
			w = 1.0 / pow(i + 1, o.zipf_s);
		else if (i < hot_keys)
			w = o.hot_gets_pct / hot_keys;
		else
			w = (100 - o.hot_gets_pct) / (o.keys - hot_keys);
		sum += w;
		cdf[i] = sum;
	}
	for (i = 0; i < o.keys; i++)
		cdf[i] /= sum;
	return cdf;
}

static uint64_t rng_state;

static double uniform(void)
{
	rng_state = mix64(rng_state);
	return (rng_state >> 11) * 0x1.0p-53;
}

static unsigned long draw(const double *cdf)
{
	double u = uniform();
	unsigned long lo = 0, hi = o.keys - 1;

	while (lo < hi) {
		unsigned long mid = lo + (hi - lo) / 2;

		if (cdf[mid] < u)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static void send_get(struct conn *c, unsigned long k)
{
	char req[64];
	int n = snprintf(req, sizeof(req), "get k%08lu\r\n", k);

	c->key = k;
	c->sent = now();
	c->busy = 1;
	write_all(c->fd, req, n);
}

/* Latencies of the run's gets, microseconds, in completion order. */
static float *lat;
static size_t nlat, lat_cap;

static void record_latency(double us)
{
	if (nlat == lat_cap) {
		lat_cap = lat_cap ? 2 * lat_cap : 1 << 20;
		lat = realloc(lat, lat_cap * sizeof(*lat));
		if (!lat)
			fail("out of memory");
	}
	lat[nlat++] = us;
}

static int cmp_float(const void *a, const void *b)
{
	float x = *(const float *)a, y = *(const float *)b;

	return x < y ? -1 : x > y;
}

/* Mean and 99th percentile of lat[from..nlat). */
static void latency_stats(size_t from, double *mean, double *p99)
{
	size_t n = nlat - from, i;
	float *copy;
	double sum = 0;

	*mean = *p99 = 0;
	if (!n)
		return;
	copy = xmalloc(n * sizeof(*copy));
	memcpy(copy, lat + from, n * sizeof(*copy));
	for (i = 0; i < n; i++)
		sum += copy[i];
	qsort(copy, n, sizeof(*copy), cmp_float);
	*mean = sum / n;
	*p99 = copy[(size_t)((n - 1) * 0.99)];
	free(copy);
}

/* Counts of the run's gets that came back wrong. */
static unsigned long run_misses, run_bad;

/*
 * Drives the server with gets of keys drawn by cdf over o.conns
 * connections, one request outstanding on each, for o.secs seconds;
 * checks every value that comes back.
 */
static void drive(const double *cdf, size_t *tail_from)
{
	struct conn c[MAX_CONNS];
	struct pollfd pfd[MAX_CONNS];
	char *want = xmalloc(o.vlen);
	double end = run_t0 + o.secs, tail_t = run_t0 + 0.75 * o.secs;
	double drain_until = end + 10;
	int i, busy;

	*tail_from = 0;
	for (i = 0; i < o.conns; i++) {
		int fd = connect_server();

		if (fd < 0)
			die("connect");
		conn_init(&c[i], fd);
		pfd[i].fd = fd;
		pfd[i].events = POLLIN;
		send_get(&c[i], draw(cdf));
	}
	busy = o.conns;
	while (busy) {
		double t = now();

		if (t > drain_until)
			fail("memcached did not answer within 10 s of the end");
		if (!*tail_from && t >= tail_t)
			*tail_from = nlat;
		if (poll(pfd, o.conns, 100) < 0) {
			if (errno == EINTR)
				continue;
			die("poll");
		}
		for (i = 0; i < o.conns; i++) {
			struct conn *cn = &c[i];
			unsigned long key;
			size_t used, vlen;
			char *val;
			enum reply r;

			if (!(pfd[i].revents & (POLLIN | POLLERR | POLLHUP)))
				continue;
			if (!conn_fill(cn))
				fail("memcached closed a connection");
			r = parse_get(cn, &key, &val, &vlen, &used);
			if (r == INCOMPLETE)
				continue;
			if (r == BAD)
				fail("malformed reply from memcached");
			t = now();
			record_latency((t - cn->sent) * 1e6);
			if (r == MISS) {
				run_misses++;
			} else {
				make_value(key, want);
				if (key != cn->key || vlen != o.vlen ||
				    memcmp(val, want, o.vlen))
					run_bad++;
			}
			conn_consume(cn, used);
			__atomic_add_fetch(&ops_done, 1, __ATOMIC_RELAXED);
			cn->busy = 0;
			busy--;
			if (t < end) {
				send_get(cn, draw(cdf));
				busy++;
			}
		}
	}
	for (i = 0; i < o.conns; i++) {
		close(c[i].fd);
		free(c[i].buf);
	}
	free(want);
}

/*
 * Gets every key (multi-gets of BATCH keys) and checks each value:
 * *missing keys absent, *bad values that differ.
 */
static void verify_all(unsigned long *missing, unsigned long *bad)
{
	struct conn c;
	char *want = xmalloc(o.vlen), req[BATCH * 16 + 8];
	unsigned char seen[BATCH];
	unsigned long k, b;
	int fd = connect_server();

	if (fd < 0)
		die("connect to verify");
	conn_init(&c, fd);
	*missing = *bad = 0;
	for (k = 0; k < o.keys; k += BATCH) {
		unsigned long n = o.keys - k < BATCH ? o.keys - k : BATCH;
		int len = snprintf(req, sizeof(req), "get");

		for (b = 0; b < n; b++)
			len += snprintf(req + len, sizeof(req) - len,
					" k%08lu", k + b);
		len += snprintf(req + len, sizeof(req) - len, "\r\n");
		write_all(fd, req, len);
		memset(seen, 0, sizeof(seen));
		for (;;) {
			size_t n_line, vlen;
			unsigned long key;
			char line[128];

			while (!(n_line = line_len(&c, 0)))
				if (!conn_fill(&c))
					fail("memcached closed the connection");
			if (n_line == 5 && !memcmp(c.buf, "END\r\n", 5)) {
				conn_consume(&c, 5);
				break;
			}
			if (n_line >= sizeof(line))
				fail("malformed reply while verifying");
			memcpy(line, c.buf, n_line - 2);
			line[n_line - 2] = 0;
			if (sscanf(line, "VALUE k%lu %*u %zu", &key, &vlen) != 2)
				fail("malformed reply while verifying");
			while (c.len < n_line + vlen + 2)
				if (!conn_fill(&c))
					fail("memcached closed the connection");
			if (key < k || key >= k + n) {
				(*bad)++;
			} else {
				seen[key - k] = 1;
				make_value(key, want);
				if (vlen != o.vlen ||
				    memcmp(c.buf + n_line, want, o.vlen))
					(*bad)++;
			}
			conn_consume(&c, n_line + vlen + 2);
		}
		for (b = 0; b < n; b++)
			*missing += !seen[b];
	}
	close(fd);
	free(c.buf);
	free(want);
}

/* First sample time at which the hot set's share on the fast node
 * reached @pct, or -1. */
static double crossing(double pct)
{
	int i;

	for (i = 0; i < nsamples; i++)
		if (samples[i].hot >= pct)
			return samples[i].t;
	return -1;
}

/* Pushes the server's memory to the slow node with numactl's tool. */
static void push_to_slow(void)
{
	char cmd[128];
	double t0 = now(), fast, slow;

	snprintf(cmd, sizeof(cmd), "migratepages %d %d %d", o.pid, o.fast,
		 o.slow);
	if (system(cmd))
		fail("migratepages failed");
	if (server_placement(&fast, &slow))
		die("numa_maps of the server");
	printf("mcbench: %s in %.1f s: %.0f MiB on node %d, %.0f MiB on node "
	       "%d\n", cmd, now() - t0, fast, o.fast, slow, o.slow);
}

/* -R: FILE.placed for bench.sh, then wait for FILE.go (60 s at most). */
static void rendezvous(void)
{
	char path[512];
	struct stat st;
	double until = now() + 60;
	int fd;

	snprintf(path, sizeof(path), "%s.placed", o.rendezvous);
	fd = open(path, O_CREAT | O_WRONLY, 0600);
	if (fd < 0)
		die(path);
	close(fd);
	snprintf(path, sizeof(path), "%s.go", o.rendezvous);
	while (stat(path, &st)) {
		if (now() > until)
			fail("no go from bench.sh within 60 s");
		usleep(50000);
	}
}

/* What a run is measured by, read at its start and at its end */
struct run_snap {
	double server_user, server_sys;
	double kmmscand, kdamond, kswapd, kcompactd;	/* CPU seconds */
	unsigned long hint_faults, promoted, demoted;
};

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

static void run_snap(struct run_snap *s)
{
	if (proc_cpu(o.pid, &s->server_user, &s->server_sys))
		fail("no server process");
	s->kmmscand = kmmscand_cpu();
	s->kdamond = kthread_cpu("kdamond.");
	s->kswapd = kthread_cpu("kswapd");
	s->kcompactd = kthread_cpu("kcompactd");
	s->hint_faults = vmstat("numa_hint_faults");
	s->promoted = vmstat("pgpromote_success");
	s->demoted = vmstat("pgdemote_");
}

static void do_run(void)
{
	double *cdf, chunk, data_mib, hot_mib, hot_share, t_run, mean, p99;
	double tmean, tp99, peak = 0, t_active = 0, t_map, psz_mib;
	unsigned long hot_keys, missing, bad, evict, found;
	struct run_snap r0, r1;
	struct vmstat_snap *v0 = xmalloc(sizeof(*v0)), *v1 = xmalloc(sizeof(*v1));
	const struct sample *e;
	size_t tail_from;
	pthread_t th;
	int i, lost;

	if (o.pid <= 0)
		fail("run needs -p PID, the server's");
	psz_mib = (double)sysconf(_SC_PAGESIZE) / MIB;
	do_load();
	chunk = item_chunk_bytes();
	if (chunk <= 0)
		fail("no slab class holds the keys");
	hot_keys = (unsigned long)(o.keys * o.hot_pct / 100);
	if (!hot_keys)
		hot_keys = 1;
	cdf = key_cdf(hot_keys);
	hot_share = cdf[hot_keys - 1];
	data_mib = o.keys * chunk / MIB;
	/* Evictions would lose keys: the verification would fail anyway. */
	if (o.server_mib > 0 && data_mib > o.server_mib)
		fail("the keys do not fit in the server's memory (-M)");
	t_map = now();
	found = map_items(cdf, hot_keys);
	if (found < o.keys)
		fprintf(stderr, "mcbench: found %lu of %lu items in the "
			"server's memory; the placement figures leave the "
			"others out\n", found, o.keys);
	hot_mib = hot_pages * psz_mib;
	printf("mcbench: %lu keys, %.0f-byte chunks: %.0f MiB of items in "
	       "%lu pages (mapped in %.1f s); hot set: %lu keys with %.1f%% "
	       "of the gets, %lu pages (%.0f MiB)\n", o.keys, chunk, data_mib,
	       npages, now() - t_map, hot_keys, 100 * hot_share, hot_pages,
	       hot_mib);
	push_to_slow();
	if (o.oracle) {
		item_placement(o.fast, 1, NULL, NULL, NULL, NULL, NULL);
		printf("mcbench: oracle: the hot set's pages moved to node "
		       "%d\n", o.fast);
	}
	if (o.rendezvous)
		rendezvous();
	rng_state = mix64(o.seed);

	run_snap(&r0);
	vmstat_snap(v0);
	run_t0 = now();
	take_sample(0);
	if (pthread_create(&th, NULL, sampler, NULL))
		fail("cannot start the sampler thread");
	drive(cdf, &tail_from);
	t_run = now() - run_t0;
	stop_sampler = 1;
	pthread_join(th, NULL);
	take_sample(t_run);
	run_snap(&r1);
	vmstat_snap(v1);

	latency_stats(0, &mean, &p99);
	latency_stats(tail_from, &tmean, &tp99);
	for (i = 1; i < nsamples; i++) {
		double mbps = (samples[i].promoted - samples[i - 1].promoted) *
			      psz_mib / (samples[i].t - samples[i - 1].t);

		if (mbps > peak)
			peak = mbps;
		if (samples[i].promoted != samples[i - 1].promoted)
			t_active = samples[i].t;
	}
	evict = (unsigned long)server_stat("stats\r\n", "evictions");
	verify_all(&missing, &bad);
	lost = missing || bad || run_misses || run_bad;
	e = &samples[nsamples - 1];
	printf("R t50=%.2f t90=%.2f ops=%zu ops_per_s=%.0f "
	       "tail_ops_per_s=%.0f lat_mean_us=%.1f lat_p99_us=%.1f "
	       "tail_lat_mean_us=%.1f tail_lat_p99_us=%.1f "
	       "server_user_s=%.2f server_sys_s=%.2f app_sys_s=%.2f "
	       "app_user_s=%.2f kmmscand_cpu_s=%.2f damon_cpu_s=%.2f "
	       "kswapd_cpu_s=%.2f kcompactd_cpu_s=%.2f hint_faults=%lu "
	       "promoted_pages=%lu promoted_mb=%.1f mbps=%.1f "
	       "peak_mbps=%.1f ptes=%lu demoted_pages=%lu keys=%lu "
	       "value_bytes=%zu chunk_bytes=%.0f data_mib=%.1f "
	       "item_pages=%lu items_found=%lu hot_keys=%lu hot_pages=%lu "
	       "hot_mib=%.1f hot_access_share=%.4f final_hot_pct=%.1f "
	       "cold_promoted_pct=%.2f final_hit=%.4f final_oracle_hit=%.4f "
	       "final_fast_pages=%lu fast_mib_start=%.1f slow_mib_start=%.1f "
	       "fast_mib_end=%.1f slow_mib_end=%.1f missing=%lu "
	       "mismatched=%lu run_misses=%lu run_mismatched=%lu "
	       "evictions=%lu\n",
	       crossing(50), crossing(90), nlat, nlat / t_run,
	       t_run - 0.75 * o.secs > 0 ?
	       (nlat - tail_from) / (t_run - 0.75 * o.secs) : 0,
	       mean, p99, tmean, tp99, r1.server_user - r0.server_user,
	       r1.server_sys - r0.server_sys, r1.server_sys - r0.server_sys,
	       r1.server_user - r0.server_user, r1.kmmscand - r0.kmmscand,
	       r1.kdamond - r0.kdamond, r1.kswapd - r0.kswapd,
	       r1.kcompactd - r0.kcompactd, r1.hint_faults - r0.hint_faults,
	       r1.promoted - r0.promoted,
	       (r1.promoted - r0.promoted) * psz_mib,
	       t_active > 0 ?
	       (r1.promoted - r0.promoted) * psz_mib / t_active : 0, peak,
	       e->ptes - samples[0].ptes, r1.demoted - r0.demoted, o.keys,
	       o.vlen, chunk,
	       data_mib, npages, found, hot_keys, hot_pages, hot_mib,
	       hot_share, e->hot, e->cold, e->hit, e->ohit, e->fast,
	       samples[0].fast_mib, samples[0].slow_mib, e->fast_mib,
	       e->slow_mib, missing, bad, run_misses, run_bad, evict);
	print_vmstat_deltas(v0, v1);
	fflush(stdout);
	if (lost) {
		fprintf(stderr, "mcbench: DATA LOST: %lu keys missing, %lu "
			"values wrong at the end; %lu misses, %lu wrong values "
			"during the run\n", missing, bad, run_misses, run_bad);
		exit(EXIT_LOST);
	}
}

static void usage(void)
{
	fprintf(stderr,
		"usage: mcbench load|run [-P port] [-p server_pid] [-k keys] "
		"[-v value_bytes]\n"
		"         [-t seconds] [-i sample_ms] [-c connections] "
		"[-z zipf_exponent]\n"
		"         [-D hot_pct_of_gets] [-H hot_pct_of_keys] [-S seed]\n"
		"         [-f fast_node] [-n slow_node] [-M server_mib]\n"
		"         [-o] [-R rendezvous_file]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	const char *phase;
	int opt;

	if (argc < 2)
		usage();
	phase = argv[1];
	optind = 2;
	while ((opt = getopt(argc, argv, "P:p:k:v:t:i:c:z:D:H:S:f:n:M:oR:")) != -1) {
		switch (opt) {
		case 'P': o.port = atoi(optarg); break;
		case 'p': o.pid = atoi(optarg); break;
		case 'k': o.keys = strtoul(optarg, NULL, 0); break;
		case 'v': o.vlen = strtoul(optarg, NULL, 0); break;
		case 't': o.secs = atof(optarg); break;
		case 'i': o.interval_ms = atoi(optarg); break;
		case 'c': o.conns = atoi(optarg); break;
		case 'z': o.zipf_s = atof(optarg); break;
		case 'D': o.hot_gets_pct = atof(optarg); break;
		case 'H': o.hot_pct = atof(optarg); break;
		case 'S': o.seed = strtoul(optarg, NULL, 0); break;
		case 'f': o.fast = atoi(optarg); break;
		case 'n': o.slow = atoi(optarg); break;
		case 'M': o.server_mib = atol(optarg); break;
		case 'o': o.oracle = 1; break;
		case 'R': o.rendezvous = optarg; break;
		default: usage();
		}
	}
	if (!o.keys || !o.vlen || o.conns < 1 || o.conns > MAX_CONNS ||
	    o.interval_ms < 10 || o.hot_pct <= 0 || o.hot_pct > 100 ||
	    o.hot_gets_pct < 0 || o.hot_gets_pct >= 100 ||
	    (o.hot_gets_pct && o.hot_pct >= 100))
		usage();
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!strcmp(phase, "load"))
		do_load();
	else if (!strcmp(phase, "run"))
		do_run();
	else
		usage();
	return 0;
}
