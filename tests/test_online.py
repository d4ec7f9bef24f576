"""MT-GRPO (`sweet_rl.methods.mtgrpo`) runs too long or too wide for its notebook (`nbs/24_mtgrpo.ipynb`, which checks the
advantages, the masks and the rewards): a learning check on a task a 135M model learns in a few CPU steps, a run that
resumes from its checkpoint, the ColBench setting with a critic's turn reward, two processes under `accelerate launch`,
full fine-tuning with a KL term and reused rollouts, a step without signal, and the warning when every group is silent
(the frozen copy `Policy.build` keeps is checked in `nbs/23_actor.ipynb` and `nbs/24_mtgrpo.ipynb`)."""
import json, math, warnings
from pathlib import Path

import pytest
import torch

from sweet_rl.envs.search import search_tasks
from sweet_rl.methods.mtgrpo import (MTGRPOConfig, OnlinePolicy, Reward, Setting, episode_rewards, online_setting, online_metrics,
                                     train_mtgrpo)
from sweet_rl.base.rollout import RolloutConfig, env_factory, run_rollouts


# The learning check: one-turn episodes on capital questions without the search tool (`single_turn`: the prompt is a third of
# the tool prompt's length, so each update is cheaper), rewarded for starting the answer with "The capital". SmolLM2 does so
# in about a third of its samples at temperature 1, so most groups have spread, and the first tokens move fast.
PREFIX = 'the capital'
def starts_with_prefix(records):
    return [float(next(m['content'] for m in r['dialogue_history'] if m['role'] == 'assistant').strip().lower().startswith(PREFIX))
            for r in records]


def prefix_setting():
    tasks = search_tasks('all', kinds=['capital'])
    return Setting(env_factory('search', max_turns=1, single_turn=True), tasks[:40], tasks[40:56],
                   [Reward('prefix', 'outcome', 1.0, starts_with_prefix)])


def held_out_rate(policy, setting, seed=123):
    recs = run_rollouts(setting.eval_tasks, setting.make_env, policy.backend(batch_size=32),
                        RolloutConfig(samples_per_task=2, max_new_tokens=4, temperature=1.0, seed=seed, batch_size=32), progress=False)
    return online_metrics(recs, setting.rewards)['reward_prefix']


def test_reward_rises_within_a_few_steps(tmp_path):
    setting = prefix_setting()
    cfg = MTGRPOConfig(mode='or', steps=2, group_size=4, batch_size=2, max_new_tokens=4, lr=2e-3, max_grad_norm=1.0,
                       dtype='float32', save_steps=100, seed=0, save_episodes=False,
                       gradient_checkpointing=True)  # without it the update's activations took this worker past 7 GB (OOM beside a notebook test)
    policy = OnlinePolicy.build(cfg)
    before = held_out_rate(policy, setting)
    train_mtgrpo(cfg, setting, tmp_path / 'run', progress=False, policy=policy)
    after = held_out_rate(policy, setting)
    steps = [json.loads(l) for l in (tmp_path / 'run' / 'steps.jsonl').read_text().splitlines()]
    print(f"held-out rate of answers starting with {PREFIX!r}: {before:.2f} -> {after:.2f}; per step: "
          f"{[round(s['reward_prefix'], 2) for s in steps]}")
    assert after >= before + 0.25, (before, after)


