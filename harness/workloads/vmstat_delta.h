/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The "V" line of the bench workloads: the deltas of the /proc/vmstat
 * counters that make bench reports, between two snapshots.  Header-only,
 * for tierbench and mcbench; the includer defines die().
 */
#ifndef VMSTAT_DELTA_H
#define VMSTAT_DELTA_H

#include <stdio.h>
#include <string.h>

/* /proc/vmstat of 6.12 has about 200 lines. */
#define MAX_VMSTAT	512
#define VMSTAT_NAME	64

struct vmstat_snap {
	int n;
	char name[MAX_VMSTAT][VMSTAT_NAME];
	unsigned long v[MAX_VMSTAT];
};

/*
 * The event counters whose deltas over the run the V line reports: every
 * kmmscand_ one, so that a new counter shows up with no harness change;
 * where allocations went (numa_); promotion, demotion and migration;
 * kswapd's runs and direct reclaim (is the fast node short of memory?);
 * compaction.
 */
static const char *const delta_prefixes[] = {
	"kmmscand_", "numa_", "pgpromote_", "pgdemote_", "pgmigrate_",
	"thp_migration_", "pageoutrun", "kswapd_", "allocstall_",
	"pgscan_", "pgsteal_", "compact_",
};

static void die(const char *what);

static void vmstat_snap(struct vmstat_snap *snap)
{
	FILE *f = fopen("/proc/vmstat", "r");

	if (!f)
		die("/proc/vmstat");
	snap->n = 0;
	while (snap->n < MAX_VMSTAT &&
	       fscanf(f, "%63s %lu", snap->name[snap->n], &snap->v[snap->n]) == 2)
		snap->n++;
	fclose(f);
}

static int vmstat_reported(const char *name)
{
	size_t i;

	for (i = 0; i < sizeof(delta_prefixes) / sizeof(*delta_prefixes); i++)
		if (!strncmp(name, delta_prefixes[i], strlen(delta_prefixes[i])))
			return 1;
	return 0;
}

/* "V name=delta ..." for the reported counters, from @a to @b. */
static void print_vmstat_deltas(const struct vmstat_snap *a,
				const struct vmstat_snap *b)
{
	int i, j;

	printf("V");
	for (i = 0; i < b->n; i++) {
		if (!vmstat_reported(b->name[i]))
			continue;
		for (j = 0; j < a->n && strcmp(a->name[j], b->name[i]); j++)
			;
		printf(" %s=%lu", b->name[i],
		       b->v[i] - (j < a->n ? a->v[j] : 0));
	}
	printf("\n");
}

#endif /* VMSTAT_DELTA_H */
