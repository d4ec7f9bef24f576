"""Screenshots per second: one persistent browser with page reuse vs a new browser per page (same pages, same run).

Pages: ColBench reference pages from the development file (or the bundled sample when it is absent), never the bundled
sample's own pages when timing, since a renderer compiles their Tailwind classes at start-up.
  - persistent, first sight: a freshly started renderer renders `--n` pages it has not seen;
  - persistent, steady state: the same, after it has rendered `--warm` other pages (a long evaluation run);
  - new browser per page: start, render one page, close, for `--fresh` pages, scaled to `--n`.
Target: at least 10 screenshots/s with the persistent browser for typical ColBench pages.
Usage: python benchmarks/render.py [--n 30] [--warm 30] [--fresh 5] [--repeats 3]
"""
import argparse, json, os, statistics, time
from pathlib import Path

from sweet_rl.base.data import load_tasks, sample_tasks
from sweet_rl.base.render import Renderer

DEV = Path(os.environ.get('SWEET_RL_COLBENCH_DEV', Path(__file__).resolve().parents[2] / 'shared' / 'colbench')) / 'frontend_dev.jsonl'

def pages_per_s(renderer, pages) -> float:
    t = time.perf_counter(); renderer.render_many(pages, progress=False); return len(pages) / (time.perf_counter() - t)

if __name__ == '__main__':
    ap = argparse.ArgumentParser()
    for k, v in (('n', 30), ('warm', 30), ('fresh', 5), ('repeats', 3)): ap.add_argument(f'--{k}', type=int, default=v)
    a = ap.parse_args()
    bundled = {t.ground_truth for t in sample_tasks('frontend')}
    pool = [t.ground_truth for t in (load_tasks(DEV) if DEV.exists() else sample_tasks('frontend'))]
    unseen = [p for p in pool if p not in bundled] or pool  # without the development file: the sample itself
    timed, warm = unseen[:a.n], unseen[a.n:a.n + a.warm]
    first, steady = [], []
    for _ in range(a.repeats):
        with Renderer() as r:
            r.render('<p>start-up</p>')
            first.append(pages_per_s(r, timed))
        with Renderer() as r:
            r.render_many(warm, progress=False)
            steady.append(pages_per_s(r, timed))
    t = time.perf_counter()
    for p in timed[:a.fresh]:
        with Renderer() as r: r.render(p)
    fresh = a.fresh / (time.perf_counter() - t)
    out = {'pages': len(timed), 'warm_pages': len(warm), 'repeats': a.repeats,
           'persistent_first_sight_pages_per_s': round(statistics.median(first), 2),
           'persistent_steady_pages_per_s': round(statistics.median(steady), 2),
           'new_browser_per_page_pages_per_s': round(fresh, 2),
           'speedup_steady_over_new_browser': round(statistics.median(steady) / fresh, 1)}
    print(json.dumps(out, indent=2))
