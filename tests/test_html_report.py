"""REPORT.md for a browser (render/html.py): REPORT.html with HTML tables, and the landing page of
Snakemake's HTML report, rendered here the way Snakemake renders it (Jinja, then docutils)."""

from __future__ import annotations

import jinja2
from docutils.core import publish_parts

from accel_choice.render import html

REPORT = """# accel-choice: is a CPU enough for this training job?

**Verdict: CPU.** No CUDA device was visible: the GPU plan is theoretical and no speedup is claimed.

- Fastest CPU configuration: fastpath B=64 on 1 thread, 8.30 ms per epoch.
- a template-looking text stays text: {{ config }} {% raw %} and `code_`

All 30 timing jobs ran clean (no job flagged).

## GPU decision sheet (section 28.3.5)

| step | what | status |
|---|---|---|
| 1 | CPU baseline | measured |
"""


def test_the_report_page_has_real_tables_and_no_script() -> None:
    page = html.report_page(REPORT, title="a <title>")
    assert page.startswith("<!doctype html>") and "<title>a &lt;title&gt;</title>" in page
    assert "<table>" in page and "<th>status</th>" in page and "<td>measured</td>" in page
    assert "<strong>Verdict: CPU.</strong>" in page and "<script" not in page


def test_the_first_screen_is_everything_above_the_first_section() -> None:
    first = html.first_screen(REPORT)
    assert first.startswith("**Verdict: CPU.**") and first.endswith("All 30 timing jobs ran clean (no job flagged).")
    assert "GPU decision sheet" not in first and "# accel-choice" not in first


def _as_snakemake_renders(rst: str) -> str:
    """Snakemake's report: the description is a Jinja template (with `snakemake`), then docutils' HTML."""
    text = jinja2.Environment().from_string(rst).render(snakemake=None, categories={}, files={})
    return publish_parts(text, writer="html", settings_overrides={"report_level": 2})["html_body"]


def test_the_landing_page_opens_with_the_verdict_and_keeps_the_description() -> None:
    rst = html.landing_rst(REPORT, "The workflow's own description.\n")
    shown = _as_snakemake_renders(rst)
    assert shown.index("<strong>Verdict: CPU.</strong>") < shown.index("The workflow's own description.")
    assert "All 30 timing jobs ran clean (no job flagged)." in shown
    assert "{{ config }} {% raw %}" in shown  # the report's text is not read as a template
    assert "GPU decision sheet" not in shown and "system-message" not in shown
    # its own style: the answer in a box with the bar a screenshot is checked for, the page's vertical
    # centring (which cut a long landing text's top off) undone, code spans without added backticks
    style = shown.split("<style>", 1)[1].split("</style>", 1)[0]
    assert f"solid rgb{html.ANSWER_BAR}" in style and ":has(.accel-choice-answer){align-items:flex-start}" in style


def test_a_report_that_closes_the_template_escape_still_renders_literally() -> None:
    rst = html.landing_rst(REPORT.replace("{% raw %}", "{% endraw %}{{ 1 + 1 }}"), "Described.\n")
    shown = _as_snakemake_renders(rst)
    assert "{% endraw %}{{ 1 + 1 }}" in shown and "Described." in shown
