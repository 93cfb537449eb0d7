"""The report's cost section: what the measured times cost at the user's prices, and whether the
faster device is also the cheaper one (tables/cost.json; every claim is an outcome decided there)."""

from __future__ import annotations

from accel_choice.records.cost import CostLine, CostTable
from accel_choice.render.decision import path_name
from accel_choice.render.formatting import ms, table


def money(value: float | None, currency: str) -> str:
    return "—" if value is None else f"{value:.3g} {currency}"


def _target(line: CostLine, currency: str) -> tuple[str, str, str]:
    if line.target_run is None or line.target_s is None or line.target_cost is None:
        return ("no run reached the target", "—", "—")
    s, cost = line.target_s, line.target_cost
    return (
        line.target_run,
        f"{s.point:.2f} s ({s.low:.2f}–{s.high:.2f})",
        f"{money(cost.point, currency)} ({money(cost.low, currency)}–{money(cost.high, currency)})",
    )


def speed_words(c: CostTable) -> str:
    assert c.speedup is not None
    s = c.speedup
    interval = f"{c.confidence:.0%} interval {s.low:.2f}–{s.high:.2f}×"
    if s.low > 1:
        return f"the GPU is {s.point:.1f}× faster ({interval})"
    if s.high < 1:
        return f"the GPU is {1 / s.point:.1f}× slower ({interval})"
    return f"the GPU is not measurably faster or slower ({s.point:.2f}×, {interval})"


def cost_words(c: CostTable) -> str:
    assert c.cost_ratio is not None
    r = c.cost_ratio
    interval = f"interval {r.low:.2f}–{r.high:.2f}× the CPU's"
    if c.epoch_outcome == "gpu_cheaper":
        return f"{1 / r.point:.1f}× cheaper per epoch ({interval})"
    if c.epoch_outcome == "cpu_cheaper":
        return f"{r.point:.1f}× more expensive per epoch ({interval})"
    return f"not measurably cheaper or dearer per epoch ({r.point:.2f}×, {interval})"


TARGET_WORDS = {
    "gpu_cheaper": "To the Northstar target the GPU's run costs less: the two cost intervals do not overlap.",
    "cpu_cheaper": "To the Northstar target the CPU's run costs less: the two cost intervals do not overlap.",
    "no_difference": "To the Northstar target the two runs' cost intervals overlap: no measurable difference.",
}


def cost_headline(c: CostTable | None) -> str:
    """Say what the measured times cost at the user's prices, in a sentence or two (also REPORT.md's first screen)."""
    if c is None:
        return ""
    if c.epoch_outcome is not None:
        gpu_price = c.lines[1].per_hour
        head = (
            f"**At these prices ({money(c.lines[0].per_hour, c.currency)} per hour for the CPU, "
            f"{money(gpu_price, c.currency)} for the GPU: {c.price_ratio:.2f}× the CPU's), "
            f"{speed_words(c)} and {cost_words(c)}.**"
        )
        return head + (" " + TARGET_WORDS[c.target_outcome] if c.target_outcome is not None else "")
    if c.unpriced:
        return (
            f"The {', '.join(d.upper() for d in c.unpriced)} was measured, but `cost.per_hour` gives no price for it: "
            "the CPU's costs alone, no comparison."
        )
    return "No GPU was measured in this run: the CPU's costs alone, no comparison."


def cost_section(c: CostTable | None) -> str:
    if c is None:
        return ""
    rows = [
        (
            line.device.upper() if line.device != "cpu" else "CPU",
            money(line.per_hour, c.currency),
            path_name(line.path),
            ms(line.path.total_with_startup_s),
            money(line.epoch_cost, c.currency),
            *_target(line, c.currency),
        )
        for line in c.lines
    ]
    return (
        "## Cost at your prices\n\n"
        + cost_headline(c)
        + "\n\n"
        + table(
            (
                "device",
                "per hour",
                "fastest one-epoch full path",
                "ms (start-up included)",
                "cost per epoch",
                "fastest run to target",
                "seconds (interval)",
                "cost to target (interval)",
            ),
            rows,
        )
        + "\n\nPrices from `cost.per_hour` (`cost.currency`); a price is exact, so each cost carries the interval of"
        " the time it prices. Per epoch: the GPU's cost over the CPU's is the price ratio over the speedup, with"
        " the speedup's interval. To target: the Northstar selection's fastest run on each device."
    )
