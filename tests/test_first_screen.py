"""REPORT.md's first screen answers at a glance (issue 46, item 2): at most 25 lines and 220 words, no line over
40 words, on a clean run and on a busy (contaminated) one. It holds a short line each for the verdict, the run's
trust, the fastest CPU configuration and its ties, the step-time growth and the break-even along each axis; the
reasons and caveats come below it, said once."""

from __future__ import annotations

import dataclasses

import builders_planner as builders
import pytest
from test_decision_report import NO_CUDA, _inputs, _verdict, load_table, train_records  # noqa: F401 - fixtures
from test_trust import LABELS, _table, cells  # noqa: F401 - fixtures used by name

from accel_choice.analyze import same_jobs, timing_plan, trust
from accel_choice.records.training import Contamination
from accel_choice.render import html, report

# The first screen: everything above this heading (landing.rst shows the same, less the title).
SHEET = "\n## GPU decision sheet (section 28.3.5)"
MAX_LINES, MAX_WORDS, MAX_LINE_WORDS = 25, 220, 40


def first_screen(text: str) -> str:
    assert SHEET in text
    return text.split(SHEET, 1)[0].rstrip("\n")


def size(screen: str) -> tuple[int, int, int]:
    """Lines (blank ones and the title included), words, and the words of the longest line."""
    words = [len(line.split()) for line in screen.splitlines()]
    return len(words), sum(words), max(words)


def assert_fits(screen: str) -> None:
    lines, words, longest = size(screen)
    assert lines <= MAX_LINES and words <= MAX_WORDS and longest <= MAX_LINE_WORDS, (lines, words, longest, screen)


def _axis(axis: str, placement: str, **fields) -> object:
    return builders.break_even_summary(axis=axis, placement=placement, sweep_min=8, sweep_max=8192, **fields)


# The default run's break-evens (results of 2026-12: four wide ones, rows never within the sweep), on an
# assumed GPU: the longest source the first screen names.
BREAK_EVENS = builders.break_even_table(
    summary=(
        _axis("features", "resident", break_even=290.0, break_even_low=14.0, break_even_high=1055.0),
        _axis("features", "streamed", break_even=296.0, break_even_low=14.0, break_even_high=1075.0),
        _axis("hidden", "resident", break_even=425.0, break_even_low=21.0, break_even_high=1547.0),
        _axis("hidden", "streamed", break_even=426.0, break_even_low=22.0, break_even_high=1548.0),
        *(
            builders.break_even_summary(
                placement=placement,
                sweep_max=100_000_000,
                break_even=None,
                break_even_low=None,
                break_even_high=None,
                break_even_low_where="below_sweep",
                break_even_high_where="beyond_sweep",
                gpu_never_faster=True,
                break_even_share=0.0,
                gpu_always_faster_share=0.02,
                no_break_even_share=0.98,
            )
            for placement in ("resident", "streamed")
        ),
    ),
    curves=tuple(
        builders.curve_row(axis=axis, placement=placement, value=value, cpu_s=cpu_s)
        for axis in ("features", "hidden", "rows")
        for placement in ("resident", "streamed")
        for value, cpu_s in ((8, 0.2), (8192, 2.0))
    ),
)


def _render(records, load_table, timed) -> str:  # noqa: F811
    """The report of these records, its trust and noise floor from the training table `timed` (its sentinel)."""
    run_trust = trust.run_trust([("cpu", timed)], 0.25)
    inputs = _inputs(records, load_table, env=NO_CUDA)
    floor = timed.sentinel.noise_floor
    verdict = _verdict(inputs.train_table, inputs.decision.full_path, trust=run_trust, noise_floor=floor)
    return report.render(
        dataclasses.replace(
            inputs,
            decision=dataclasses.replace(inputs.decision, verdict=verdict),
            break_even=BREAK_EVENS,
            cost_model=builders.cost_model_table(),
            sentinels=(("CPU", timed.sentinel),),
            # As make_report.py adds it: what narrowing the widest interval would take, counted on the screen.
            narrowing=timing_plan.narrowing(verdict, 0.10, inputs.train_table, None),
        )
    )


def test_a_clean_run_answers_on_one_screen(train_records, load_table, cells):  # noqa: F811
    text = _render(train_records, load_table, _table(cells, dict.fromkeys(LABELS, 1.0)))
    screen = first_screen(text)
    assert_fits(screen)
    assert html.first_screen(text) == screen.split("\n", 1)[1].strip()  # the landing page shows the same
    # a short line each: the verdict, the trust, the fastest configuration, its ties, the step-time growth
    for said in (
        "\n**Verdict: CPU.** No CUDA device was visible",
        "\n- Fastest CPU configuration: fastpath B=512 on 1 thread, 10.0 ms per epoch.\n",
        "\n- Tied with it (95% intervals): dataloader B=512 on 1 thread (",
        "\n- Step time grew 4.00× (95% interval ",
        "(16× the samples): fixed per-step overhead dominates.\n",
        "\n- Noise floor ±0.0%: smaller differences are not evidence.\n",
        "\nAll 3 timing jobs ran clean (no job flagged).\n",
        "\n**At what size would a GPU pay off?** Modelled on your assumed GPU",
        "\n- features, resident: ~290 (14–1,055; wide)\n",
        "\n- hidden units, streamed: ~426 (22–1,548; wide)\n",
        "\n- rows, resident: none up to 100,000,000 (below–beyond the sweep; wide)\n",
    ):
        assert said in screen, said
    # the reasons and caveats: below, once
    below = text.split(SHEET, 1)[1]
    for caveat in (
        "a sum of medians from different jobs, with no interval: not a measured difference",
        "Memory does not decide here",
        "which a faster arithmetic unit does not remove",
        "(95% intervals of the epoch ratio reach down to 1 or into the noise floor)",
        "**wide**: its ends 75.4× apart",  # the planner section's table: 1,055 / 14
        "the GPU wins over the whole range in 2% of refits",
        "Differences below ±",  # what the noise floor is: its own section
    ):
        assert caveat not in screen and caveat in below, caveat


