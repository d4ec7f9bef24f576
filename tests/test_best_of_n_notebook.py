"""The Best-of-N notebook under papermill: its critics may learn from longer episodes than it evaluates (`data_max_turns`,
which the small scale uses to train on Tables 2-4's 5-turn episodes while evaluating 3 turns)."""
import json, os, subprocess, sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

def test_critics_learn_from_episodes_of_their_own_turn_cap(tmp_path):
    out = tmp_path / 'run'
    params = dict(actor='scripted', data='scripted', scorers='sweet', ns='1,2', n_tasks=2, n_train_tasks=2,
                  offline_samples_per_task=3, offline_questions=2, max_turns=1, data_max_turns=3, critic_steps=1,
                  max_new_tokens=16, simulator_max_new_tokens=16)
    args = [sys.executable, '-m', 'papermill', str(ROOT / 'nbs' / 'best_of_n.ipynb'), str(tmp_path / 'out.ipynb'),
            '--cwd', str(ROOT / 'nbs'), '-p', 'out_dir', str(out)]
    for k, v in params.items(): args += ['-p', k, str(v)]
    env = os.environ | {'SWEET_RL_RUNS': str(tmp_path / 'runs')}  # the shared pool and N = 1 episodes stay in the test's folder
    subprocess.run(args, check=True, capture_output=True, timeout=900, env=env)
    turns = lambda name: [sum(t['role'] == 'assistant' for t in json.loads(l)['dialogue_history'])
                          for l in (out / name).read_text().splitlines()]
    offline, evaluated = turns('offline.jsonl'), turns('n1.jsonl') + turns('sweet-n2.jsonl')
    assert len(offline) == 6 and max(offline) > 1 and max(offline) <= 3  # questions before the answer, within the data cap
    assert evaluated and set(evaluated) == {1}  # the evaluation's cap is one turn: an answer at once
    metrics = json.loads((out / 'metrics.json').read_text())
    assert metrics['ns'] == [1, 2] and set(metrics['curves']) == {'sweet'}
