"The critic-training notebook runs under papermill for the frontend task (nbdev_test runs its backend defaults)."
import json, subprocess, sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_frontend_text_critic(tmp_path):
    out = tmp_path / 'run'
    args = [sys.executable, '-m', 'papermill', str(ROOT / 'nbs' / 'train_critic.ipynb'), str(tmp_path / 'out.ipynb'),
            '--cwd', str(ROOT / 'nbs'), '-p', 'out_dir', str(out), '-p', 'task', 'frontend', '-p', 'n_tasks', '4',
            '-p', 'samples_per_task', '2', '-p', 'max_steps', '1', '-p', 'test_fraction', '0.25']
    proc = subprocess.run(args, capture_output=True, text=True, timeout=1800)
    assert proc.returncode == 0, proc.stderr[-3000:]
    m = json.loads((out / 'metrics.json').read_text())
    assert m['task'] == 'frontend' and m['head'] == 'sweet' and m['train_steps'] == 1
    assert m['n_train_pairs'] >= 1 and m['n_trajectories'] == 8
    if m['n_test_pairs']: assert m['untrained_heldout_pair_accuracy'] == 0.5
    for f in ('params.json', 'manifest.json', 'offline.jsonl', 'train_log.jsonl', 'training.png', 'critic/weights.safetensors'):
        assert (out / f).exists(), f
    # frontend records carry the page similarity as reward; the reference answer scores as a success
    recs = [json.loads(l) for l in (out / 'offline.jsonl').read_text().splitlines()]
    assert any(r['script']['answer'] == 'reference' and r['reward'] >= 0.99 for r in recs)
