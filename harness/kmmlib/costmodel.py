"""make bench: what kmmscand's CPU costs per unit of work, and at scale.

From the kmmscand runs of one invocation (/proc/vmstat deltas, and the
CPU time of the kmmscand thread, which does all of kmmscand's work), a
cost per PTE examined, per page migrated and per mm visited; from those
and the defaults of mm/kmmscand.c, the CPU kmmscand would use at steady
state on a machine with far more memory and processes than the VM.
"""

import os
import re

from .bench.guest import Run
from .common import REPO

# The work a run did, as (name, how it is counted from the run's vmstat
# deltas).  PTE tables read are not counted by any counter: a read table
# is 512 PTEs (PTEs / 512), so their cost is in the per-PTE one.  Regions
# passed over (kmmscand_region_skipped, kmmscand_pmd_skipped) are too few
# in the bench's runs, and too tied to the rest, for a cost of their own:
# a fit with them gave tens of microseconds per pass, which a lookup
# does not cost.
TERMS = (
    ("PTE examined", ("kmmscand_pte_scanned",)),
    ("page migrated", ("kmmscand_migrated",)),
    ("mm visited", ("kmmscand_mm_scans", "kmmscand_mm_idle_skipped")),
)
PTES_PER_TABLE = 512
REGION_MIB = 2

# A least-squares fit is used when the runs determine it: more runs than
# terms, cond(X^T X) of the column-scaled runs below this (cond(X) about
# its square root), and no cost below zero.
MAX_COND = 1e6

# The projection: 1 TiB mapped in 1000 processes, 5% of it hot.
PROJ_MMS = 1000
PROJ_MAPPED_MIB = 1 << 20
PROJ_HOT_SHARE = 0.05

# The defaults of mm/kmmscand.c the projection is computed from.
DEFAULTS = ("KMMSCAND_SCAN_PERIOD_MAX_MS",
            "KMMSCAND_SCAN_SIZE_MIN_MB", "KMMSCAND_SMART_SCAN_MAX_SKIPS",
            "KMMSCAND_SMART_SCAN_SKIPS_LIMIT", "KMMSCAND_NO_SLOW_SKIPS_SCALE",
            "KMMSCAND_PMD_OLD_MAX_SKIPS", "KMMSCAND_MIN_ACCESSED_PAGES")


def is_kmmscand(config):
    """kmmscand ran in this configuration (any knobs, variant or repeat)."""
    return config.startswith("kmm")


def run_work(run: Run) -> tuple[float, list[float]] | None:
    """(CPU seconds, [work of each TERMS]) of a kmmscand run, or None.

    The CPU is the kmmscand thread's: the counters count its work only.
    """
    res, vm = run.result, run.vmstat
    if (not res or not vm or run.status != 0
            or not is_kmmscand(run.config)):
        return None
    return (res["kmmscand_cpu_s"],
            [sum(vm.get(k, 0) for k in keys) for _, keys in TERMS])


def solve(a, b):
    """x with a x = b (Gauss-Jordan, partial pivoting); None if singular."""
    n = len(a)
    m = [list(row) + [v] for row, v in zip(a, b)]
    for c in range(n):
        p = max(range(c, n), key=lambda r: abs(m[r][c]))
        if abs(m[p][c]) < 1e-12:
            return None
        m[c], m[p] = m[p], m[c]
        for r in range(n):
            if r != c:
                f = m[r][c] / m[c][c]
                m[r] = [x - f * y for x, y in zip(m[r], m[c])]
    return [m[r][n] / m[r][r] for r in range(n)]


def least_squares(rows, cpu, terms):
    """Costs of the terms (indices) fitting cpu = rows . costs, no intercept.

    Returns (costs by term, cond, residual, why_not): costs None and
    why_not said when the fit is ill-conditioned or a cost is below zero.
    """
    p = len(terms)
    if len(rows) <= p:
        return None, None, None, f"{len(rows)} runs for {p} costs"
    scale = [max(r[j] for r in rows) or 1.0 for j in terms]
    xs = [[r[j] / s for j, s in zip(terms, scale)] for r in rows]
    a = [[sum(x[i] * x[j] for x in xs) for j in range(p)] for i in range(p)]
    b = [sum(x[i] * y for x, y in zip(xs, cpu)) for i in range(p)]
    cols = [solve(a, [float(i == j) for i in range(p)]) for j in range(p)]
    if any(c is None for c in cols):
        return None, None, None, "the runs do not tell the terms apart"
    norm = max(sum(abs(a[i][j]) for i in range(p)) for j in range(p))
    cond = norm * max(sum(abs(v) for v in c) for c in cols)
    if cond > MAX_COND:
        return None, cond, None, f"cond(X^T X) {cond:.3g} > {MAX_COND:.0g}"
    x = solve(a, b)
    if min(x) < 0:
        neg = [TERMS[j][0] for j, v in zip(terms, x) if v < 0]
        return None, cond, None, "a cost below zero (" + ", ".join(neg) + ")"
    resid = sum((y - sum(v * xi for v, xi in zip(x, row))) ** 2
                for row, y in zip(xs, cpu))
    return ({j: v / s for j, v, s in zip(terms, x, scale)}, cond, resid,
            None)


