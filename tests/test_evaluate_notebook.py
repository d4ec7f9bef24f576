"The evaluation notebook runs under papermill for both tasks and writes the run directory it promises."
import json, subprocess, sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

def run_nb(tmp_path, name, **params):
    out = tmp_path / name
    args = [sys.executable, '-m', 'papermill', str(ROOT / 'nbs' / 'evaluate.ipynb'), str(tmp_path / f'{name}.ipynb'),
            '--cwd', str(ROOT / 'nbs'), '-p', 'out_dir', str(out)]
    for k, v in params.items(): args += ['-p', k, str(v)]
    subprocess.run(args, check=True, capture_output=True, timeout=900)
    return out, json.loads((out / 'metrics.json').read_text())

def test_frontend_single_turn_with_win_rate(tmp_path):
    first, m1 = run_nb(tmp_path, 'a', task='frontend', mode='single_turn', n_tasks=2, max_new_tokens=48)
    assert m1['task'] == 'frontend' and m1['n_episodes'] == 2 and 0 <= m1['similarity'] <= 1
    for f in ('params.json', 'manifest.json', 'trajectories.jsonl'): assert (first / f).exists()
    second, m2 = run_nb(tmp_path, 'b', task='frontend', mode='single_turn', n_tasks=2, max_new_tokens=48, seed=1,
                        compare_to=first / 'trajectories.jsonl')
    by_task = lambda d: {json.dumps(r['task'], sort_keys=True): r['similarity'] for r in map(json.loads, (d / 'trajectories.jsonl').read_text().splitlines())}
    a, b = by_task(second), by_task(first)
    wins = sum(a[k] > b[k] for k in a) + 0.5 * sum(a[k] == b[k] for k in a)  # ties count one half, as in Table 2
    assert (m2['win_rate_n'], m2['win_rate']) == (2, wins / 2)
