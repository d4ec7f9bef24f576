"""MT-GRPO (`sweet_rl.methods.mtgrpo`): advantages by hand for every mode and edge case, masks free of environment tokens, a
learning check on a task a 135M model learns in a few CPU steps, and a run that resumes from its checkpoint."""
import json, math
from pathlib import Path

import pytest
import torch

from sweet_rl.envs.search import SearchEnv, SearchEnvConfig, search_tasks
from sweet_rl.base.models import encode_conversations, load_tokenizer
from sweet_rl.methods.mtgrpo import (MTGRPOConfig, OnlinePolicy, Reward, Setting, agent_conversations, episode_rewards, online_setting,
                             mtgrpo_advantages, online_metrics, search_rewards, train_mtgrpo)
from sweet_rl.base.rollout import RolloutConfig, env_factory, run_rollouts


def pm(d):
    "Advantage of the better of two episodes whose rewards differ by d: (d / 2) / (d / sqrt(2) + 1e-4)."
    return (d / 2) / (d / 2 ** 0.5 + 1e-4)


# Group 1: a worse search (turn 0.2) then a right answer (1.0), against a good search (0.7) and a wrong answer (0.0).
# Group 2: an answer at once (no tool result) and a good search, both outcomes 0.5.
TURN_INDEX = torch.tensor([[-1, 0, 0, -1, 1, 1], [-1, 0, 0, -1, 1, -1], [-1, 0, 0, 0, 0, -1], [-1, 0, 0, -1, 1, 1]])
OUTCOME, TURN = torch.tensor([1.0, 0.0, 0.5, 0.5]), torch.tensor([[0.2], [0.7], [0.0], [0.7]])
o, t, t2 = pm(1.0), pm(0.5), pm(0.7)
EXPECTED = {
    'or': [[0, o, o, 0, o, o], [0, -o, -o, 0, -o, 0], [0] * 6, [0] * 6],
    'mr': [[0, t, t, 0, t, t], [0, -t, -t, 0, -t, 0], [0, -t2, -t2, -t2, -t2, 0], [0, t2, t2, 0, t2, t2]],  # merged 1.2/0.7, 0.5/1.2
    'mt': [[0, o - t, o - t, 0, o, o], [0, t - o, t - o, 0, -o, 0], [0, -t2, -t2, -t2, -t2, 0], [0, t2, t2, 0, 0, 0]],
}


@pytest.mark.parametrize('mode', ['or', 'mr', 'mt'])
def test_advantages_match_hand_computed_tensors(mode):
    adv = mtgrpo_advantages(TURN_INDEX, OUTCOME, TURN, 2, mode)
    assert adv.shape == TURN_INDEX.shape
    torch.testing.assert_close(adv, torch.tensor(EXPECTED[mode]), atol=1e-6, rtol=0)
    assert (adv[TURN_INDEX < 0] == 0).all()  # prompt, environment and padding tokens get nothing


@pytest.mark.parametrize('mode', ['or', 'mr', 'mt'])
def test_a_group_with_identical_rewards_has_zero_advantages(mode):
    adv = mtgrpo_advantages(TURN_INDEX, torch.tensor([0.3, 0.3, 1.0, 1.0]), torch.tensor([[0.7], [0.7], [0.2], [0.2]]), 2, mode)
    assert (adv == 0).all()


def test_mt_episode_without_tool_result_takes_the_merged_advantage():
    "Episode 2 answered in its first turn: MT-GRPO gives it GRPO-MR's advantage; the others keep turn-level credit."
    mt, mr = (mtgrpo_advantages(TURN_INDEX, OUTCOME, TURN, 2, m) for m in ('mt', 'mr'))
    torch.testing.assert_close(mt[2], mr[2])
    assert not torch.allclose(mt[3], mr[3])


def test_mt_lambda_weights_the_turn_term_only():
    half = mtgrpo_advantages(TURN_INDEX, OUTCOME, TURN, 2, 'mt', lam=0.5)
    torch.testing.assert_close(half[0], torch.tensor([0, o - t / 2, o - t / 2, 0, o, o]), atol=1e-6, rtol=0)
    zero = mtgrpo_advantages(TURN_INDEX, OUTCOME, TURN, 2, 'mt', lam=0.0)
    torch.testing.assert_close(zero[[0, 1, 3]], mtgrpo_advantages(TURN_INDEX, OUTCOME, TURN, 2, 'or')[[0, 1, 3]])


def test_masks_hold_no_environment_token():
    "A real search episode through the rollout loop: trained tokens are the agent's messages and their end-of-turn tokens."
    tok = load_tokenizer('smollm2-135m')
    task = next(q for q in search_tasks('all', kinds=['capital']) if q.country == 'Peru')

    class Scripted:
        def generate(self, conversations, params=None):  # a search, then an answer whose closing tag the stop string cut
            return ['<reasoning>Search.</reasoning>\n<tool>Peru capital' if len(c) == 1 else '<reasoning>Lima.</reasoning>\n<answer>Lima'
                    for c in conversations]
    recs = run_rollouts([task], env_factory('search'), Scripted(), RolloutConfig(samples_per_task=2), progress=False)
    enc = encode_conversations(tok, agent_conversations(recs, SearchEnv))
    for i, r in enumerate(recs):
        agent = [m['content'] for m in r['dialogue_history'] if m['role'] == 'assistant']
        assert agent == ['<reasoning>Search.</reasoning>\n<tool>Peru capital</tool>', '<reasoning>Lima.</reasoning>\n<answer>Lima</answer>']
        trained = tok.decode(enc.input_ids[i][enc.turn_index[i] >= 0])
        assert trained == ''.join(m + '<|im_end|>' for m in agent)
        result = r['dialogue_history'][2]['content']
        assert result.startswith('<result>') and 'The capital of Peru is Lima' in result and result not in trained
    er = episode_rewards(recs, search_rewards())
    torch.testing.assert_close(er.outcome, torch.tensor([1.9, 1.9])); torch.testing.assert_close(er.turns, torch.tensor([[0.7], [0.7]]))


