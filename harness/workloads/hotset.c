// SPDX-License-Identifier: GPL-2.0
/*
 * hotset: the demo workload. Places SIZE MiB of anonymous memory on a slow
 * node, reads and writes a HOT MiB part of it in a loop, and prints, every
 * interval, how much of the hot part and of the cold rest sits on each
 * node. The pages keep the default memory policy once placed, so anything
 * that promotes (NUMA balancing, kmmscand) is free to move them.
 *
 * usage: hotset [-s size_mib] [-H hot_mib] [-n slow_node] [-t seconds]
 *               [-i interval_ms] [-q]
 * Prints one line per interval:
 *   t=<s> hot_fast=<pct> cold_fast=<pct> ops=<M accesses>
 * and a final "converged50=<s> converged90=<s>" (-1: never).
 */
#include <numaif.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define MIB (1UL << 20)

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Share (percent) of the pages in [p, p+len) that are on a top-tier node. */
static double fast_share(char *p, size_t len, long psz, int slow)
{
	size_t n = len / psz, i, fast = 0;
	void **pages = malloc(n * sizeof(*pages));
	int *status = malloc(n * sizeof(*status));

	for (i = 0; i < n; i++)
		pages[i] = p + i * psz;
	if (move_pages(0, n, pages, NULL, status, 0)) {
		perror("move_pages");
		exit(2);
	}
	for (i = 0; i < n; i++)
		if (status[i] >= 0 && status[i] != slow)
			fast++;
	free(pages);
	free(status);
	return 100.0 * fast / n;
}

int main(int argc, char **argv)
{
	size_t size = 256 * MIB, hot = 64 * MIB;
	double secs = 30, interval = 0.5, t0, next, t50 = -1, t90 = -1;
	unsigned long nodemask, ops = 0;
	long psz = sysconf(_SC_PAGESIZE);
	int slow = 1, quiet = 0, opt;
	uint64_t x = 88172645463325252ULL;
	char *buf;

	while ((opt = getopt(argc, argv, "s:H:n:t:i:q")) != -1) {
		switch (opt) {
		case 's': size = strtoul(optarg, NULL, 0) * MIB; break;
		case 'H': hot = strtoul(optarg, NULL, 0) * MIB; break;
		case 'n': slow = atoi(optarg); break;
		case 't': secs = atof(optarg); break;
		case 'i': interval = atof(optarg) / 1000; break;
		case 'q': quiet = 1; break;
		default:
			fprintf(stderr, "usage: %s [-s MiB] [-H MiB] [-n node] [-t s] [-i ms] [-q]\n",
				argv[0]);
			return 2;
		}
	}
	if (hot > size || slow < 0 || slow >= 64) {
		fprintf(stderr, "hotset: bad sizes or node\n");
		return 2;
	}
	buf = mmap(NULL, size, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (buf == MAP_FAILED) {
		perror("mmap");
		return 2;
	}
	/* Fault the pages in on the slow node, then drop the binding. */
	nodemask = 1UL << slow;
	if (set_mempolicy(MPOL_BIND, &nodemask, 64)) {
		perror("set_mempolicy");
		return 2;
	}
	memset(buf, 1, size);
	set_mempolicy(MPOL_DEFAULT, NULL, 0);
	printf("hotset: %zu MiB on node %d, hot %zu MiB; hot_fast at start %.1f%%\n",
	       size / MIB, slow, hot / MIB, fast_share(buf, hot, psz, slow));
	fflush(stdout);

	t0 = now();
	next = t0 + interval;
	for (;;) {
		double t, h, c;
		int i;

		/* xorshift: uniform random cache lines within the hot set. */
		for (i = 0; i < 65536; i++) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			buf[(x % (hot / 64)) * 64]++;
		}
		ops += 65536;
		t = now();
		if (t < next)
			continue;
		next += interval;
		h = fast_share(buf, hot, psz, slow);
		c = size > hot ? fast_share(buf + hot, size - hot, psz, slow) : 0;
		if (t50 < 0 && h >= 50)
			t50 = t - t0;
		if (t90 < 0 && h >= 90)
			t90 = t - t0;
		if (!quiet)
			printf("t=%.1f hot_fast=%.1f%% cold_fast=%.1f%% ops=%.1fM\n",
			       t - t0, h, c, ops / 1e6);
		fflush(stdout);
		if (t - t0 >= secs)
			break;
	}
	printf("converged50=%.1f converged90=%.1f\n", t50, t90);
	return 0;
}
