"""Check an archived results/ folder against its MANIFEST.sha256, including files added since.

    .venv/bin/python workflow/scripts/verify_results.py results

Exit 0 when every listed file is unchanged and nothing was added or removed; 1 otherwise,
naming each file; 2 when the folder has no readable manifest.
"""

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from accel_choice import archive  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", type=Path, help="an archived results/ folder")
    args = parser.parse_args(argv)
    try:
        manifest = archive.read_manifest(args.results / archive.MANIFEST_NAME)
    except (OSError, ValueError) as error:
        print(f"cannot verify {args.results}: {error}", file=sys.stderr)
        return 2
    problems = archive.check_files(args.results, manifest, archive.AFTER_THE_MANIFEST)
    for kind, names in problems.items():
        for name in names:
            print(f"{kind}: {name}")
    listed = len(manifest)
    if any(problems.values()):
        print(f"{args.results}: does NOT match its manifest ({listed} files listed)", file=sys.stderr)
        return 1
    print(f"{args.results}: all {listed} listed files match; nothing added or removed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
