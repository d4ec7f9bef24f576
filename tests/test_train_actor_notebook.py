"""The actor-training notebook runs under papermill for the two baselines and under `accelerate launch` (nbdev_test runs
its SWEET-RL defaults with the packaged model). Every role here is the tiny random model of `conftest.tiny_lm`."""
import json, subprocess, sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def tiny(folder:str) -> list:
    "Papermill parameters that put the tiny random model in every role: these tests check plumbing, not learning."
    return [a for role in ('model', 'critic_model', 'simulator') for a in ('-p', role, folder)]


@pytest.mark.parametrize('method', ['rft', 'mtdpo'])
def test_baseline_methods_train_and_evaluate(tmp_path, method, tiny_lm):
    out = tmp_path / 'run'
    args = [sys.executable, '-m', 'papermill', str(ROOT / 'nbs' / 'train_actor.ipynb'), str(tmp_path / 'out.ipynb'),
            '--cwd', str(ROOT / 'nbs'), '-p', 'out_dir', str(out), '-p', 'method', method, '-p', 'n_tasks', '3', *tiny(tiny_lm)]
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


def test_training_through_accelerate_launch(tmp_path, tiny_lm):
    """With `accelerate` set, critic and actor train in `accelerate launch` processes (here 2 on the CPU) and the notebook goes on.
    Two critic steps: the first has learning rate 0 (warm-up), and an untrained critic ties every candidate (no pairs)."""
    out = tmp_path / 'run'
    args = [sys.executable, '-m', 'papermill', str(ROOT / 'nbs' / 'train_actor.ipynb'), str(tmp_path / 'out.ipynb'),
            '--cwd', str(ROOT / 'nbs'), '-p', 'out_dir', str(out), '-p', 'method', 'sweet',
            '-p', 'accelerate', 'configs/accelerate/cpu_2proc.yaml', '-p', 'critic_steps', '2', '-p', 'max_steps', '1',
            '-p', 'critic_batch_size', '1', '-p', 'batch_size', '1', '-p', 'eval_zero_shot', 'False', *tiny(tiny_lm)]
    proc = subprocess.run(args, capture_output=True, text=True, timeout=1800)
    assert proc.returncode == 0, proc.stderr[-3000:]
    for stage in ('critic_run', 'actor_run'):
        launched = json.loads((out / stage / 'params.json').read_text())
        assert launched['processes'] == 2 and launched['global_batch'] == 2, launched
        assert (out / stage / stage.split('_')[0] / 'weights.safetensors').is_file()
    m = json.loads((out / 'metrics.json').read_text())
    assert m['method'] == 'sweet' and m['train_steps'] == 1 and m['trained']['n_episodes'] == 2
    # the critic's pairs checked against the unit tests (backend): every pair trained on is classified, every state counted
    assert m['critic_taught_pairs'] == m['n_examples'] and m['critic_states'] >= 1, m
    assert json.loads((out / 'critic_check.json').read_text())['taught_pairs'] == m['n_examples']
