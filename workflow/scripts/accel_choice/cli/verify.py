"""Check an archived results/ folder against its MANIFEST.sha256, including everything added since.

    accel-choice verify results     (also python -m accel_choice verify, workflow/scripts/verify_results.py)

Exit 0 when every listed file is unchanged and nothing was added, removed or replaced by a link;
1 otherwise, naming each path; 2 when the folder has no readable manifest, or a line of it is
malformed or lists a path twice. Symbolic links are never followed. Files the archive found but
this configuration did not make are listed in provenance.json (not in the manifest); they are
checked against the hashes recorded there. Files written after the manifest (the archive job's log,
Snakemake's HTML or zip report) are named as not checked: nothing vouches for their contents.
"""

import argparse
import dataclasses
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from accel_choice.io import manifest, paths


def main(argv: Sequence[str] | None = None, prog: str | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog=prog,
        description=__doc__.splitlines()[0],
        epilog="exit status: 0 every listed file matches and nothing was added; 1 a difference (each path named); "
        "2 no readable manifest, or a malformed line",
    )
    parser.add_argument("results", type=Path, help=f"an archived {paths.RESULTS}/ folder")
    parser.add_argument("--json", action="store_true", help="print the verdict as one JSON object instead of text")
    args = parser.parse_args(argv)
    try:
        result = manifest.verify(args.results)
    except (OSError, manifest.ManifestError) as error:
        if args.json:
            print(json.dumps({"folder": str(args.results), "status": 2, "error": str(error)}))
        print(f"cannot verify {args.results}: {error}", file=sys.stderr)
        return 2
    if args.json:
        verdict = {"folder": str(args.results), "status": 0 if result.matches else 1}
        print(json.dumps(verdict | dataclasses.asdict(result) | {"matches": result.matches}, indent=2))
        return verdict["status"]
    for what, name in result.problems():
        print(f"{what}: {name}")
    foreign = (
        f"; {result.foreign} entr{'y' if result.foreign == 1 else 'ies'} not made by this configuration, "
        f"listed in {paths.PROVENANCE}"
        if result.foreign
        else ""
    )
    if not result.matches:
        print(f"{args.results}: does NOT match its manifest ({result.listed} files listed{foreign})", file=sys.stderr)
        return 1
    print(
        f"{args.results}: all {result.listed} listed files match; nothing added, removed or linked{foreign}"
        + (", unchanged" if result.foreign else "")
    )
    for name, embedded in result.report_vouched:
        print(f"{name}: vouched for: all {embedded} results it embeds match the manifest (its captions are the code's)")
    if result.unchecked:
        print(
            f"not checked (written after the manifest, so nothing vouches for their contents): "
            f"{', '.join(result.unchecked)}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
