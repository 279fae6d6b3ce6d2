"""Progress of `dpaudit run` on stderr: a tqdm bar over the runs or rounds, and a line before a large write.

Progress is on exactly as for ``dpaudit attack``: unless ``--no-progress`` is given, and only when stderr is
a terminal. stdout and the result files are the same either way.
"""

from __future__ import annotations

import sys

NO_PROGRESS_HELP = "no progress bar on stderr"
NO_PROGRESS_ACCEPTED = "accepted as by every command; this one shows no progress"
ANNOUNCE_BYTES = 1 << 20  # results from 1 MB on are announced before they are written
ANNOUNCE_POINTS = 100_000  # results with as many curve points (rounds x runs) are announced before encoding


def add_progress_argument(parser, help: str = NO_PROGRESS_HELP) -> None:
    """``--no-progress``, one spelling for every command that shows progress (run, attack, audit, flower,
    opacus-check, account, calibrate): nothing but results, warnings and errors on stderr."""
    parser.add_argument("--no-progress", action="store_true", help=help)


def progress_on(args) -> bool:
    """As ``dpaudit attack`` decides it: not ``--no-progress``, and stderr is a terminal (``args`` None: off)."""
    return args is not None and not args.no_progress and sys.stderr.isatty()


def progress_bar(args, total: int, desc: str, unit: str):
    """A tqdm bar on stderr of ``total`` ``unit``s, disabled unless ``progress_on(args)``; left on screen
    when done is not wanted (``leave=False``), as attack's bars."""
    from tqdm import tqdm

    return tqdm(total=total, desc=desc, unit=unit, file=sys.stderr, disable=not progress_on(args), leave=False)


def each_run(args, desc: str, run_one, seeds) -> list:
    """``[run_one(s) for s in seeds]`` with a bar over the runs on stderr when ``args`` asks for progress."""
    results = []
    with progress_bar(args, len(seeds), desc, "run") as bar:
        for seed in seeds:
            results.append(run_one(seed))
            bar.update(1)
    return results


def encode_result(args, path, payload: dict, points: int) -> bytes:
    """The JSON of ``payload`` for ``path`` (``common.dumps``, encoded), which the caller writes. When progress
    is on, says on stderr "encoding the result for PATH" first if it holds at least ``ANNOUNCE_POINTS`` curve
    ``points`` (encoding takes about 4 s a million), then "writing N MB to PATH" from ``ANNOUNCE_BYTES`` on."""
    from reports.commands.common import dumps

    on = progress_on(args)
    if on and points >= ANNOUNCE_POINTS:
        print(f"encoding the result for {path} ({points} curve points)", file=sys.stderr, flush=True)
    data = dumps(payload).encode()
    if on and len(data) >= ANNOUNCE_BYTES:
        print(f"writing {len(data) / 1e6:.0f} MB to {path}", file=sys.stderr, flush=True)
    return data
