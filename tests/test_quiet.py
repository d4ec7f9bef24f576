"""`progress=False` is quiet: a tiny run of each trainer (critic, actor, MT-GRPO, Reflect-RL) prints nothing to stdout or
stderr (file-descriptor level: tqdm and 🤗 Trainer's log lines both count), and `progress=True` shows a bar. Logs the run
writes to files stay."""
import warnings

import pytest

from sweet_rl.envs.search import search_tasks
from sweet_rl.base.rollout import env_factory


def _critic(tiny_lm, out, progress):
    from sweet_rl.methods.critic import CriticConfig, synthetic_trajectories, train_critic
    cfg = CriticConfig(model=tiny_lm, dtype='float32', lora_r=4, lora_targets=['q_proj', 'v_proj'], batch_size=4, save_steps=100)
    train_critic(cfg, synthetic_trajectories(4, seed=3), out, progress=progress, max_steps=2)
    return out / 'train_log.jsonl'


ROWS = [{'prompt': [{'role': 'user', 'content': 'Greet me.'}], 'chosen': 'Hello! How can I help?', 'rejected': 'No.'},
        {'prompt': [{'role': 'user', 'content': 'Ask me a question.'}], 'chosen': 'What are you working on?', 'rejected': 'Fine.'}]

def _actor(tiny_lm, out, progress):  # TRL's DPOTrainer (sweet)
    from sweet_rl.methods.actor import ActorConfig, train_actor
    train_actor(ActorConfig(model=tiny_lm, method='sweet', dtype='float32', batch_size=2, save_steps=100), ROWS, out,
                max_steps=2, progress=progress)
    return out / 'train_log.jsonl'


def answer_length(records):
    return [len(next(m['content'] for m in r['dialogue_history'] if m['role'] == 'assistant')) / 10 for r in records]

def _mtgrpo(tiny_lm, out, progress):
    from sweet_rl.methods.mtgrpo import MTGRPOConfig, Reward, Setting, train_mtgrpo
    tasks = search_tasks('all', kinds=['capital'])
    setting = Setting(env_factory('search', max_turns=1), tasks[:4], tasks[4:6],
                      [Reward('length', 'outcome', 1.0, answer_length)])  # rewards that differ: no warning of groups without signal
    cfg = MTGRPOConfig(model=tiny_lm, steps=2, group_size=4, batch_size=1, max_new_tokens=4, dtype='float32', lora_r=4, lora_alpha=8,
                       save_steps=100, save_episodes=False)
    train_mtgrpo(cfg, setting, out, progress=progress)
    return out / 'steps.jsonl'


def _reflect(tiny_lm, out, progress):  # SFT on the 🤗 Trainer, then online RL
    from sweet_rl.methods.reflect import ReflectConfig, train_reflect
    cfg = ReflectConfig(reflection=False, data_episodes=2, sft_steps=2, iterations=1, episodes_per_iteration=2, eval_episodes=2,
                        lora_r=4, model=tiny_lm, reflection_model=tiny_lm)
    train_reflect(cfg, None, out, progress=progress)
    return out / 'train_log.jsonl'


@pytest.mark.parametrize('train', [_critic, _actor, _mtgrpo, _reflect], ids=['critic', 'actor', 'mtgrpo', 'reflect'])
def test_progress_false_prints_nothing(train, tmp_path, tiny_lm, capfd):
    with warnings.catch_warnings(record=True) as caught:  # outside pytest, a warning is a line on stderr
        warnings.simplefilter('always')
        log = train(tiny_lm, tmp_path / 'quiet', False)
    out, err = capfd.readouterr()
    assert (out, err) == ('', ''), f"progress=False printed:\nstdout: {out[-1500:]!r}\nstderr: {err[-1500:]!r}"
    assert not caught, [f"{w.filename}:{w.lineno}: {w.message}" for w in caught]
    assert log.read_text().strip()  # the run's own log file is still written
    train(tiny_lm, tmp_path / 'loud', True)
    assert '100%' in capfd.readouterr().err  # progress=True: a bar


def test_candidate_tests_show_a_bar_with_the_time_left(tmp_path, capfd):
    from sweet_rl.base.data import sample_tasks
    from sweet_rl.runs.evaluate import candidate_rewards
    task = sample_tasks('backend')[0]
    records = [{'id': f'r{i}', 'task': task.to_dict(), 'candidates': [f"I WANT TO ANSWER:\n{task.ground_truth}"]} for i in range(2)]
    assert candidate_rewards(records, tmp_path / 'quiet.jsonl', chunk=1, progress=False) == [[1.0], [1.0]]
    assert capfd.readouterr() == ('', '')
    candidate_rewards(records, tmp_path / 'loud.jsonl', chunk=1)
    assert 'candidate tests: 100%' in (err := capfd.readouterr().err) and '<00:00' in err, err  # elapsed<left
