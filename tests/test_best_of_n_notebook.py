"""The Best-of-N notebook under papermill: its critics may learn from longer episodes than it evaluates (`data_max_turns`,
which the small scale uses to train on Tables 2-4's 5-turn episodes while evaluating 3 turns), and a resumed run scores
stored states again with its critic, loaded or trained again (`rescored` in its metrics)."""
import json, os, shutil, subprocess, sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

def _papermill(tmp_path, out, **params):
    "Run the Best-of-N notebook under papermill into `out`, its shared pool and N = 1 episodes in the test's folder."
    args = [sys.executable, '-m', 'papermill', str(ROOT / 'nbs' / 'best_of_n.ipynb'), str(tmp_path / 'out.ipynb'),
            '--cwd', str(ROOT / 'nbs'), '-p', 'out_dir', str(out)]
    for k, v in params.items(): args += ['-p', k, str(v)]
    subprocess.run(args, check=True, capture_output=True, timeout=900, env=os.environ | {'SWEET_RL_RUNS': str(tmp_path / 'runs')})
    return json.loads((out / 'metrics.json').read_text())

def test_critics_learn_from_episodes_of_their_own_turn_cap(tmp_path):
    out = tmp_path / 'run'
    metrics = _papermill(tmp_path, out, actor='scripted', data='scripted', scorers='sweet', ns='1,2', n_tasks=2, n_train_tasks=2,
                         offline_samples_per_task=3, offline_questions=2, max_turns=1, data_max_turns=3, critic_steps=1,
                         max_new_tokens=16, simulator_max_new_tokens=16)
    turns = lambda name: [sum(t['role'] == 'assistant' for t in json.loads(l)['dialogue_history'])
                          for l in (out / name).read_text().splitlines()]
    offline, evaluated = turns('offline.jsonl'), turns('n1.jsonl') + turns('sweet-n2.jsonl')
    assert len(offline) == 6 and max(offline) > 1 and max(offline) <= 3  # questions before the answer, within the data cap
    assert evaluated and set(evaluated) == {1}  # the evaluation's cap is one turn: an answer at once
    assert metrics['ns'] == [1, 2] and set(metrics['curves']) == {'sweet'}

def test_a_resumed_run_checks_its_critic_against_the_stored_scores(tmp_path, tiny_lm):
    "A second sitting scores stored states again, with the critic loaded and with one trained again (a fresh machine's case)."
    out = tmp_path / 'run'
    params = dict(actor='scripted', data='scripted', scorers='sweet,random', ns='1,2', n_tasks=2, n_train_tasks=2,
                  offline_samples_per_task=3, max_turns=1, critic_steps=1, critic_model=tiny_lm, max_new_tokens=16,
                  simulator_max_new_tokens=16)  # the bookkeeping is under test, not the backbone: the tiny critic
    first = _papermill(tmp_path, out, **params)
    assert 'rescored' not in first  # nothing was stored before this sitting
    loaded = _papermill(tmp_path, out, **params)  # the same critic, loaded from its folder
    assert loaded['rescored'] == {'sweet@2': {'states': 2, 'max_abs_diff': 0.0, 'same_choice': 2}}  # the random scorer is not a trained critic
    shutil.rmtree(out / 'critics' / 'sweet')  # a fresh machine: the records came back, the critic's weights did not
    again = _papermill(tmp_path, out, **params)
    check = again['rescored']['sweet@2']  # trained again from the same seed on the same machine: the same critic, to float rounding
    assert check['states'] == check['same_choice'] == 2 and check['max_abs_diff'] < 1e-4, check
    assert (out / 'critics' / 'sweet' / 'critic' / 'weights.safetensors').is_file()  # it did train again
    assert again['curves'] == first['curves']


def test_critics_train_through_accelerate_launch(tmp_path, tiny_lm):
    """With `accelerate` (the paper scale), the critics train in `accelerate launch` processes (here 2 on the CPU) with Table 5's
    settings before the notebook holds a model, and the notebook scores with what they saved."""
    from sweet_rl.runs.launch import TABLE5_CRITIC
    out = tmp_path / 'run'
    metrics = _papermill(tmp_path, out, actor='scripted', data=str(ROOT / 'tests' / 'fixtures' / 'official_backend_offline.jsonl'),
                         scorers='sweet', ns='1,2', n_tasks=2, max_turns=1, critic_steps=1, critic_model=tiny_lm,
                         accelerate='configs/accelerate/cpu_2proc.yaml', max_new_tokens=16, simulator_max_new_tokens=16)
    launched = json.loads((out / 'critics' / 'sweet' / 'params.json').read_text())
    assert launched['processes'] == 2 and launched['global_batch'] == 2 and launched['stage'] == 'critic'
    assert {k: launched['config'][k] for k in TABLE5_CRITIC} == TABLE5_CRITIC and launched['config']['model'] == tiny_lm
    assert (out / 'critics' / 'sweet' / 'critic' / 'weights.safetensors').is_file()
    assert set(metrics['curves']) == {'sweet'} and metrics['ns'] == [1, 2]
