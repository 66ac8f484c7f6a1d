"""Write ``bench/results/unseen.json``: each unseen-schema set's figures per pipeline, from the
evaluation folders that ran on it, with the read and the unread halves apart.

A set is an evaluation folder (``results.jsonl`` and ``sittings.jsonl``) and the dataset file
naming its unread questions; the figures are the harness's own
(:func:`agents.evaluation.report.summarize`), so they match the folder's ``report.json``::

    python bench/unseen_report.py \\
        --set people_ops=bench/results/unseen-people-ops:bench/runs/unseen/people_ops/unread.json \\
        --set renamed_spider=bench/results/renamed-spider-unread:
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from agents.evaluation.report import summarize  # noqa: E402

OUT = ROOT / "bench" / "results" / "unseen.json"


def _figures(records: list[dict]) -> dict:
    return {name: {"ex": s["ex"], "exec_error_pct": s["exec_error_rate"],
                   "median_s": s["seconds_p50"], "n": s["n"]}
            for name, s in summarize(records).items()}


def one_set(name: str, folder: Path, unread_file: Path | None) -> list[dict]:
    """The set's entries: the unread questions, and the read ones when some were read."""
    records = [json.loads(line) for line in
               (folder / "results.jsonl").read_text(encoding="utf-8").splitlines() if line]
    sittings = [json.loads(line) for line in
                (folder / "sittings.jsonl").read_text(encoding="utf-8").splitlines() if line]
    unread = None
    if unread_file is not None:
        unread = {q["question_id"] for q in json.loads(unread_file.read_text(encoding="utf-8"))}
    groups = [(True, [r for r in records if unread is None or r["question_id"] in unread])]
    if unread is not None:
        groups.append((False, [r for r in records if r["question_id"] not in unread]))
    return [{"name": name, "n": len({r["question_id"] for r in chosen}), "unread": flag,
             "folder": str(folder.relative_to(ROOT)), "pipelines": _figures(chosen),
             "code": sorted({s.get("code") for s in sittings}),
             "dates": [s.get("started") for s in sittings] + [sittings[-1].get("ended")]}
            for flag, chosen in groups if chosen]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--set", action="append", default=[], metavar="NAME=FOLDER:UNREAD",
                        help="a set: its evaluation folder and the file of its unread questions "
                             "(empty: every question is unread)")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    sets = []
    for spec in args.set:
        name, _, rest = spec.partition("=")
        folder, _, unread = rest.partition(":")
        sets += one_set(name, (ROOT / folder).resolve(),
                        (ROOT / unread).resolve() if unread else None)
    report = {"sets": sets,
              "machine": f"{platform.machine()}, {platform.system()} {platform.release()}, "
                         "2 cores, no GPU; the embedded Qwen2.5-Coder-1.5B-Instruct Q4_K_M, "
                         "temperature 0, response cache off",
              "commit": sorted({c for s in sets for c in s["code"]}),
              "date": max((d for s in sets for d in s["dates"] if d), default=None)}
    args.out.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    print(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
