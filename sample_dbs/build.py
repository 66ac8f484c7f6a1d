"""Builds the three demo SQLite databases shipped with the studio.

The data is synthetic but shaped like real data -- skewed popularity, seasonality, customers who
never order, open loans with no return date -- so that the example questions have interesting
answers and the agents meet the same pitfalls they meet on real databases. Everything is drawn
from one seeded generator per database and fixed calendar dates, so a rebuild gives the same
bytes and the reference SQL in ``questions.json`` keeps its answers.

Each database is one module (:mod:`.shop`, :mod:`.university`, :mod:`.library`: its DDL, its
data tables and its ``fill``); :mod:`.writing` writes any of them to a file and :mod:`.synth`
holds the values they share (people, e-mail addresses, dates, money).

    python -m sample_dbs.build [--out DIR]
"""

from __future__ import annotations

import argparse
from pathlib import Path

from . import library, shop, university
from .writing import write_db

SAMPLE_DIR = Path(__file__).resolve().parent
SEED = 42

_DATABASES = [shop, university, library]


def build_all(out_dir: Path | str = SAMPLE_DIR) -> list[Path]:
    """Build every sample database into ``out_dir`` (replacing old files) and return their paths."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    return [write_db(out / f"{db.NAME}.sqlite", db.DDL, db.fill, SEED) for db in _DATABASES]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Build the demo SQLite databases.")
    parser.add_argument("--out", type=Path, default=SAMPLE_DIR,
                        help="output folder (default: %(default)s)")
    args = parser.parse_args(argv)
    for path in build_all(args.out):
        print(f"{path}  {path.stat().st_size / 1e6:.2f} MB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