def test_interrupted_training_resumes_from_its_checkpoint(tmp_path, tiny_lm):
    "Stopped after step 2 (checkpoint), resumed to step 3: the same weights and per-step log as a run never interrupted."
    setting = prefix_setting()
    cfg = MTGRPOConfig(model=tiny_lm, mode='mt', steps=3, group_size=2, batch_size=1, max_new_tokens=4, lr=1e-3, dtype='float32', save_steps=1,
                       lora_r=4, lora_alpha=8, seed=0)
    straight = train_mtgrpo(cfg, setting, tmp_path / 'straight', progress=False)
    assert not (tmp_path / 'resumed' / 'policy').exists()
    train_mtgrpo(cfg, setting, tmp_path / 'resumed', progress=False, max_steps=2)
    assert not (tmp_path / 'resumed' / 'policy').exists()  # not finished: no result yet
    assert (tmp_path / 'resumed' / 'checkpoints' / 'checkpoint-2').is_dir()
    resumed = train_mtgrpo(cfg, setting, tmp_path / 'resumed', progress=False)
    a, b = straight.trainable_state(), resumed.trainable_state()
    assert set(a) == set(b) and all(torch.allclose(a[k], b[k], atol=1e-6) for k in a)
    logs = [[json.loads(l) for l in (tmp_path / d / 'steps.jsonl').read_text().splitlines()] for d in ('straight', 'resumed')]
    assert [s['step'] for s in logs[1]] == [1, 2, 3]
    for x, y in zip(*logs): assert x['loss'] == pytest.approx(y['loss'], abs=1e-6) and x['reward'] == y['reward']
    again = train_mtgrpo(cfg, setting, tmp_path / 'resumed', progress=False)  # finished: loaded, not retrained
    assert all(torch.equal(again.trainable_state()[k], b[k]) for k in b)


def test_backend_with_a_sweet_critic_as_turn_reward(tmp_path):
    """ColBench backend + a SWEET critic's turn-wise advantage as the turn reward is a configuration of the same trainer.
    The critic is a fresh LoRA critic whose adapter is nudged off zero (an untrained one scores every turn 0)."""
    from sweet_rl.methods.critic import Critic, CriticConfig
    critic = Critic.build(CriticConfig(dtype='float32', lora_r=4, lora_alpha=8))
    with torch.no_grad():
        for n, p in critic.model.named_parameters():
            if 'lora_B' in n: p.add_(torch.randn_like(p) * 0.05)
    critic.save(tmp_path / 'critic')
    cfg = MTGRPOConfig(env='backend', steps=1, group_size=2, batch_size=1, max_new_tokens=8, dtype='float32', lora_r=4, lora_alpha=8,
                       setting={'critic_dir': str(tmp_path / 'critic'), 'critic_weight': 0.5, 'max_turns': 2, 'simulator_max_new_tokens': 8,
                                'n_tasks': 2})
    setting = online_setting(cfg)
    assert [(r.name, r.level, r.weight) for r in setting.rewards] == [('tests_passed', 'outcome', 1.0), ('critic_advantage', 'turn', 0.5)]
    train_mtgrpo(cfg, setting, tmp_path / 'run', progress=False)
    step = json.loads((tmp_path / 'run' / 'steps.jsonl').read_text().splitlines()[0])
    assert 0 <= step['reward_tests_passed'] <= 1 and step['reward_critic_advantage'] != 0 and math.isfinite(step['loss'])
    episodes = [json.loads(l) for l in (tmp_path / 'run' / 'episodes.jsonl').read_text().splitlines()]
    er = episode_rewards(episodes, setting.rewards)
    turns = [sum(m['role'] == 'assistant' for m in e['dialogue_history']) for e in episodes]
    assert er.turns.shape[1] == max(turns) and all((~er.turns[i].isnan()).sum() == n for i, n in enumerate(turns))  # one per turn


