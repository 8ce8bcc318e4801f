// SPDX-License-Identifier: GPL-2.0
/*
 * ptecal: what one PTE of kmmscand's steady-state walk costs on this CPU,
 * as a user-space model of the loop of kmmscand_scan_ptes(), so that the
 * cost model can tell what the costs it fits under TCG would be on a real
 * CPU.  make bench runs it on the host and in the VM; the ratio of the two
 * is TCG's slowdown on this kind of code.
 *
 * The model: an array of 8-byte entries laid out as x86 PTEs (present,
 * Accessed, PFN), and an array of 64-byte "struct page"s whose first word
 * holds the node, as page->flags does.  Each entry is read, its page's
 * node is tested, and the Accessed bit is cleared when set, atomically.
 * All entries are present, on the slow node, and old: the steady state of
 * the projection, where nothing is hot on the slow tier.  The pages array
 * is far larger than any last-level cache, as struct pages of 1 TiB are.
 *
 * Two orders of the PFNs: sequential (memory allocated in one go, the
 * prefetcher follows) and random (a page's struct page is a cache miss).
 *
 * Output, one line:  P seq_ns=<ns per PTE> rand_ns=<ns per PTE> ptes=<n>
 *
 * usage: ptecal
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

/* 4 Mi PTEs: 8192 PTE tables, 16 GiB mapped; their pages take 256 MiB. */
#define NR_PTES		(4UL << 20)
#define REPS		5

#define PTE_PRESENT	(1ULL << 0)
#define PTE_ACCESSED	(1ULL << 5)
#define PTE_PFN_SHIFT	12
#define PTE_PFN_MASK	((1ULL << 40) - 1)
/* Where the node sits in the model's page flags, and the slow node. */
#define NODE_SHIFT	54
#define NODE_MASK	0x3ffULL
#define SLOW_NODE	1ULL

struct model_page {
	uint64_t flags;
	uint64_t rest[7];	/* the other 56 bytes of a struct page */
};

static uint64_t rng_state = 0x2545f4914f6cdd1dULL;

static uint64_t rng(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

/* One pass over the PTEs as kmmscand_scan_ptes() makes it; returns hits. */
static unsigned long walk(uint64_t *ptes, const struct model_page *pages,
			  unsigned long *young)
{
	unsigned long scanned = 0, i;

	for (i = 0; i < NR_PTES; i++) {
		uint64_t pte = __atomic_load_n(&ptes[i], __ATOMIC_RELAXED);
		const struct model_page *page;

		if (!(pte & PTE_PRESENT))
			continue;
		page = &pages[(pte >> PTE_PFN_SHIFT) & PTE_PFN_MASK];
		if (((page->flags >> NODE_SHIFT) & NODE_MASK) != SLOW_NODE)
			continue;
		scanned++;
		if (pte & PTE_ACCESSED) {
			__atomic_fetch_and(&ptes[i], ~PTE_ACCESSED,
					   __ATOMIC_RELAXED);
			(*young)++;
		}
	}
	return scanned;
}

/* The least ns per PTE over REPS passes, with the PFNs in @pfn order. */
static double measure(uint64_t *ptes, const struct model_page *pages,
		      const uint64_t *pfn)
{
	double best = 0;
	unsigned long i, young = 0;
	int r;

	for (i = 0; i < NR_PTES; i++)
		ptes[i] = (pfn[i] << PTE_PFN_SHIFT) | PTE_PRESENT;
	for (r = 0; r < REPS; r++) {
		double t = now_ns();
		unsigned long n = walk(ptes, pages, &young);
		double ns = (now_ns() - t) / NR_PTES;

		if (n != NR_PTES || young) {
			fprintf(stderr, "ptecal: %lu of %lu PTEs scanned, %lu young\n",
				n, NR_PTES, young);
			exit(1);
		}
		if (!r || ns < best)
			best = ns;
	}
	return best;
}

int main(void)
{
	uint64_t *ptes = malloc(NR_PTES * sizeof(*ptes));
	uint64_t *pfn = malloc(NR_PTES * sizeof(*pfn));
	struct model_page *pages = calloc(NR_PTES, sizeof(*pages));
	double seq, rnd;
	unsigned long i;

	if (!ptes || !pfn || !pages) {
		fprintf(stderr, "ptecal: out of memory\n");
		return 1;
	}
	for (i = 0; i < NR_PTES; i++) {
		pages[i].flags = SLOW_NODE << NODE_SHIFT;
		pfn[i] = i;
	}
	seq = measure(ptes, pages, pfn);
	for (i = NR_PTES - 1; i > 0; i--) {
		unsigned long j = rng() % (i + 1);
		uint64_t t = pfn[i];

		pfn[i] = pfn[j];
		pfn[j] = t;
	}
	rnd = measure(ptes, pages, pfn);
	printf("P seq_ns=%.3f rand_ns=%.3f ptes=%lu\n", seq, rnd, NR_PTES);
	return 0;
}