def test_an_answer_cut_by_the_token_limit_stays_open():
    """The backend's finish reason reaches the search environment through the rollouts: an answer the token limit cut
    while copying the document keeps its tag open and earns no answer and no closing-tag credit (the authors' stop
    handling); the same text stopped at `</answer>` gets its tag back and both."""
    from sweet_rl.base.models import Completion, GenerationBackend
    dump = '<reasoning>r</reasoning>\n<answer>Peru is a country in South America. The capital of Peru is Lima. The official languages of Peru (ISO'
    class Backend(GenerationBackend):
        def __init__(self, reason): self.reason = reason
        def complete(self, conversations, params=None): return [Completion(dump, 64, self.reason) for _ in conversations]
    task = next(q for q in search_tasks('all', kinds=['capital']) if q.country == 'Peru')
    cut, stopped = (run_rollouts([task], env_factory('search', max_turns=1), Backend(reason), RolloutConfig(), progress=False)[0]
                    for reason in ('length', 'stop'))
    assert cut['dialogue_history'][-1]['content'] == dump and cut['answer'] is None
    assert (cut['rewards']['answer_present'], cut['rewards']['xml_format']) == (0.0, pytest.approx(0.8))
    assert stopped['dialogue_history'][-1]['content'] == dump + '</answer>'
    assert (stopped['rewards']['answer_present'], stopped['rewards']['xml_format']) == (1.0, pytest.approx(1.0))


# The learning check: one-turn episodes on capital questions, rewarded for starting the answer with "The capital". SmolLM2
# does so in about a third of its samples at temperature 1, so every group has spread, and the first tokens move fast.
PREFIX = 'the capital'
def starts_with_prefix(records):
    return [float(next(m['content'] for m in r['dialogue_history'] if m['role'] == 'assistant').strip().lower().startswith(PREFIX))
            for r in records]


def prefix_setting():
    tasks = search_tasks('all', kinds=['capital'])
    return Setting(env_factory('search', max_turns=1), tasks[:40], tasks[40:56],
                   [Reward('prefix', 'outcome', 1.0, starts_with_prefix)])


def held_out_rate(policy, setting, seed=123):
    recs = run_rollouts(setting.eval_tasks, setting.make_env, policy.backend(batch_size=32),
                        RolloutConfig(samples_per_task=2, max_new_tokens=4, temperature=1.0, seed=seed, batch_size=32), progress=False)
    return online_metrics(recs, setting.rewards)['reward_prefix']


def test_reward_rises_within_a_few_steps(tmp_path):
    setting = prefix_setting()
    cfg = MTGRPOConfig(mode='or', steps=4, group_size=4, batch_size=2, max_new_tokens=4, lr=2e-3, max_grad_norm=1.0,
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
    cfg = MTGRPOConfig(env='backend', critic_dir=str(tmp_path / 'critic'), critic_weight=0.5, steps=1, group_size=2, batch_size=1,
                       max_turns=2, max_new_tokens=8, simulator_max_new_tokens=8, n_tasks=2, dtype='float32', lora_r=4, lora_alpha=8)
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
    MTGRPOConfig(model=tiny_lm, steps=2, group_size=2, batch_size=1, max_new_tokens=4, max_turns=1, question_kinds=['capital'], n_tasks=8,
                 dtype='float32', lora_r=4, lora_alpha=8, save_steps=1).save(tmp_path / 'g.json')
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


def test_a_policy_keeps_a_frozen_copy_only_where_its_method_needs_one(tiny_lm):
    """`Policy.build` under full fine-tuning: the offline actor always keeps a frozen copy (DPO's reference), the online
    policy only for a KL term; without one, `initial_policy` reads the starting weights again from the model's folder."""
    from sweet_rl.methods.actor import Actor, ActorConfig
    online = OnlinePolicy.build(MTGRPOConfig(model=tiny_lm, lora=False, beta=0.0, dtype='float32'))
    offline = Actor.build(ActorConfig(model=tiny_lm, lora=False, dtype='float32'))
    assert online.ref_model is None and offline.ref_model is not None
    for policy in (online, offline):
        name, weight = next(iter(policy.model.named_parameters()))
        start = weight.detach().clone()
        with torch.no_grad(): weight.add_(1.0)  # as if trained
        with policy.initial_policy() as base:
            torch.testing.assert_close(dict(base.model.named_parameters())[name], start)
        assert not torch.equal(policy.backend().model.get_parameter(name), start)


@pytest.mark.parametrize('mode,silent', [('or', 0.5), ('mr', 0.0), ('mt', 0.0)])
def test_silent_groups_follow_the_mode_not_the_total_reward(mode, silent):
    """The hand example's second group has equal outcomes but different turn rewards: GRPO-OR learns nothing from it,
    while its total rewards differ (so `flat_groups`, on totals, would not flag it)."""
    from sweet_rl.methods.mtgrpo import silent_groups
    assert silent_groups(mtgrpo_advantages(TURN_INDEX, OUTCOME, TURN, 2, mode), 2) == silent


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