def test_a_contaminated_run_answers_on_one_screen_too(train_records, load_table, cells):  # noqa: F811
    # a busy machine: 2 of 3 jobs at another speed, one of them beside other processes' CPU, and a harness that cannot
    # time a cell to ±10 % (its plain loop 0.8, 1.3 and 1.0× the pipeline's epoch): the longest first screen
    busy_cells = [
        dataclasses.replace(
            cell,
            contaminated=tuple(Contamination(repeat=r, reasons=("other processes used 1.20 cores",)) for r in (0,)),
        )
        for cell in cells
    ]
    speeds = dict.fromkeys(LABELS, 1.0) | {"rep0": 2.0, "rep1": 0.5}
    busy = _table(busy_cells, speeds)
    bad = trust.run_trust([("cpu", busy)], 0.25)
    assert bad.contaminated and len(bad.flagged) == 2
    shaky = [
        dataclasses.replace(r, reference_epoch_s=r.epoch_s * (0.8, 1.3, 1.0)[r.repeat]) if r.finite else r
        for r in train_records
    ]
    text = _render(shaky, load_table, busy)
    screen = first_screen(text)
    assert_fits(screen)
    assert screen.index("**This run was contaminated: 2 of 3 timing jobs were flagged") < screen.index(
        "\nRe-measure the flagged jobs on a quiet machine: `snakemake --cores 4 --force "
    )
    assert screen.index("`snakemake --cores 4 --force ") < screen.index("**Verdict: CPU.**")
    for said in (
        "\n- Fastest CPU configuration: undecided; by its point, fastpath B=512 on 1 thread",
        "(16× the samples): overhead or work, undecided.\n",
        "\n**Accuracy:** same-work timings spread ",
        "\n- rows, streamed: none up to 100,000,000 (below–beyond the sweep; wide)",
    ):
        assert said in screen, said
    assert "Tied with it" not in screen
    # why it was flagged, and what the contamination leaves undecided: under the flags
    below = text.split(SHEET, 1)[1]
    assert "| the machine's speed (sentinel) | timing jobs | 2 of 3 |" in below
    assert "| other processes' CPU | timing jobs | 1 of 3 |" in below
    assert "Every outcome resting on its timings is undecided" in below


@pytest.mark.parametrize("ties", [4, 9])
def test_many_ties_are_listed_below_and_counted_on_the_first_screen(train_records, load_table, ties):  # noqa: F811
    from accel_choice.render import decision as words

    inputs = _inputs(train_records, load_table, env=NO_CUDA)
    verdict = inputs.decision.verdict
    (tie,) = verdict.fastest_cpu_ties
    many = dataclasses.replace(
        verdict, fastest_cpu_ties=tuple(dataclasses.replace(tie, threads=t) for t in range(1, ties + 1))
    )
    line = words.ties_line(many)
    assert line.count("×, ") == words.FIRST_SCREEN_TIES and len(line.split()) <= MAX_LINE_WORDS
    assert line.endswith(f"; {ties - words.FIRST_SCREEN_TIES} more below the decision sheet.")
    assert words.ties_sentence(many).count(" on ") == ties + 1  # every one, and the fastest, below


def test_a_tie_from_separate_processes_says_so_and_three_of_them_still_fit_a_line(train_records, load_table):  # noqa: F811
    """Thread counts are timed in separate processes: their Welch ratio is the wide one, and the line says why."""
    from accel_choice.analyze.job_intervals import PAIRED, WELCH
    from accel_choice.render import decision as words

    verdict = _inputs(train_records, load_table, env=NO_CUDA).decision.verdict
    (tie,) = verdict.fastest_cpu_ties

    def tied(method: str, count: int) -> str:
        ratio = dataclasses.replace(tie.over_fastest, method=method)
        ties = tuple(dataclasses.replace(tie, threads=t, over_fastest=ratio) for t in range(2, count + 2))
        return words.ties_line(dataclasses.replace(verdict, fastest_cpu_ties=ties))

    assert "separate processes" not in tied(PAIRED, 1)
    assert tied(WELCH, 1).endswith(", separate processes).")
    # a cell its jobs' rounds put ahead of the fastest (by its point) is a tie too, and the line says why it reads below 1
    ahead = dataclasses.replace(tie.over_fastest, point=0.97, low=0.95, high=0.99, method=same_jobs.METHOD)
    line = words.ties_line(
        dataclasses.replace(verdict, fastest_cpu_ties=(dataclasses.replace(tie, over_fastest=ahead),))
    )
    assert line.endswith("(0.97×, 0.95–0.99, faster round by round).")
    assert "round by round" not in tied(PAIRED, 1)
    line = tied(WELCH, 9)
    assert line.count("separate processes") == words.FIRST_SCREEN_TIES and len(line.split()) <= MAX_LINE_WORDS
