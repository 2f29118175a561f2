"""``python -m kafkalab.classroom pack|grade``: build the classroom packs, grade submissions.

::

    python -m kafkalab.classroom pack --out dist/classroom
    python -m kafkalab.classroom grade SUBMISSIONS --course dist/classroom/instructor --csv grades.csv
    python -m kafkalab.classroom check sign-bit-abs    # a "change the engine" exercise's check
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from kafkalab.classroom.pack import CELL_TIMEOUT_S_DEFAULT, build_packs, instructor_notebooks

REPO_ROOT = Path(__file__).resolve().parents[2]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kafkalab.classroom")
    commands = parser.add_subparsers(dest="command", required=True)
    pack = commands.add_parser("pack", help="build the student and instructor packs")
    pack.add_argument("--out", type=Path, default=Path("dist/classroom"))
    pack.add_argument("--repo", type=Path, default=REPO_ROOT, help="the kafkalab checkout")
    grade = commands.add_parser("grade", help="autograde a folder of submissions into a CSV")
    grade.add_argument("submissions", type=Path, help="a folder with one folder per student")
    grade.add_argument("--course", type=Path, default=Path("dist/classroom/instructor"))
    grade.add_argument("--csv", type=Path, default=Path("grades.csv"))
    engine = commands.add_parser("check", help="run a change-the-engine exercise's check")
    engine.add_argument("name", help="the exercise's change, e.g. sign-bit-abs")
    for command in (pack, grade):
        command.add_argument("--cell-timeout", type=int, default=CELL_TIMEOUT_S_DEFAULT,
                             help="seconds a cell may run before it is interrupted")
    args = parser.parse_args(argv)
    if args.command == "check":
        from kafkalab.classroom.engine_changes import EngineUnchanged, check

        try:
            print(check(args.name))
        except EngineUnchanged as unchanged:
            print(f"not yet: {unchanged}", file=sys.stderr)
            return 1
        return 0
    if args.command == "pack":
        sources = instructor_notebooks(args.repo)
        if not sources:
            print(f"no answered notebooks under {args.repo}/book or /labs", file=sys.stderr)
            return 1
        packs = build_packs(sources, args.out, args.cell_timeout)
        print(f"student pack: {packs.student}\ninstructor pack: {packs.instructor}")
        return 0
    from kafkalab.classroom.grade import grade_folder

    grades = grade_folder(args.submissions, args.course, args.csv, args.cell_timeout)
    for g in grades:
        failed = f"  failed: {' '.join(g.failed)}" if g.failed else ""
        print(f"{g.student:<20} {g.notebook:<45} {g.score:g}/{g.max_score:g}{failed}")
    print(f"wrote {args.csv}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
