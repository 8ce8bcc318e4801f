"""make bench: kmmscand against NUMA balancing tiering mode and DAMON.

The modules, in the order the data flows through them (each imports only
from the ones before it):

  catalogue  the workloads, the configurations, the plan bench.sh runs
  guest      bench.sh's output lines -> Run records (the parser)
  model      Run records -> a Row per run: the modeled slowdown and the
             other figures, and the runs the emulator disturbed
  render     cells and tables as Markdown or aligned text
  headline   Rows -> the mechanisms side by side, with what is even
  tables     Rows -> the wide tables of out/bench/table.md
  progress   the line per run shown while the guest runs
  runner     make bench itself: build, boot, collect, report

hostbench.py runs the same plan on a host (make bench HOST=1) with the
same parser and report.
"""

from .catalogue import DEFAULT_CONFIGS, FULL_WORKLOADS

__all__ = ["DEFAULT_CONFIGS", "FULL_WORKLOADS"]