def test_training_under_accelerate_launch(tmp_path, tiny_lm):
    "Two CPU processes (gloo) each roll out their own prompts; process 0 writes the policy, the step log and the metrics."
    import os, subprocess, sys
    root = Path(__file__).resolve().parents[1]
    MTGRPOConfig(model=tiny_lm, steps=2, group_size=2, batch_size=1, max_new_tokens=4, dtype='float32',
                 setting={'max_turns': 1, 'question_kinds': ['capital'], 'n_tasks': 8}, lora_r=4, lora_alpha=8, save_steps=1).save(tmp_path / 'g.json')
    cmd = [sys.executable, '-m', 'accelerate.commands.launch', '--config_file', str(root / 'configs' / 'accelerate' / 'cpu_2proc.yaml'),
           '-m', 'sweet_rl.runs.launch', 'mtgrpo', '--config', str(tmp_path / 'g.json'), '--out', str(tmp_path / 'run'), '--no-progress']
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900, env={**os.environ, 'OMP_NUM_THREADS': '1'})
    assert proc.returncode == 0, proc.stderr[-3000:]
    params = json.loads((tmp_path / 'run' / 'params.json').read_text())
    assert (params['processes'], params['prompts_per_step']) == (2, 2)
    steps = [json.loads(l) for l in (tmp_path / 'run' / 'steps.jsonl').read_text().splitlines()]
    assert [s['step'] for s in steps] == [1, 2] and all(s['episodes'] == 2 for s in steps)  # per process: 1 prompt x 2 episodes
    assert (tmp_path / 'run' / 'policy' / 'weights.safetensors').is_file()
    assert json.loads((tmp_path / 'run' / 'metrics.json').read_text())['steps'] == 2


def test_full_finetuning_with_kl_and_rollouts_reused(tmp_path, tiny_lm):
    """Full fine-tuning with a frozen reference (beta > 0) and two updates per batch of rollouts: the second step reuses
    the first step's episodes and old log-probabilities, the KL to the reference is positive once the policy moved, and
    every weight trained. The reward is the answer's length, so every group has spread."""
    tasks = search_tasks('all', kinds=['capital'])
    length = lambda records: [len(next(m['content'] for m in r['dialogue_history'] if m['role'] == 'assistant')) / 10 for r in records]
    setting = Setting(env_factory('search', max_turns=1), tasks[:8], tasks[8:10], [Reward('length', 'outcome', 1.0, length)])
    cfg = MTGRPOConfig(model=tiny_lm, mode='or', lora=False, beta=0.1, updates_per_batch=2, steps=2, group_size=4, batch_size=1, max_new_tokens=4,
                       lr=1e-4, max_grad_norm=1.0, dtype='float32', save_steps=100, save_episodes=False)
    policy = OnlinePolicy.build(cfg)
    assert policy.ref_model is not None
    before = {k: v.clone() for k, v in policy.trainable_state().items()}
    train_mtgrpo(cfg, setting, tmp_path / 'run', progress=False, policy=policy)
    steps = [json.loads(l) for l in (tmp_path / 'run' / 'steps.jsonl').read_text().splitlines()]
    assert [(s['reused'], s['rollout_s'] == 0) for s in steps] == [(0.0, False), (1.0, True)]
    assert steps[0]['kl'] == 0 and steps[1]['kl'] > 0
    after = policy.trainable_state()
    changed = sum(not torch.equal(before[k], after[k]) for k in before)
    assert changed == len(before), f"{changed} of {len(before)} tensors changed"


def test_a_step_without_signal_still_moves_the_weights(tmp_path, tiny_lm):
    """Every group's episodes earn the same reward at step 2: its advantages and gradient are zero, yet the optimizer step
    moves the weights along step 1's gradient (Adam's momentum), as the ColBench text says of GRPO-OR's silent steps.
    The setting's `merged` reaches the trainer: the share of merged episodes it logs is the setting's (0), not the
    one-agent-turn default's (1)."""
    from safetensors.torch import load_file
    calls = []
    def first_step_only(records):  # the first answer's length at step 1, then the same reward for every episode
        calls.append(1)
        return [len(next(m['content'] for m in r['dialogue_history'] if m['role'] == 'assistant')) / 10 if len(calls) == 1 else 0.0
                for r in records]
    tasks = search_tasks('all', kinds=['capital'])
    setting = Setting(env_factory('search', max_turns=1), tasks[:8], tasks[8:10], [Reward('first', 'outcome', 1.0, first_step_only)],
                      merged=lambda records: [False] * len(records))  # the setting's own criterion (by agent turns, all would merge)
    cfg = MTGRPOConfig(model=tiny_lm, mode='or', steps=2, group_size=4, batch_size=1, max_new_tokens=4, lr=1e-3, dtype='float32',
                       save_steps=1, lora_r=4, lora_alpha=8, save_episodes=False)
    train_mtgrpo(cfg, setting, tmp_path / 'run', progress=False)
    steps = [json.loads(l) for l in (tmp_path / 'run' / 'steps.jsonl').read_text().splitlines()]
    assert steps[0]['advantage_abs'] > 0 and steps[1]['advantage_abs'] == 0 and steps[1]['grad_norm'] == 0
    assert steps[1]['silent_groups'] == 1.0 and steps[0]['silent_groups'] == 0.0
    assert [s['merged'] for s in steps] == [0.0, 0.0]  # the trainer asks the setting which episodes merge
    after = [load_file(str(tmp_path / 'run' / 'checkpoints' / f'checkpoint-{i}' / 'adapter_model.safetensors')) for i in (1, 2)]
    assert any(not torch.equal(after[0][k], after[1][k]) for k in after[0])



