"""Where a notebook's CI time goes: run it as `nbdev_test` does (same skipped cells, CI's smoke parameters) and print
the slowest cells.

    python scripts/profile_notebook.py 25_reflect                  # the 10 slowest cells
    python scripts/profile_notebook.py 25_reflect --top 20 --flags slow

Each line: seconds, share of the notebook, the cell's index and id, and its first source line. Use it to decide what to
shrink when CI's budget is tight; `scripts/run_notebooks.py` prints whole-notebook times only.
"""
import argparse, os, sys, time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / 'scripts'))


def profile(stem:str, flags:str='slow') -> list[tuple[float, int, str, str]]:
    "Run notebook `stem` like nbdev_test (CI parameters included); `[(seconds, index, id, first line)]` in cell order."
    from execnb.shell import CaptureShell
    from nbdev.test import test_nb
    import run_notebooks
    nb = next((f for f in run_notebooks.notebooks() if f.stem == stem), None)
    if nb is None: sys.exit(f"no notebook named {stem!r} under nbs/")
    ci = run_notebooks.ci_parameters()
    target = run_notebooks.with_parameters(nb, ci[stem]) if stem in ci else nb
    times, original = [], CaptureShell.cell
    def timed(self, cell, *args, **kwargs):
        t0 = time.perf_counter()
        try: return original(self, cell, *args, **kwargs)
        finally:
            first = next((l for l in cell.source.splitlines() if l.strip() and not l.startswith('#|')), '')
            times.append((time.perf_counter() - t0, getattr(cell, 'idx_', len(times)), cell.get('id', '?'), first[:70]))
    CaptureShell.cell = timed
    try:
        from nbdev.config import get_config
        tst = str(get_config().get('tst_flags', '')).split()  # nbdev_test skips these unless --flags names them
        ok, total = test_nb(target, skip_flags=[f for f in tst if f not in flags.split()])
    finally:
        CaptureShell.cell = original
        if target != nb: target.unlink(missing_ok=True)
    if not ok: print(f"{stem}: FAILED (times up to the failing cell below)")
    print(f"{stem}: {total:.0f} s, {len(times)} cells run")
    return times


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('notebook', help="a notebook's name without .ipynb (e.g. 25_reflect)")
    ap.add_argument('--flags', default='slow', help="flags nbdev_test runs (CI: 'slow')")
    ap.add_argument('--top', type=int, default=10)
    args = ap.parse_args(argv)
    os.environ.setdefault('OMP_NUM_THREADS', '1')
    times = profile(args.notebook, args.flags)
    total = sum(t for t, *_ in times) or 1
    for t, i, cid, first in sorted(times, reverse=True)[:args.top]:
        print(f"{t:7.1f} s {100 * t / total:4.0f}%  cell {i:>3} {cid:<10} {first}")


if __name__ == '__main__':
    main()
