"The actor-training notebook runs under papermill for the two baselines (nbdev_test runs its SWEET-RL defaults)."
import json, subprocess, sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize('method', ['rft', 'mtdpo'])
def test_baseline_methods_train_and_evaluate(tmp_path, method):
    out = tmp_path / 'run'
    args = [sys.executable, '-m', 'papermill', str(ROOT / 'nbs' / 'train_actor.ipynb'), str(tmp_path / 'out.ipynb'),
            '--cwd', str(ROOT / 'nbs'), '-p', 'out_dir', str(out), '-p', 'method', method, '-p', 'n_tasks', '3']
    proc = subprocess.run(args, capture_output=True, text=True, timeout=1800)
    assert proc.returncode == 0, proc.stderr[-3000:]
    m = json.loads((out / 'metrics.json').read_text())
    assert m['method'] == method and m['train_steps'] == 2 and m['n_examples'] >= 1
    for side in ('trained', 'zero_shot'):
        assert m[side]['n_episodes'] == 2 and 0 <= m[side]['success_pct'] <= 100
    for f in ('params.json', 'manifest.json', 'offline.jsonl', 'train_log.jsonl', 'training.png', 'eval_trained.jsonl',
              'eval_zero_shot.jsonl', 'actor/weights.safetensors', 'actor/actor_config.json'):
        assert (out / f).exists(), f
    log = [json.loads(l) for l in (out / 'train_log.jsonl').read_text().splitlines()]
    assert all(r['loss'] == r['loss'] for r in log if 'loss' in r)  # finite (not NaN)