@pytest.mark.parametrize('equal', [True, False], ids=['equal rewards', 'varied rewards'])
def test_steps_without_signal_warn_once(tmp_path, tiny_lm, equal):
    """Every episode earning the same reward leaves every advantage zero: the run says so once (not once per step),
    names the cause and what to change, and logs each step's share of groups with equal outcomes. Rewards that differ
    within the groups (the answer's length) give no warning."""
    tasks = search_tasks('all', kinds=['capital'])
    length = lambda records: [len(next(m['content'] for m in r['dialogue_history'] if m['role'] == 'assistant')) / 10 for r in records]
    reward = Reward('same' if equal else 'length', 'outcome', 1.0, (lambda records: [1.0] * len(records)) if equal else length)
    setting = Setting(env_factory('search', max_turns=1), tasks[:8], tasks[8:10], [reward])
    cfg = MTGRPOConfig(model=tiny_lm, mode='or', steps=2, group_size=4, batch_size=1, max_new_tokens=4, dtype='float32', save_steps=100,
                       lora_r=4, lora_alpha=8, save_episodes=False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter('always')
        train_mtgrpo(cfg, setting, tmp_path / 'run', progress=False)
    said = [str(w.message) for w in caught if 'no learning signal' in str(w.message)]
    steps = [json.loads(l) for l in (tmp_path / 'run' / 'steps.jsonl').read_text().splitlines()]
    if equal:
        assert len(said) == 1, said  # two silent steps, one warning
        assert all(k in said[0] for k in ('every advantage is zero', 'group_size (now 4)', 'temperature', 'reward'))
        assert [(s['flat_outcome_groups'], s['silent_groups'], s['loss']) for s in steps] == [(1.0, 1.0, 0.0)] * 2
    else:
        assert said == [] and all(s['flat_outcome_groups'] < 1 and s['silent_groups'] < 1 for s in steps)

def test_the_run_config_names_the_environment_a_setting_plays(tmp_path, tiny_lm):
    """A `Setting` built by hand on another environment than `config.env` (the default, 'search'): the saved run config
    names the environment the episodes ran on, with that environment's setting fields, not the search setting's."""
    from sweet_rl.envs.search import lookup_tasks
    tasks = lookup_tasks('train', n_entities=50)
    setting = Setting(env_factory('lookup', max_turns=1), tasks[:4], tasks[4:6], [Reward('none', 'outcome', 1.0, lambda rs: [0.0] * len(rs))])
    cfg = MTGRPOConfig(model=tiny_lm, steps=1, group_size=2, batch_size=1, max_new_tokens=4, dtype='float32', lora_r=4, lora_alpha=8,
                       save_episodes=False)
    assert cfg.env == 'search' and 'split_seed' in cfg.setting
    train_mtgrpo(cfg, setting, tmp_path / 'run', progress=False)
    saved = json.loads((tmp_path / 'run' / 'policy' / 'policy_config.json').read_text())
    assert saved['env'] == 'lookup' and 'note_accuracy' in saved['setting'] and 'split_seed' not in saved['setting']
