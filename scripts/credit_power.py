"""The credit testbed's power calculation, written before any of its results (studies/credit-testbed/PLAN.md).

    python scripts/credit_power.py            # prints the table and writes studies/credit-testbed/power.json

Each row: the probability that a scorer of true info-gated accuracy `true_acc` has its 95% bootstrap interval above
0.5 in one seed, and in at least `need` of `seeds` seeds, on `n_states` held-out states (`info_gated_power`).
"""
import json, sys, time
from pathlib import Path

from sweet_rl.runs.credit_study import info_gated_power

ROOT = Path(__file__).resolve().parents[1]
ROWS = [  # (what the row is for, n_states, true_acc, seeds, need, tau)
    ('the first study (24 states), for comparison', 24, 0.70, 3, 2, 0.0),
    ('primary set, small scale (3 seeds)', 114, 0.70, 3, 2, 0.0),
    ('primary set, small scale, per-slot spread tau=1', 114, 0.70, 3, 2, 1.0),
    ('primary set, small scale, a weaker scorer', 114, 0.65, 3, 2, 0.0),
    ('primary set, small scale, a weak scorer', 114, 0.60, 3, 2, 0.0),
    ('primary set, micro scale (10 seeds)', 114, 0.70, 10, 6, 0.0),
    ('primary set, micro scale, a weak scorer', 114, 0.60, 10, 6, 0.0),
    ('primary set, a blind scorer (false positives)', 114, 0.50, 3, 2, 0.0),
    ('primary set, micro scale, a blind scorer', 114, 0.50, 10, 6, 0.0),
    ('never-trained families (48 states), small scale', 48, 0.70, 3, 2, 0.0),
    ('never-trained families, micro scale', 48, 0.70, 10, 6, 0.0),
]

if __name__ == '__main__':
    out, t0 = [], time.time()
    for what, n, p, seeds, need, tau in ROWS:
        r = info_gated_power(n, true_acc=p, seeds=seeds, need=need, tau=tau, sims=2000, n_boot=1000, seed=0)
        out.append({'what': what, **r})
        print(f"{what:52s} n={n:3d} acc={p:.2f} tau={tau:.0f}  per seed {r['per_seed']:.3f}  >= {need} of {seeds} seeds {r['at_least_need']:.3f}", flush=True)
    path = ROOT / 'studies' / 'credit-testbed' / 'power.json'
    path.write_text(json.dumps({'command': 'python scripts/credit_power.py', 'rows': out, 'seconds': round(time.time() - t0, 1)}, indent=1) + '\n')
    print(f"wrote {path.relative_to(ROOT)} in {time.time() - t0:.0f} s", file=sys.stderr)
