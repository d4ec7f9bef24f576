"""`progress=False` is quiet: a tiny run of each trainer (critic, actor, MT-GRPO, Reflect-RL) prints nothing to stdout or
stderr (file-descriptor level: tqdm and 🤗 Trainer's log lines both count), and `progress=True` shows a bar. Logs the run
writes to files stay. The runs (`run_offline`, `run_mtgrpo`) and the credit study's corpus pass their caller's
`progress` on to every stage."""
import json, warnings
from contextlib import nullcontext
from pathlib import Path
from types import SimpleNamespace

import pytest

from sweet_rl.envs.search import search_tasks
from sweet_rl.base.models import Completion, GenerationBackend
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


# The runs pass their caller's `progress` to every stage: quiet when asked, a bar for each long stage otherwise. The
# models are stand-ins (the trainers are stubbed, they are checked above); the episodes, candidates and scores are real.
class Reply(GenerationBackend):
    "A stand-in for the simulated human and for a policy that answers at once: the same short text every time."
    def __init__(self, text:str): self.text = text
    def complete(self, conversations, params=None): return [Completion(self.text, 3, 'stop') for _ in conversations]


def test_mtgrpo_run_passes_progress_on(tmp_path, capfd, monkeypatch):
    import sweet_rl.runs.mtgrpo_run as mtgrpo_run
    from sweet_rl.methods.mtgrpo import MTGRPOConfig, Reward, Setting
    tasks = search_tasks('all', kinds=['capital'])
    setting = Setting(env_factory('search', max_turns=1), tasks[:2], tasks[2:4], [Reward('length', 'outcome', 1.0, answer_length)])
    agent, seen = Reply('<answer>Paris</answer>'), []
    policy = SimpleNamespace(backend=lambda n: agent, initial_policy=lambda n: nullcontext(agent))
    def train(config, setting, out_dir, progress=True):
        seen.append(progress)
        (Path(out_dir) / 'steps.jsonl').write_text(json.dumps({'step': 1, 'loss': 0.0, 'rollout_s': 1.0, 'update_s': 1.0}) + '\n')
        return policy
    monkeypatch.setattr(mtgrpo_run, 'train_mtgrpo', train)
    monkeypatch.setattr(mtgrpo_run, 'online_setting', lambda config: setting)
    run = mtgrpo_run.MTGRPORun(MTGRPOConfig(), mtgrpo_run.OnlineEvalConfig(n_eval=2))
    out = mtgrpo_run.run_mtgrpo(run, tmp_path / 'quiet', say=lambda s: None, progress=False)
    assert capfd.readouterr() == ('', '') and seen == [False]
    assert out['metrics']['trained']['n_episodes'] == out['metrics']['zero_shot']['n_episodes'] == 2  # both evaluations ran
    mtgrpo_run.run_mtgrpo(run, tmp_path / 'loud', say=lambda s: None, progress=True)
    assert capfd.readouterr().err.count('episodes: 100%') == 2 and seen == [False, True]  # the trained and the zero-shot policy


@pytest.mark.parametrize('method', ['rft', 'sweet'])
def test_offline_run_passes_progress_on(method, tmp_path, capfd, monkeypatch):
    import sweet_rl.runs.offline as offline
    from sweet_rl.base.rollout import ScriptedAgent
    from sweet_rl.methods.actor import ActorConfig, CandidateConfig
    from sweet_rl.methods.critic import PairConfig
    from sweet_rl.runs.offline import ActorEvalConfig, MethodConfig, OfflineDataConfig, OfflineRun
    seen = {}
    data_cfg = OfflineDataConfig(n_tasks=1, samples_per_task=3, n_eval_tasks=1, max_turns=2)
    agent = ScriptedAgent(offline.held_out_split(data_cfg)[0] + offline.held_out_split(data_cfg)[1][:1], max_turns=2, p_question=0.5)
    actor = SimpleNamespace(initial_policy=lambda: nullcontext(agent))
    def stub(name, out=None):
        def f(*args, progress=True, **kwargs):
            seen.setdefault(name, []).append(progress)
            if name == 'train_actor': (Path(args[2]) / 'train_log.jsonl').write_text(json.dumps({'step': 1, 'loss': 0.5}) + '\n')
            return out
        return f
    critic = SimpleNamespace(saved_path=tmp_path / 'critic')
    for name, value in {'make_backend': lambda name: Reply('I do not know.'), 'Actor': SimpleNamespace(build=lambda config: actor),
                        'policy_backend': lambda policy, generation: nullcontext(agent), 'train_critic': stub('train_critic', critic),
                        'CriticScorer': lambda c: SimpleNamespace(score=lambda task, history, candidates: [float(len(x)) for x in candidates]),
                        'train_actor': stub('train_actor', actor)}.items():
        monkeypatch.setattr(offline, name, value)
    run = OfflineRun(data_cfg, MethodConfig(), CandidateConfig(data_fraction=1.0, n_candidates=2, pairs_per_turn=1, max_new_tokens=8),
                     ActorConfig(method=method), ActorEvalConfig(eval_max_turns=1, eval_batch_size=1), pairs=PairConfig.rule('backend'))
    (tmp_path / 'quiet').mkdir(); (tmp_path / 'loud').mkdir()
    out = offline.run_offline(run, tmp_path / 'quiet', say=lambda s: None, progress=False)
    assert capfd.readouterr() == ('', '') and set(map(tuple, seen.values())) == {(False,)}, seen
    assert out['metrics']['trained']['n_episodes'] == out['metrics']['zero_shot']['n_episodes'] == 1
    offline.run_offline(run, tmp_path / 'loud', say=lambda s: None, progress=True)
    err = capfd.readouterr().err
    bars = ['scripted episodes', 'episodes'] + (['candidates', 'scoring', 'candidate tests'] if method == 'sweet' else [])
    assert all(f'{bar}: 100%' in err for bar in bars), err[-2000:]
    assert set(map(tuple, seen.values())) == {(False, True)}, seen


def test_micro_corpus_passes_progress_on(capfd):
    from sweet_rl.runs.credit_study import MicroConfig, micro_corpus
    config = MicroConfig(n_train=2, episodes_per_task=1)
    quiet = micro_corpus(config, progress=False)
    assert capfd.readouterr() == ('', '')
    assert micro_corpus(config, progress=True) == quiet and 'episodes: 100%' in capfd.readouterr().err