def best_fit(rows, cpu):
    """The fit of all terms, or else of the subset of them that fits best.

    Returns (costs per term, None for a term left out, cond, why the full
    fit was not used or None), or None if no subset fits.
    """
    full = tuple(range(len(TERMS)))
    costs, cond, _, why_not = least_squares(rows, cpu, full)
    if costs is not None:
        return [costs[j] for j in full], cond, None
    best = None
    for mask in range(1, (1 << len(TERMS)) - 1):
        terms = tuple(j for j in full if mask >> j & 1)
        c, k, resid, _ = least_squares(rows, cpu, terms)
        if c is not None and (best is None or resid < best[2]):
            best = (c, k, resid)
    if best is None:
        return None
    return [best[0].get(j) for j in full], best[1], why_not


def ratio_bounds(rows, cpu):
    """Per term, the least CPU per unit over the runs that did some.

    Each ratio charges all of a run's CPU to one kind of work, so it is an
    upper bound of that cost, and the least over the runs the tightest.
    """
    out = []
    for j in range(len(TERMS)):
        r = [c / row[j] for row, c in zip(rows, cpu) if row[j] > 0]
        out.append(min(r) if r else None)
    return out


def kmmscand_defaults():
    """The DEFAULTS as mm/kmmscand.c defines them."""
    with open(os.path.join(REPO, "mm", "kmmscand.c"), encoding="utf-8") as f:
        text = f.read()
    found = dict(re.findall(r"^#define\s+(KMMSCAND_\w+)\s+(\d+)\s*$", text,
                            re.M))
    missing = [d for d in DEFAULTS if d not in found]
    if missing:
        raise ValueError("mm/kmmscand.c defines no " + ", ".join(missing))
    return {d: int(found[d]) for d in DEFAULTS}


def projection(d, mglru=False):
    """Work per second of kmmscand at steady state on the projection's machine.

    mglru: the multi-gen LRU's page table walks clear the Accessed bit of
    PMD entries too, so a PTE table under an old one is read at least
    every KMMSCAND_PMD_OLD_MAX_SKIPS + 1 of its read visits; without them
    (the default) it is not read while its entry stays old.

    Returns (rates per TERMS, facts for the text).
    """
    period_s = d["KMMSCAND_SCAN_PERIOD_MAX_MS"] / 1000
    regions = PROJ_MAPPED_MIB / PROJ_MMS / REGION_MIB
    smart = d["KMMSCAND_SMART_SCAN_MAX_SKIPS"] + 1
    no_slow = min(d["KMMSCAND_NO_SLOW_SKIPS_SCALE"] * (smart - 1),
                  d["KMMSCAND_SMART_SCAN_SKIPS_LIMIT"]) + 1
    pmd = d["KMMSCAND_PMD_OLD_MAX_SKIPS"] + 1
    # share of region visits that read the PTE table
    cold = (1 - PROJ_HOT_SHARE) / (smart * pmd) if mglru else 0.0
    read = PROJ_HOT_SHARE / no_slow + cold
    read_mib = regions * read * REGION_MIB
    visits = PROJ_MMS * regions / period_s
    rates = [visits * read * PTES_PER_TABLE, 0.0, PROJ_MMS / period_s]
    facts = {"passes": visits * (1 - read), "period_s": period_s,
             "regions": regions, "smart": smart, "no_slow": no_slow,
             "pmd": pmd, "read": read, "read_mib": read_mib,
             # each scan takes its slot off the due queue and puts it back
             "queue_ops": 2 * PROJ_MMS / period_s}
    return rates, facts


def native_scale(calibration):
    """TCG's slowdown on a PTE walk, as (sequential, random) factors: the
    guest's ns per PTE of ptecal over the host's; None without both."""
    guest, host = (calibration or {}).get("guest"), (calibration or {}).get("host")
    if not guest or not host:
        return None
    return tuple(guest[k] / host[k] for k in ("seq_ns", "rand_ns"))


