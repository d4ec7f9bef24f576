"""The critic-training notebook under papermill: at a smaller size than its defaults, the trained SWEET critic ranks
held-out pairs (tasks it never trained on) better than the untrained critic (seed 0: on a CPU the run is deterministic,
so one seed is one fixed check; the notebook takes `seed` for more). The backend check is not repeated here: CI runs
the notebook on backend with its smoke parameters (studies/scales.yaml: 16 tasks, 8 steps, seed 0), and the notebook
asserts there that its SWEET critic ranks held-out pairs above the untrained critic."""
import json, os, subprocess, sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SEEDS = (0,)
# smaller than the defaults (40 tasks, 32 steps) and CI's backend run (16, 8). Most of the time is the critic's steps and
# held-out scoring on 500-900-token pages (rendering is about 5%); 8 tasks and 6 steps still give 8 held-out pairs
SMALL = {'frontend': {'n_tasks': 8, 'max_steps': 6}}
DEV_FRONTEND = Path(os.environ.get('SWEET_RL_COLBENCH_DEV') or ROOT.parent / 'shared' / 'colbench') / 'frontend_dev.jsonl'


def run_seeds(tmp_path, task:str, seeds=SEEDS, **params) -> dict:
    "Run the notebook once per seed, side by side (one torch thread each); return {seed: run folder}."
    runs, procs = {}, {}
    for seed in seeds:
        runs[seed] = tmp_path / f'{task}-{seed}'
        args = [sys.executable, '-m', 'papermill', str(ROOT / 'nbs' / 'train_critic.ipynb'), str(tmp_path / f'{task}-{seed}.ipynb'),
                '--cwd', str(ROOT / 'nbs'), '-p', 'task', task, '-p', 'seed', str(seed), '-p', 'out_dir', str(runs[seed])]
        for k, v in {**SMALL[task], **params}.items(): args += ['-p', k, str(v)]
        procs[seed] = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                       env={**os.environ, 'OMP_NUM_THREADS': '1'})
    for seed, proc in procs.items():
        out, _ = proc.communicate(timeout=1800)
        assert proc.returncode == 0, f"{task} seed {seed}:\n{out[-3000:]}"
    return runs


def check_learned(runs:dict, min_pairs:int):
    "Every seed: enough held-out pairs, the untrained critic at chance, the trained one above it."
    for seed, run in runs.items():
        m = json.loads((run / 'metrics.json').read_text())
        assert m['head'] == 'sweet' and m['n_test_pairs'] >= min_pairs and m['n_train_pairs'] >= 1, (seed, m)
        assert m['untrained_heldout_pair_accuracy'] == 0.5, (seed, m)
        assert m['heldout_pair_accuracy'] > m['untrained_heldout_pair_accuracy'], (seed, m)
        lo, hi = m['heldout_ci']
        assert lo <= m['heldout_pair_accuracy'] <= hi, (seed, m)
        for f in ('params.json', 'manifest.json', 'offline.jsonl', 'train_log.jsonl', 'training.png', 'critic/weights.safetensors'):
            assert (run / f).exists(), (seed, f)


def test_frontend_critic_beats_untrained_on_heldout_pairs(tmp_path):
    runs = run_seeds(tmp_path, 'frontend')
    check_learned(runs, min_pairs=8)
    # frontend records carry the page similarity as reward; the reference answer scores as a success
    recs = [json.loads(l) for l in (runs[0] / 'offline.jsonl').read_text().splitlines()]
    assert len(recs) == 4 * SMALL['frontend']['n_tasks']
    assert any(r['script']['answer'] == 'reference' and r['reward'] >= 0.99 for r in recs)


@pytest.mark.skipif(not DEV_FRONTEND.is_file(), reason='ColBench development copy not present')
def test_extra_frontend_tasks_are_the_shortest_dev_rows():
    "`frontend_tasks/extra.jsonl`: the 40 rows among dev rows 11-100 with the shortest reference page, unchanged, in order."
    from sweet_rl.base.data import SAMPLE_DIR
    rows = DEV_FRONTEND.read_bytes().splitlines(keepends=True)[10:]
    size = lambda line: len(json.loads(line)['ground_truth'])
    shortest = sorted(sorted(range(len(rows)), key=lambda i: (size(rows[i]), i))[:40])
    assert (SAMPLE_DIR / 'frontend_tasks' / 'extra.jsonl').read_bytes() == b''.join(rows[i] for i in shortest)
