"""Reflect-RL (sweet_rl.methods.reflect) runs too long for its notebook (`nbs/25_reflect.ipynb`, which checks the prompts,
the label scores, the reflection data, the oracle kept out of play, the losses and a small run): online RL (REINFORCE)
learns on the pickup curriculum, PPO's update moves each action the way its return says, an interrupted run resumes to
the same weights, and a replayed success gets an optimizer step of its own."""
import pytest
import torch

from sweet_rl.base.core import read_jsonl
from sweet_rl.envs.taxi import DangerousTaxiEnv, TaxiConfig, taxi_seeds
from sweet_rl.methods.reflect import (LABELS, ReflectConfig, action_labels, episode_seeds, label_logprobs, lora_lm, new_optimizer, play,
                                      policy_update, ReflectPolicy, success_rate, train_reflect)


def at_passenger_seeds(n):
    "Training seeds whose start puts the taxi on the passenger's stop: one right action (pick up) wins the pickup curriculum."
    out, env = [], DangerousTaxiEnv(TaxiConfig(curriculum='pickup'))
    for seed in taxi_seeds('train', 2000):
        env.reset(seed)
        if env.oracle_action() == 'pick up the passenger': out.append(seed)
        if len(out) == n: break
    return out


def test_online_rl_raises_success_on_the_pickup_curriculum():
    # REINFORCE end to end (the authors' default); PPO's update is checked step by step below
    model, tok = lora_lm('smollm2-135m', ReflectConfig(seed=0))
    c = ReflectConfig(reflection=False, memory=0, seed=0, algorithm='reinforce', lr=2e-3)  # 10x Table 3's rate: one iteration does
    seeds = at_passenger_seeds(12)
    envs = [DangerousTaxiEnv(TaxiConfig(curriculum='pickup', horizon=1)) for _ in range(8)]  # one decision: a cheap check
    evaluate = lambda: success_rate(play(model, tok, envs, seeds[4:], c, greedy=True))  # greedy, on 8 starts it never trains on
    before, opt, gen = evaluate(), new_optimizer(model, c), torch.Generator().manual_seed(0)
    policy_update(model, tok, opt, play(model, tok, envs[:4], seeds[:4], c, generator=gen), c)
    after = evaluate()
    assert after >= before + 0.5, (before, after)


def test_ppo_update_moves_each_action_the_way_its_return_says():
    "On a decisive state, the right action rewarded +1 and a wrong one -1: PPO's epochs raise the first and lower the second."
    model, tok = lora_lm('smollm2-135m', ReflectConfig(seed=0))
    c = ReflectConfig(reflection=False, memory=0, seed=0, algorithm='ppo', ppo_epochs=2)
    env, (seed,) = DangerousTaxiEnv(TaxiConfig(curriculum='pickup', horizon=1)), at_passenger_seeds(1)
    (step,) = play(model, tok, [env], [seed], c, greedy=True, record_oracle=True)[0]['steps']
    labels = action_labels(step['n_actions'])
    good = LABELS.index(labels[step['actions'].index(step['oracle'])])
    bad = next(k for k in range(step['n_actions']) if k != good)
    def score():
        "Both actions' log-probabilities at the state."
        with torch.no_grad(): return label_logprobs(model, tok, [step['prompt']], [step['n_actions']])[0]
    before = score()
    eps = [{'steps': [{**step, 'label': k, 'reward': r, 'logprob': float(before[k])}]} for k, r in ((good, 1.0), (bad, -1.0))]
    policy_update(model, tok, new_optimizer(model, c), eps, c)
    moved = score() - before
    assert moved[good] > 0 and moved[bad] < 0, (moved, good, bad)


def test_interrupted_run_resumes_to_the_same_weights(tmp_path, monkeypatch, tiny_lm):
    cfg = ReflectConfig(reflection=False, data_episodes=4, sft_steps=2, iterations=3, episodes_per_iteration=2,
                        eval_episodes=2, save_every=1, lora_r=8, model=tiny_lm, reflection_model=tiny_lm)
    full = train_reflect(cfg, None, tmp_path / 'full', progress=False)
    log = lambda run: [{k: v for k, v in r.items() if k != 'seconds'} for _, r in read_jsonl(tmp_path / run / 'train_log.jsonl')]
    import sweet_rl.methods.reflect as R
    real, calls = R.policy_update, []
    def stop_third(*a, **k):
        calls.append(1)
        if len(calls) == 3: raise KeyboardInterrupt
        return real(*a, **k)
    monkeypatch.setattr(R, 'policy_update', stop_third)
    with pytest.raises(KeyboardInterrupt): train_reflect(cfg, None, tmp_path / 'cut', progress=False)
    monkeypatch.setattr(R, 'policy_update', real)
    resumed = train_reflect(cfg, None, tmp_path / 'cut', progress=False)
    assert [r['iteration'] for r in log('cut')] == [1, 2, 3] and log('cut') == log('full')
    a, b = full.trainable_state(), ReflectPolicy.load(tmp_path / 'cut' / 'policy').trainable_state()
    assert resumed.saved_path == tmp_path / 'cut' / 'policy' and all(torch.equal(a[k], b[k]) for k in a)
    assert any(float(a[k].abs().sum()) > 0 for k in a if 'lora_B' in k)  # the adapter trained off its zero start


@pytest.mark.parametrize('replay_step, optimizer_steps', [(True, 3), (False, 2)])
def test_a_replayed_success_gets_its_own_optimizer_step(tmp_path, monkeypatch, tiny_lm, replay_step, optimizer_steps):
    "Two iterations whose episodes all count as successes: the second replays one, in an update of its own (the authors' code) or mixed in."
    import sweet_rl.methods.reflect as R
    real_play, real_update, updates = R.play, R.policy_update, []
    def succeed(*a, **k):
        eps = real_play(*a, **k)
        for e in eps: e['success'] = True
        return eps
    def record(model, tok, opt, episodes, config, **k):
        updates.append([e['seed'] for e in episodes])
        return real_update(model, tok, opt, episodes, config, **k)
    monkeypatch.setattr(R, 'play', succeed); monkeypatch.setattr(R, 'policy_update', record)
    cfg = ReflectConfig(reflection=False, data_episodes=2, sft_steps=1, iterations=2, episodes_per_iteration=2, eval_episodes=1,
                        lora_r=8, model=tiny_lm, reflection_model=tiny_lm, replay_step=replay_step)
    train_reflect(cfg, None, tmp_path, progress=False)
    log = [r for _, r in read_jsonl(tmp_path / 'train_log.jsonl')]
    first, second = episode_seeds(cfg, 'train', 2), episode_seeds(cfg, 'train', 2, offset=2)
    assert [r['replayed'] for r in log] == [0, 1]
    if replay_step:
        assert updates[:2] == [first, second] and len(updates) == 3 and len(updates[2]) == 1 and updates[2][0] in first
        assert log[0]['replay_loss'] is None and log[1]['replay_loss'] is not None
    else:
        assert len(updates) == 2 and updates[0] == first and updates[1][:2] == second and updates[1][2] in first
    adam = torch.load(tmp_path / 'checkpoints' / 'checkpoint-2' / 'rl_state.pt', weights_only=False)['optimizer']['state']
    assert {float(v['step']) for v in adam.values()} == {optimizer_steps}  # AdamW counts the optimizer steps it took
