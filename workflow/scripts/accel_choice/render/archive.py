"""The archive in the report: resources per rule and the provenance of the records."""

from __future__ import annotations

from typing import Any

from accel_choice.io import paths
from accel_choice.records.resources import ResourceTable
from accel_choice.render.formatting import number, table


def resources_section(result: ResourceTable | None) -> str:
    if not result:
        return ""
    rows = [
        (
            r.rule,
            r.jobs,
            f"{r.process_wall_total_s:.1f}",
            number(r.process_wall_median_s, ".2f"),
            number(r.body_wall_median_s, ".2f"),
            number(r.outside_body_median_s, ".2f"),
            number(r.max_rss_mb_sampled, ".0f"),
            r.jobs_without_rss_sample,
            number(r.peak_rss_mb_kernel, ".0f"),
        )
        for r in result.rules
    ]
    return (
        "## Resources per rule (Snakemake `benchmark:` beside the in-script timings)\n\n"
        + table(
            (
                "rule",
                "jobs",
                "process wall total s",
                "process wall median s",
                "script body median s",
                "outside the body s",
                "max RSS MiB (sampled)",
                "jobs without an RSS sample",
                "peak RSS MiB (kernel)",
            ),
            rows,
        )
        + "\n\nWhich to trust for what: the `benchmark:` wall time is the whole process - interpreter start, imports "
        'and Snakemake\'s script preamble (the "outside the body" column) - so use it for what a job costs the scheduler '
        "and for sizing cluster requests. Its memory is sampled (first every 0.5 s, later every 30 s), so a short job "
        "can have no sample or a maximum below its real peak; the kernel's peak RSS (getrusage) does not miss. The "
        "measurements of this report are the in-script `perf_counter` timings around each timed section: the "
        "directive cannot separate warm-up, data loading and the epoch, and includes the overhead above."
    )


def provenance_section(provenance: dict[str, Any] | None) -> str:
    if not provenance:
        return ""
    workflow = provenance.get("workflow") or {}
    commit = workflow.get("commit") or "unknown (not a git checkout)"
    invocation = provenance.get("invocation") or {}
    rows = [
        ("workflow commit", f"`{commit}`" + (" with uncommitted changes" if workflow.get("dirty") else "")),
        ("Snakemake", invocation.get("snakemake_version") or "unknown"),
        ("command line", f"`{invocation['command_line']}`" if invocation.get("command_line") else "unknown"),
        ("working directory", invocation.get("working_directory") or "unknown"),
        ("started", invocation.get("started") or "unknown"),
        ("host", invocation.get("host") or "unknown"),
    ]
    commits = provenance.get("record_commits") or {}
    command_lines = provenance.get("record_command_lines") or {}
    rows += [
        ("workflow commits in the records", "; ".join(f"`{c}`: {n}" for c, n in commits.items()) or "none"),
        ("command lines in the records", "; ".join(f"`{c}`: {n}" for c, n in command_lines.items()) or "none"),
    ]
    warning = (
        "\n\n**Warning: the records come from more than one version of the workflow (or from uncommitted "
        "changes); re-run from a clean checkout before archiving.**"
        if len(commits) > 1
        else ""
    )
    return (
        "## Provenance\n\n"
        + table(("", ""), rows)
        + warning
        + "\n\nThe first rows are the invocation that wrote this report; every record also carries the commit and "
        "the command line of the invocation that measured it, counted above over the records this configuration "
        f"made (`{paths.PROVENANCE}` repeats the count over the finished folder). `{paths.MANIFEST}` vouches for the "
        f"files this configuration made and for nothing else: files in `{paths.RESULTS}/` that it did not make (an "
        f"earlier configuration's records, say) are listed in `{paths.PROVENANCE}` under "
        f"`files.not_made_by_this_configuration`. `workflow/scripts/verify_results.py {paths.RESULTS}` checks both "
        "and names anything added since."
    )
