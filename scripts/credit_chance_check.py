"""How often does chance clear 0.5 on the credit testbed? A check of the per-seed interval the study's rule counts.

The study's `random` scorer (`sweet_rl.methods.scorers.RandomScorer`) needs no training, so many more seeds than the
grid's ten cost seconds. For each seed this scores every held-out state's candidates at random and measures info-gated
accuracy with its 95% bootstrap interval exactly as a grid run does (`credit_metrics`); it prints and writes the mean,
the spread over seeds, how many seeds' intervals clear 0.5 (a calibrated one-sided 95% interval: about 2.5%), and the
chance that the plan's rule (6 of 10 seeds) would call chance separating, by the binomial law at the observed rate.

    python scripts/credit_chance_check.py --seeds 100 --out results/credit-testbed/micro/chance-check.json
"""
import argparse, json, math, statistics, time
from pathlib import Path
from sweet_rl.base.core import atomic_write_text
from sweet_rl.methods.scorers import RandomScorer
from sweet_rl.runs.credit import credit_metrics, score_states
from sweet_rl.runs.credit_study import SEEDS_NEEDED, heldout_states


def chance_check(seeds:int, split:str='test') -> dict:
    "Info-gated accuracy of `seeds` chance scorers on the held-out states of `split`."
    states, t0 = heldout_states(split), time.time()
    got = [credit_metrics(states, score_states(states, RandomScorer(k), progress=False), seed=k)['info_gated'] for k in range(seeds)]
    clear = sum(g['ci'][0] > 0.5 for g in got)
    rate, need = clear / seeds, SEEDS_NEEDED[10]
    rule = sum(math.comb(10, k) * rate ** k * (1 - rate) ** (10 - k) for k in range(need, 11))
    return {'split': split, 'seeds': seeds, 'states': got[0]['tasks'], 'mean': statistics.fmean(g['mean'] for g in got),
            'sd_over_seeds': statistics.stdev(g['mean'] for g in got), 'clearing_0.5': clear, 'rate': rate,
            f'p_rule_{need}_of_10': rule, 'first_10': [round(g['mean'], 3) for g in got[:10]], 'seconds': round(time.time() - t0, 1)}


if __name__ == '__main__':
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--seeds', type=int, default=100); ap.add_argument('--out', default='')
    a = ap.parse_args()
    out = {split: chance_check(a.seeds, split) for split in ('test', 'new')}
    out['command'] = f"python scripts/credit_chance_check.py --seeds {a.seeds}" + (f" --out {a.out}" if a.out else '')
    text = json.dumps(out, indent=1) + '\n'
    print(text)
    if a.out: atomic_write_text(Path(a.out), text)
