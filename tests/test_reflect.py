"""Reflect-RL (sweet_rl.methods.reflect): the action scoring covers exactly the valid labels, reflections never see the oracle at
test time, negative examples change only the reflections written after a mistake, online RL (REINFORCE) learns on the
pickup curriculum, PPO's update moves each action the way its return says and refuses episodes without their sampling
log-probabilities, an interrupted run resumes to the same weights, and a replayed success gets an optimizer step of its
own."""
import json, random

import pytest
import torch

from sweet_rl.envs.taxi import ACTIONS, DangerousTaxiEnv, TaxiConfig, decode_state, taxi_seeds
from sweet_rl.methods.reflect import (LABELS, ReflectConfig, Reflector, action_labels, episode_seeds, label_logprobs, lora_lm,
                              new_optimizer, play, policy_prompt, policy_update, reflection_data, reflection_prompt,
                              success_rate, train_reflect, written_reflection)
from sweet_rl.base.train import trainable_state


@pytest.fixture(scope='module')
def policy():
    return lora_lm('smollm2-135m', ReflectConfig(lora_r=8, lora_alpha=16))


@pytest.mark.parametrize('n', [1, 2, 6, 17])
def test_scores_cover_exactly_the_valid_labels(policy, n):
    model, tok = policy
    prompt = policy_prompt('Pick one.', 'a state', [f'action {i}' for i in range(n)], action_labels(n))
    (lp,) = label_logprobs(model, tok, [prompt], [n])
    assert lp.shape == (n,)
    assert torch.isclose(lp.exp().sum(), torch.tensor(1.0), atol=1e-5)
    # the same prompt scored with a wider list gives the same relative preferences among the first n labels
    (wide,) = label_logprobs(model, tok, [prompt], [len(LABELS)])
    assert torch.allclose(lp, torch.log_softmax(wide[:n], -1), atol=1e-4)


def test_policy_never_asks_the_oracle_at_test_time(policy, monkeypatch):
    model, tok = policy
    def spoiler(self): raise AssertionError('the oracle was consulted while playing')
    monkeypatch.setattr(DangerousTaxiEnv, 'oracle_action', spoiler)
    c = ReflectConfig(reflection_tokens=6)
    reflector = Reflector(model, tok, max_new_tokens=6)
    envs = [DangerousTaxiEnv(TaxiConfig(curriculum='pickup')) for _ in range(2)]
    eps = play(model, tok, envs, episode_seeds(c, 'test', 2), c, reflector, greedy=True)
    assert all(s['reflection'] is not None for e in eps for s in e['steps'])
    # grading records the oracle's action beside each step, and the prompts and actions stay the same
    monkeypatch.undo()
    graded = play(model, tok, envs, episode_seeds(c, 'test', 2), c, reflector, greedy=True, record_oracle=True)
    key = lambda es: [[(s['prompt'], s['action']) for s in e['steps']] for e in es]
    assert key(graded) == key(eps) and all(s['oracle'] in s['actions'] for e in graded for s in e['steps'])
    # what the reflector reads holds no oracle: only the instruction, the memory and the state
    p = reflection_prompt(envs[0].instruction, 'the state', [])
    assert 'best next action' not in p and 'way forward' not in p


def test_negative_examples_only_change_reflections_after_mistakes():
    seeds = episode_seeds(ReflectConfig(), 'train', 12)
    with_neg = reflection_data(ReflectConfig(negative_examples=True), seeds)
    without = reflection_data(ReflectConfig(negative_examples=False), seeds)
    assert [d['state'] for d in with_neg] == [d['state'] for d in without]
    changed = [a['after_mistake'] for a, b in zip(with_neg, without) if a['reflection'] != b['reflection']]
    assert changed and all(changed) and len(changed) == sum(d['after_mistake'] for d in with_neg)
    assert written_reflection('move west') == 'The best next action is: move west.'


def at_passenger_seeds(n):
    "Training seeds whose start puts the taxi on the passenger's stop: one right action (pick up) wins the pickup curriculum."
    out, env = [], DangerousTaxiEnv(TaxiConfig(curriculum='pickup'))
    for seed in taxi_seeds('train', 2000):
        env.reset(seed)
        if env.oracle_action() == 'pick up the passenger': out.append(seed)
        if len(out) == n: break
    return out


def test_online_rl_raises_success_on_the_pickup_curriculum():
    # REINFORCE end to end (the authors' default); PPO's update is checked step by step below, at a tenth of the cost
    model, tok = lora_lm('smollm2-135m', ReflectConfig(seed=0))
    c = ReflectConfig(reflection=False, memory=0, seed=0, algorithm='reinforce')
    seeds = at_passenger_seeds(16)
    envs = [DangerousTaxiEnv(TaxiConfig(curriculum='pickup', horizon=1)) for _ in range(8)]  # one decision: a cheap check
    evaluate = lambda: success_rate(play(model, tok, envs, seeds[:8], c, greedy=True) + play(model, tok, envs, seeds[8:], c, greedy=True))
    before, opt, gen = evaluate(), new_optimizer(model, c), torch.Generator().manual_seed(0)
    for it in range(12):
        batch = [seeds[(4 * it + k) % len(seeds)] for k in range(4)]
        policy_update(model, tok, opt, play(model, tok, envs[:4], batch, c, generator=gen), c)
    after = evaluate()
    assert after >= before + 0.25, (before, after)


