"""The small scale's offline data path through the notebooks: `data='rollouts'` collects the agent's own
episodes on the bundled training tasks into a shared folder, and a second run with another method reuses them instead
of collecting again. With SmolLM2 at a few tokens every reward is 0, so there are no pairs and no successes: the runs
stop with the notebook's clear message after the data step, which is what this test needs."""
import json, os, subprocess, sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TINY = {'model': 'smollm2-135m', 'simulator': 'smollm2-135m', 'data': 'rollouts', 'n_tasks': 2, 'samples_per_task': 2,
        'max_turns': 2, 'simulator_max_new_tokens': 8, 'data_tokens': 8, 'pair_rule': 'frontend', 'n_eval_tasks': 1}


def run(tmp_path, method:str) -> str:
    out = tmp_path / method
    args = [sys.executable, '-m', 'papermill', str(ROOT / 'nbs' / 'train_actor.ipynb'), str(tmp_path / f'{method}.ipynb'),
            '--cwd', str(ROOT / 'nbs'), '-p', 'method', method, '-p', 'out_dir', str(out)]
    for k, v in TINY.items(): args += ['-p', k, str(v)]
    p = subprocess.run(args, capture_output=True, text=True, timeout=1200,
                       env={**os.environ, 'OMP_NUM_THREADS': '1', 'SWEET_RL_RUNS': str(tmp_path / 'runs')})
    return p.stdout + p.stderr


def test_rollouts_are_collected_once_and_shared(tmp_path):
    first = run(tmp_path, 'mtdpo')
    stores = list((tmp_path / 'runs' / 'shared' / 'rollouts').glob('*/trajectories.jsonl'))
    assert len(stores) == 1, first[-3000:]
    recs = [json.loads(l) for l in stores[0].read_text().splitlines()]
    assert len(recs) == TINY['n_tasks'] * TINY['samples_per_task']
    from sweet_rl.base.data import sample_tasks
    train = {t.problem_description for t in sample_tasks('backend', 'extra')[:TINY['n_tasks']]}
    assert {r['task']['problem_description'] for r in recs} == train  # training tasks, never the evaluation sample
    what = json.loads((stores[0].parent / 'params.json').read_text())
    assert what['model'] == 'smollm2-135m' and what['config']['temperature'] == 1.0 and what['config']['samples_per_task'] == 2
    assert 'no training data for mtdpo' in first  # all rewards are 0 at this size: the notebook says so and stops
    before = stores[0].stat().st_mtime_ns
    second = run(tmp_path, 'rft')
    assert 'no training data for rft' in second, second[-3000:]
    assert list((tmp_path / 'runs' / 'shared' / 'rollouts').glob('*/trajectories.jsonl')) == stores
    assert stores[0].stat().st_mtime_ns == before  # reused, not collected again