def cost_model(runs, calibration=None):
    """The costs from runs and the projection; None without kmmscand runs.

    calibration: ptecal's figures in the VM and on the host ({"guest":
    {"seq_ns", "rand_ns"}, "host": ...}), to scale the projection to the
    host CPU's own speed; None on a host run (its costs are native)."""
    work = [w for w in map(run_work, runs) if w is not None]
    if not work:
        return None
    cpu = [c for c, _ in work]
    rows = [r for _, r in work]
    fit = best_fit(rows, cpu)
    if fit is not None:
        costs, cond, why_not = fit
        method = "least-squares fit"
    else:
        costs, cond = ratio_bounds(rows, cpu), None
        why_not = "no subset of the costs fits these runs"
        method = "per-run ratios"
    d = kmmscand_defaults()
    rates, facts = projection(d)
    mglru_rates, mglru_facts = projection(d, mglru=True)
    bounds = ratio_bounds(rows, cpu)
    known = [c * r for c, r in zip(costs, rates) if c is not None]
    mglru_known = [c * r for c, r in zip(costs, mglru_rates) if c is not None]
    # what the terms the fit left out may add, at their upper bounds
    more = [b * r for c, b, r in zip(costs, bounds, rates)
            if c is None and b is not None]
    return {"method": method, "why_not_fit": why_not, "cond": cond,
            "runs": len(rows), "cpu_s": sum(cpu),
            "costs_s": dict(zip([t for t, _ in TERMS], costs)),
            "defaults": d, "projection_rates": dict(
                zip([t for t, _ in TERMS], rates)),
            "facts": facts,
            "bounds_s": dict(zip([t for t, _ in TERMS], bounds)),
            "projected_cpu_share": sum(known),
            "projected_cpu_share_mglru": sum(mglru_known),
            "facts_mglru": mglru_facts,
            "projected_cpu_share_bound": sum(known) + sum(more),
            "calibration": calibration,
            "native_factors": native_scale(calibration),
            "unknown_terms": [t for (t, _), c in zip(TERMS, costs)
                              if c is None]}


def fmt_cost(s):
    return "-" if s is None else f"{s * 1e9:.1f} ns"


