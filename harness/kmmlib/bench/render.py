"""Cells and tables as text: the formatting every table of the bench shares.

A table is a header and rows of cells (strings); it is rendered as
Markdown (table.md) or aligned in columns (the terminal).
"""

from collections.abc import Sequence

Cells = Sequence[str]


def fmt(v: float | None, spec: str = ".1f", none: str = "-") -> str:
    """v formatted by spec; none for a figure the run did not give."""
    return none if v is None else format(v, spec)


def fmt_x(v: float | None) -> str:
    """A ratio, as "1.23x"."""
    return "-" if v is None else f"{v:.2f}x"


def markdown_table(header: Cells, rows: Sequence[Cells]) -> list[str]:
    """The lines of a Markdown table, and a blank line after it."""
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return out + [""]


def aligned(header: Cells, rows: Sequence[Cells], indent: str = "  ",
            groups: Sequence[tuple[str, int, int]] = (),
            left: Sequence[int] = ()) -> list[str]:
    """The lines of a table in columns: the first, and those of left,
    left-aligned, the others right-aligned.  groups: (label, first column,
    last column) of labels to put on a line above the header, each centred
    over its columns."""
    table = [list(header)] + [list(r) for r in rows]
    widths = [max(len(r[i]) for r in table) for i in range(len(header))]
    flush_left = {0, *left}
    lines = [indent + "  ".join(v.ljust(widths[i]) if i in flush_left
                                else v.rjust(widths[i])
                                for i, v in enumerate(r)).rstrip()
             for r in table]
    if groups:
        starts = [sum(widths[:i]) + 2 * i for i in range(len(widths))]
        top = ""
        for label, first, last in groups:
            span = starts[last] + widths[last] - starts[first]
            top = top.ljust(starts[first]) + label.center(span)
        lines.insert(0, (indent + top).rstrip())
    return lines


def print_aligned(header: Cells, rows: Sequence[Cells]) -> None:
    """Prints aligned() (make run's table, the terminal's)."""
    print("\n".join(aligned(header, rows)))
