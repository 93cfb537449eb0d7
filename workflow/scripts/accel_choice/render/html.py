"""REPORT.md for a browser: the whole report as one HTML page with real tables (python-markdown), and the
landing page of Snakemake's HTML report: REPORT.md's first screen (the verdict, the run's trust, where a
GPU would pay off) above the workflow's description. Nothing is computed here: both are REPORT.md's text."""

from __future__ import annotations

import html

import markdown

from accel_choice.io import paths

# Tables, and code spans kept as written: REPORT.md uses nothing else beyond plain Markdown.
EXTENSIONS = ("tables", "sane_lists")
STYLE = (
    "body{font-family:system-ui,sans-serif;max-width:72rem;margin:2rem auto;padding:0 1rem;line-height:1.45}"
    "table{border-collapse:collapse;margin:1rem 0;font-size:.9rem}"
    "th,td{border:1px solid #bbb;padding:.25rem .5rem;text-align:left;vertical-align:top}"
    "th{background:#eee}code{background:#f4f4f4;padding:0 .2rem}"
)


# The landing page's own style, in its raw block (Snakemake's report shows it through the page's HTML, where a
# <style> applies): the answer in a box with a teal bar (ANSWER_BAR, which tests/test_workflow.py finds in a
# screenshot); the page's container, which centres its content vertically in the window (Tailwind's
# `items-center h-screen`) and so cuts off the top of a landing text taller than the window - the verdict - with
# no way to scroll up to it, set to start at the top; code spans without the backticks Tailwind's `prose` adds.
ANSWER_BAR = (15, 118, 110)
LANDING_STYLE = (
    f".accel-choice-answer{{border-left:6px solid rgb{ANSWER_BAR};padding:.1rem 0 .1rem .9rem;margin:1rem 0}}"
    "div.items-center:has(.accel-choice-answer){align-items:flex-start}"
    ".accel-choice-answer code::before,.accel-choice-answer code::after{content:none}"
)


def to_html(text: str) -> str:
    """Markdown (REPORT.md's) as an HTML fragment."""
    return markdown.markdown(text, extensions=list(EXTENSIONS), output_format="html")


def report_page(text: str, title: str) -> str:
    """REPORT.md as one self-contained HTML page (no script, no external file)."""
    return (
        '<!doctype html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f"<title>{html.escape(title)}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n"
        f"{to_html(text)}\n</body>\n</html>\n"
    )


def first_screen(text: str) -> str:
    """REPORT.md's opening: everything above its first section (`## `), the title line left out."""
    opening = text.split("\n## ", 1)[0]
    lines = opening.splitlines()
    if lines and lines[0].startswith("# "):
        lines = lines[1:]
    return "\n".join(lines).strip()


def landing_rst(text: str, description: str) -> str:
    """Return the landing page of Snakemake's HTML report.

    The landing page of Snakemake's HTML report: REPORT.md's first screen as HTML (docutils' raw
    directive), then the workflow's own description. Snakemake renders this file as a Jinja template
    before docutils reads it, so the report's text is kept out of Jinja (`{% raw %}`)."""
    fragment = to_html(first_screen(text)).replace("{% endraw %}", "{% endraw %}{{ '{% endraw %}' }}{% raw %}")
    block = "\n".join("   " + line if line else "" for line in fragment.splitlines())
    return (
        "accel-choice lab report\n=======================\n\n"
        "{% raw %}\n.. raw:: html\n\n"
        f"   <style>{LANDING_STYLE}</style>\n"
        f'   <div class="accel-choice-answer">\n{block}\n   </div>\n\n'
        "{% endraw %}\n"
        f"The whole decision report is ``{paths.REPORT}`` (category Decision; ``{paths.REPORT_HTML}`` there shows it "
        "with its tables).\n\n" + description
    )