def cost_model_lines(m):
    """The cost model as text, for the terminal and table.md."""
    d, f, fm = m["defaults"], m["facts"], m["facts_mglru"]
    left_out = [t for t, c in m["costs_s"].items() if c is None]
    if m["method"] == "least-squares fit":
        how = (f"least-squares fit (no intercept) over {m['runs']} kmmscand "
               f"runs, cond(X^T X) {m['cond']:.3g} (column-scaled)")
        if left_out:
            how += (f"; of the costs that fit best, as the fit of all did "
                    f"not ({m['why_not_fit']}): per {', per '.join(left_out)}"
                    " left out, not told apart by these runs")
    else:
        how = (f"per-run ratios over {m['runs']} kmmscand runs (no fit: "
               f"{m['why_not_fit']}): each is the least CPU per unit of "
               "that work over the runs, charging a run's whole CPU to it, "
               "so an upper bound, and the projection sums upper bounds")
    out = [f"Cost model of kmmscand's CPU: {how}; {m['cpu_s']:.2f} CPU s "
           "in all, the kmmscand thread's, "
           "measured under this VM (TCG emulates the CPU, so the "
           "costs are several times a real CPU's)."]
    for term, cost in m["costs_s"].items():
        bound = m["bounds_s"][term]
        extra = "" if cost is not None or bound is None else (
            f"not resolved; at most {fmt_cost(bound)} (per-run ratio)")
        shown = cost if cost is not None else bound
        if term == "PTE examined" and shown is not None:
            extra += (f"; per PTE table read, 512 PTEs: "
                      f"{shown * PTES_PER_TABLE * 1e6:.1f} us; no counter "
                      "counts tables, PTEs / 512 estimates them")
        out.append(f"- per {term}: "
                   f"{fmt_cost(cost) if cost is not None else ''}{extra}")
    rates = m["projection_rates"]
    out.append(
        f"Projection: {PROJ_MAPPED_MIB >> 20} TiB mapped in {PROJ_MMS} "
        f"processes ({PROJ_MAPPED_MIB // PROJ_MMS} MiB each), "
        f"{PROJ_HOT_SHARE:.0%} hot, the rest idle, default knobs: "
        f"{100 * m['projected_cpu_share']:.2f}% of one CPU"
        + (f", up to {100 * m['projected_cpu_share_bound']:.2f}% with "
           f"{', '.join(m['unknown_terms'])} at the bound"
           if m["unknown_terms"] else "") + ". Per second: "
        + ", ".join(f"{v:,.0f} {t}" for t, v in rates.items()) + ". "
        f"With the multi-gen LRU's page table walks on (below): "
        f"{100 * m['projected_cpu_share_mglru']:.2f}%.")
    factors = m.get("native_factors")
    if factors:
        cal = m["calibration"]
        least, most = min(factors), max(factors)
        share, mglru = m["projected_cpu_share"], m["projected_cpu_share_mglru"]
        out.append(
            f"At this host CPU's own speed: {100 * share / most:.2f}"
            f" to {100 * share / least:.2f}% of one CPU; with the multi-gen "
            f"LRU's walks on, {100 * mglru / most:.2f} to "
            f"{100 * mglru / least:.2f}%. "
            "TCG's slowdown on a PTE walk, from ptecal "
            "(harness/workloads/ptecal.c, a user-space model of the loop "
            "of kmmscand_scan_ptes() over old slow-tier PTEs and their "
            "struct pages), run in the VM and on the host: "
            f"{cal['guest']['seq_ns']:.1f} / {cal['host']['seq_ns']:.2f} ns "
            f"per PTE with the PFNs in order ({factors[0]:.0f}x), "
            f"{cal['guest']['rand_ns']:.1f} / {cal['host']['rand_ns']:.2f} ns "
            f"in random order ({factors[1]:.0f}x); every fitted cost divided "
            "by one factor or the other. An estimate: the kernel's loop has "
            "more to it than the model, and the host is itself a virtual "
            "machine.")
    out.append("Assumptions, from the defaults of mm/kmmscand.c:")
    out += [
        f"- Steady state: the hot {PROJ_HOT_SHARE:.0%} is on the fast node "
        "already and stays hot, the rest sits on the slow node and is never "
        "touched: nothing is promoted (0 pages/s), in 4 KiB pages (no THP), "
        "the hot set filling whole 2 MiB regions of its own.",
        "- Every process runs (its hot set is in use), so idle-mm skipping "
        "never passes over a scan; a scan finds fewer than "
        f"KMMSCAND_MIN_ACCESSED_PAGES ({d['KMMSCAND_MIN_ACCESSED_PAGES']}) "
        "accessed slow-tier pages, so it counts as idle and the period sits "
        f"at KMMSCAND_SCAN_PERIOD_MAX_MS ({d['KMMSCAND_SCAN_PERIOD_MAX_MS']}"
        f" ms): one scan per mm every {f['period_s']:g} s.",
        f"- A scan reads {f['read_mib']:.1f} MiB of its {f['regions']:.0f} "
        f"regions (below), under KMMSCAND_SCAN_SIZE_MIN_MB "
        f"({d['KMMSCAND_SCAN_SIZE_MIN_MB']}), and passing over costs no "
        "budget, so each scan covers its whole mm: every region is visited "
        "once a period.",
        "- Smart scan: every region's history is past the age at which "
        "smart_scan_skips() reaches its cap, KMMSCAND_SMART_SCAN_MAX_SKIPS "
        f"({d['KMMSCAND_SMART_SCAN_MAX_SKIPS']}) for a cold region, "
        f"KMMSCAND_NO_SLOW_SKIPS_SCALE ({d['KMMSCAND_NO_SLOW_SKIPS_SCALE']})"
        " times that, at most KMMSCAND_SMART_SCAN_SKIPS_LIMIT "
        f"({d['KMMSCAND_SMART_SCAN_SKIPS_LIMIT']}), for a region with no "
        "slow-tier folio: the hot regions are read once every "
        f"{f['no_slow']} visits. A cold region's PMD entry stays old, and "
        "only kmmscand clears it (the multi-gen LRU is off, as "
        "CONFIG_LRU_GEN_ENABLED=n boots, or its walks do not clear the "
        "bits of PMD entries), so its table is not read again. With "
        "the multi-gen LRU's walks on, its reads are passed over at most "
        f"KMMSCAND_PMD_OLD_MAX_SKIPS ({d['KMMSCAND_PMD_OLD_MAX_SKIPS']}) "
        f"times in a row: read once every {f['smart'] * f['pmd']} visits. "
        f"In all {100 * f['read']:.2f}% of region visits read a PTE table "
        f"({PTES_PER_TABLE} PTEs), {100 * fm['read']:.2f}% with the "
        "multi-gen LRU's walks on.",
        f"- Not costed on their own: {f['passes']:,.0f} region visits a "
        "second that pass over a region (a lookup each; in the fitted "
        "costs only as far as the runs had them), "
        f"{f['queue_ops']:,.0f} O(log n) operations a second on the queue "
        "of mms by due time (two per scan; no counter counts them, "
        "likewise), and the first scans that prime the regions.",
    ]
    return out
