"""What a promotion test can do on the hot-spot server workloads (u)/(v).

`python3 harness/kmm server-model` answers one question with a model
instead of a run: given the rates at which memcached reads the pages of
its hot set and of the rest in (v), which test on Accessed bits could
move 90% of the hot set within a deadline while promoting no more than
a given share beyond it, and would that test still do so on a faster
machine?

Each item page is read as a Poisson process: by the gets of the keys
whose items touch it, and by the hash lookups of every get, which
compare one item header per chained item passed on the way to the key's
own.  A region is read every scan period; a read sees a page accessed if
it was read at least once since the last read.  Tests:

- one sighting: promote at the first read that sees it accessed
  (min_heat=1, the default);
- two or three reads in a row: a heat that goes up by one per read that
  sees it accessed and down by one per read that does not, promoted at
  two (min_heat=2) or three (min_heat=3);
- two sightings within D seconds: the same heat, but cooling by one at
  most once per D seconds, so that two sightings up to D apart count.

What the model leaves out (the reason its times come out shorter than
the runs'): the first scan's delay, priming, the walk of 600 MiB, and
the copies.  docs/2026-11-27-server-hot-set-edge.md sets its shares of
cold pages beside the measured ones.  Monte Carlo with a fixed seed: the
same figures every run.
"""

import math
import random

from .bench.catalogue import SERVER_HOT_GETS_PCT, SERVER_HOT_PCT, SERVER_KEYS

PAGE = 4096
# memcached's slab chunk for SERVER_VALUE-byte values (header, key and
# value rounded up to its slab class), as mcbench reports it.
ITEM_CHUNK = 1184
# Items that touch a page: a page holds PAGE / ITEM_CHUNK of them and is
# cut through by one more.
ITEMS_PER_PAGE = PAGE / ITEM_CHUNK + 1
# bench.sh sizes memcached's hash table at 2^20 buckets (hashpower=20)
# for 524,288 keys, a load of 0.5; a successful lookup passes half the
# chain before the key's own item, a quarter of an item per get, any item
# alike.
CHAIN_ITEMS_PER_GET = 0.25

# gets/s of the measured (v) kmmscand run
# (docs/2026-11-27-server-hot-set-edge.md): the rate the model's pages
# are read at.
MEASURED_GETS_S = 9151
RUN_S = 25.0
DEADLINE_S = 20.0   # NUMA balancing's t90 on (v), the pace to match
HOT_GOAL = 0.90
BEYOND_GOAL = 0.25
PERIODS_S = (0.4, 2.0)
WINDOWS_S = (1, 2, 4, 6, 8)
PAGES = 4000
SEED = 1


def page_rates(gets_s):
    """Reads per second of one hot and one cold item page."""
    hot_keys = SERVER_KEYS * SERVER_HOT_PCT / 100
    cold_keys = SERVER_KEYS - hot_keys
    hot_share = SERVER_HOT_GETS_PCT / 100
    chain = CHAIN_ITEMS_PER_GET * gets_s / SERVER_KEYS
    hot = (hot_share * gets_s / hot_keys + chain) * ITEMS_PER_PAGE
    cold = ((1 - hot_share) * gets_s / cold_keys + chain) * ITEMS_PER_PAGE
    return hot, cold


def promotion_times(rng, rate, period, threshold, window):
    """When each of PAGES pages is promoted (None: not within RUN_S).

    window None cools the heat at every read that sees no access.
    """
    seen = 1 - math.exp(-rate * period)
    times = []
    for _ in range(PAGES):
        t = rng.uniform(0, period)
        heat = 0
        cooled = -math.inf
        when = None
        while t <= RUN_S:
            cool = window is None or t - cooled >= window
            if cool:
                cooled = t
            if rng.random() < seen:
                heat = min(heat + 1, 3)
                if heat >= threshold:
                    when = t
                    break
            elif cool and heat:
                heat -= 1
            t += period
        times.append(when)
    return times


def quantile(times, q):
    done = sorted(t for t in times if t is not None)
    need = math.ceil(q * len(times))
    return done[need - 1] if len(done) >= need else None


def share(times, by):
    return sum(t is not None and t <= by for t in times) / len(times)


def poisson_tail(mean, k):
    """P(N >= k) for N ~ Poisson(mean)."""
    return 1 - sum(math.exp(-mean) * mean ** i / math.factorial(i)
                   for i in range(k))


def best_count_test(hot, cold):
    """The least share of cold pages that a test seeing every read could
    promote while promoting HOT_GOAL of the hot pages by DEADLINE_S.

    By Neyman-Pearson the best such test promotes on a count of reads,
    randomised between two counts; it is allowed RUN_S for the cold
    pages' reads and DEADLINE_S for the hot pages'.
    """
    for k in range(1, 50):
        if poisson_tail(hot * DEADLINE_S, k + 1) < HOT_GOAL:
            break
    lo = poisson_tail(hot * DEADLINE_S, k + 1)
    hi = poisson_tail(hot * DEADLINE_S, k)
    mix = (HOT_GOAL - lo) / (hi - lo) if hi > lo else 0
    return (poisson_tail(cold * RUN_S, k + 1) +
            mix * (poisson_tail(cold * RUN_S, k) -
                   poisson_tail(cold * RUN_S, k + 1)))


def fmt(t):
    return "-" if t is None else f"{t:.1f}"


def report(scales=(1, 10)):
    cold_per_hot = (100 - SERVER_HOT_PCT) / SERVER_HOT_PCT
    tests: list[tuple[str, int, float | None]] = [
             ("one sighting (min_heat=1)", 1, None),
             ("two reads in a row (min_heat=2)", 2, None),
             ("three reads in a row (min_heat=3)", 3, None)]
    tests += [(f"two sightings within {w} s", 2, w) for w in WINDOWS_S]
    print(f"Goal: {HOT_GOAL:.0%} of the hot set by {DEADLINE_S:.0f} s, "
          f"at most {BEYOND_GOAL:.0%} beyond it by {RUN_S:.0f} s.")
    for scale in scales:
        gets = MEASURED_GETS_S * scale
        hot, cold = page_rates(gets)
        bound = best_count_test(hot, cold) * cold_per_hot
        print(f"\n{gets} gets/s: a hot page is read every {1 / hot:.1f} s, "
              f"a cold one every {1 / cold:.1f} s. Seeing every read, the "
              f"best test promotes {bound:.2f}x beyond the hot set.")
        print("| scan period | test | hot t50 / t90 s | hot by deadline "
              "| cold promoted | beyond the hot set | both goals |")
        print("|---|---|---|---|---|---|---|")
        for period in PERIODS_S:
            for name, threshold, window in tests:
                rng = random.Random(SEED)
                h = promotion_times(rng, hot, period, threshold, window)
                c = promotion_times(rng, cold, period, threshold, window)
                by = share(h, DEADLINE_S)
                beyond = share(c, RUN_S) * cold_per_hot
                ok = by >= HOT_GOAL and beyond <= BEYOND_GOAL
                print(f"| {period} s | {name} | {fmt(quantile(h, 0.5))} / "
                      f"{fmt(quantile(h, 0.9))} | {by:.0%} | "
                      f"{share(c, RUN_S):.1%} | {beyond:.2f}x "
                      f"| {'yes' if ok else 'no'} |")