def test_ppo_update_moves_each_action_the_way_its_return_says():
    "On four decisive states, the right action rewarded +1 and a wrong one -1: PPO's epochs raise the first and lower the second."
    model, tok = lora_lm('smollm2-135m', ReflectConfig(seed=0))
    c = ReflectConfig(reflection=False, memory=0, seed=0, algorithm='ppo', ppo_epochs=2)
    env, eps = DangerousTaxiEnv(TaxiConfig(curriculum='pickup', horizon=1)), []
    for seed in at_passenger_seeds(4):
        (step,) = play(model, tok, [env], [seed], c, greedy=True, record_oracle=True)[0]['steps']
        labels = action_labels(step['n_actions'])
        good = LABELS.index(labels[step['actions'].index(step['oracle'])])
        bad = next(k for k in range(step['n_actions']) if k != good)
        (now,) = label_logprobs(model, tok, [step['prompt']], [step['n_actions']])
        for k, r in ((good, 1.0), (bad, -1.0)):
            eps.append({'steps': [{**step, 'label': k, 'reward': r, 'logprob': float(now[k])}]})
    before = label_logprobs(model, tok, [e['steps'][0]['prompt'] for e in eps], [e['steps'][0]['n_actions'] for e in eps])
    policy_update(model, tok, new_optimizer(model, c), eps, c)
    after = label_logprobs(model, tok, [e['steps'][0]['prompt'] for e in eps], [e['steps'][0]['n_actions'] for e in eps])
    moved = [float(a[e['steps'][0]['label']] - b[e['steps'][0]['label']]) for a, b, e in zip(after, before, eps)]
    assert all(m > 0 for m in moved[0::2]) and all(m < 0 for m in moved[1::2]), moved


def test_ppo_needs_the_sampling_logprobs(policy):
    model, tok = policy
    c = ReflectConfig(reflection=False, algorithm='ppo')
    eps = play(model, tok, [DangerousTaxiEnv(TaxiConfig(curriculum='pickup'))], episode_seeds(c, 'train', 1), c, greedy=True)
    for s in eps[0]['steps']: del s['logprob']
    with pytest.raises(ValueError, match='log-probability each step was sampled with'):
        policy_update(model, tok, new_optimizer(model, c), eps, c)
    with pytest.raises(ValueError, match="algorithm must be 'reinforce' or 'ppo'"): ReflectConfig(algorithm='a2c')


def test_interrupted_run_resumes_to_the_same_weights(tmp_path, monkeypatch, tiny_lm):
    cfg = ReflectConfig(reflection=False, data_episodes=4, sft_steps=2, iterations=3, episodes_per_iteration=2,
                        eval_episodes=2, save_every=1, lora_r=8, model=tiny_lm, reflection_model=tiny_lm)
    full = train_reflect(cfg, tmp_path / 'full', progress=False)
    import sweet_rl.methods.reflect as R
    real, calls = R.policy_update, []
    def stop_third(*a, **k):
        calls.append(1)
        if len(calls) == 3: raise KeyboardInterrupt
        return real(*a, **k)
    monkeypatch.setattr(R, 'policy_update', stop_third)
    with pytest.raises(KeyboardInterrupt): train_reflect(cfg, tmp_path / 'cut', progress=False)
    monkeypatch.setattr(R, 'policy_update', real)
    resumed = train_reflect(cfg, tmp_path / 'cut', progress=False)
    assert [r['iteration'] for r in resumed['train_log']] == [1, 2, 3]
    drop = lambda log: [{k: v for k, v in r.items() if k != 'seconds'} for r in log]
    assert drop(resumed['train_log']) == drop(full['train_log'])
    a = torch.load(tmp_path / 'full' / 'checkpoint.pt', weights_only=False)['adapter']
    b = torch.load(tmp_path / 'cut' / 'checkpoint.pt', weights_only=False)['adapter']
    assert all(torch.equal(a[k], b[k]) for k in a)
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
    log = train_reflect(cfg, tmp_path, progress=False)['train_log']
    first, second = episode_seeds(cfg, 'train', 2), episode_seeds(cfg, 'train', 2, offset=2)
    assert [r['replayed'] for r in log] == [0, 1]
    if replay_step:
        assert updates[:2] == [first, second] and len(updates) == 3 and len(updates[2]) == 1 and updates[2][0] in first
        assert log[0]['replay_loss'] is None and log[1]['replay_loss'] is not None
    else:
        assert len(updates) == 2 and updates[0] == first and updates[1][:2] == second and updates[1][2] in first
    adam = torch.load(tmp_path / 'checkpoint.pt', weights_only=False)['optimizer']['state']
    assert {float(v['step']) for v in adam.values()} == {optimizer_steps}  # AdamW counts the optimizer steps it took


def test_every_explore_state_fits_the_labels():
    "AutoExplore directories can hold dozens of files; the run's copies keep at most `EXPLORE_MAX_ENTRIES` per directory."
    from sweet_rl.methods.reflect import EXPLORE_MAX_ENTRIES, choice_env
    c = ReflectConfig(env='explore', curriculum='any', explore_mode='find')
    rng, widest = random.Random(0), 0
    for split in ('train', 'test'):
        env = choice_env(c, split)
        for seed in episode_seeds(c, split, 12):
            env.reset(seed)
            for _ in range(6):  # a random walk through the copy
                acts = env.valid_actions(); widest = max(widest, len(acts))
                moves = [a for a in acts if a.startswith(('cd ', 'ls'))]
                if env.step(rng.choice(moves)).done: break
    assert 3 + 4 * EXPLORE_MAX_ENTRIES <= len(LABELS) and widest <= len(LABELS), widest
