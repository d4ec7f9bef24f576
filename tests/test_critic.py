"""Tests of sweet_rl.methods.critic that stay out of nbs/20_critic.ipynb: real ColBench rows, LoRA critic steps on a loaded model,
cached scoring, the learning check and resuming (the pure checks of Eq. 2-3, pairs and masks live in the notebook)."""
import json, math
from pathlib import Path

import pytest
import torch

from sweet_rl.methods.critic import (NORMALIZATIONS, critic_logprobs, critic_loss, critic_messages, encode_critic_inputs, make_pairs,
                             training_info)
from sweet_rl.base.core import REPO_ROOT


def test_critic_messages_real_tasks():
    shared = Path('/work/shared/colbench')
    rows = {}
    for kind in ('backend', 'frontend'):
        path = shared / f'{kind}_dev.jsonl'
        if not path.exists(): pytest.skip('ColBench development rows not available')
        rows[kind] = json.loads(path.read_text().splitlines()[0])
    for kind, task in rows.items():
        rec = {'task': task, 'dialogue_history': [{'role': 'assistant', 'content': 'Q?'}, {'role': 'user', 'content': 'A.'}],
               'answer': '', 'reward': 0.0}
        msgs = critic_messages(rec)
        assert [m['role'] for m in msgs] == ['user', 'assistant', 'user']
        assert task['ground_truth'] in msgs[0]['content'] and task['problem_description'] in msgs[0]['content']
        assert msgs[0]['content'].index(task['problem_description']) < msgs[0]['content'].index(task['ground_truth'])
        bare = critic_messages(rec, use_hidden_info=False)
        assert task['ground_truth'] not in bare[0]['content'] and task['problem_description'] in bare[0]['content']
        assert training_info(task) == task['ground_truth']
    backend = {k: v for k, v in rows['backend'].items() if k != 'ground_truth'}
    assert training_info(backend) == rows['backend']['hidden_information']
    custom = critic_messages({'task': rows['backend'], 'dialogue_history': [], 'answer': '', 'reward': 0},
                             template='REF={reference}|TASK={problem_description}')
    assert custom[0]['content'].startswith('REF=' + rows['backend']['ground_truth'])


@pytest.fixture(scope='module')
def tok():
    from sweet_rl.base.models import load_tokenizer
    return load_tokenizer('smollm2-135m')


TRAJ = {'task': {'problem_description': 'Write f(x).', 'ground_truth': 'def f(x): return x', 'hidden_information': 'def f(x): return x',
                 'test_cases': {'test1': 'f(1)'}}, 'answer': '', 'reward': 1.0,
        'dialogue_history': [{'role': 'assistant', 'content': 'Should f return x unchanged?'},
                             {'role': 'user', 'content': 'Yes, exactly unchanged.'},
                             {'role': 'assistant', 'content': 'I WANT TO ANSWER:\ndef f(x): return x'}]}


def test_lora_critic_steps(tok):
    from peft import LoraConfig, get_peft_model
    from sweet_rl.base.core import seed_everything
    from sweet_rl.base.models import load_model
    seed_everything(0)
    base, tok = load_model('smollm2-135m', dtype='float32', device='cpu')
    with pytest.raises(ValueError, match='no adapter'): critic_logprobs(base, encode_critic_inputs(tok, [TRAJ]))
    critic = get_peft_model(base, LoraConfig(r=8, lora_alpha=16, target_modules=['q_proj', 'v_proj'], lora_dropout=0.0))
    bad = [{**TRAJ, 'reward': 0.0, 'dialogue_history': [{'role': 'assistant', 'content': f'I WANT TO ANSWER:\ndef f(x): return {v}'}]}
           for v in (0, -1)]
    chosen, rejected = encode_critic_inputs(tok, [TRAJ, TRAJ]), encode_critic_inputs(tok, bad)
    assert chosen.input_ids.shape[1] < 150
    trainable = {n: p.detach().clone() for n, p in critic.named_parameters() if p.requires_grad}
    frozen = {n: p.detach().clone() for n, p in critic.named_parameters() if not p.requires_grad and 'q_proj.base' in n}
    opt = torch.optim.AdamW([p for p in critic.parameters() if p.requires_grad], lr=2e-3)
    bts = []
    for _ in range(4):
        cp, cr = critic_logprobs(critic, chosen); rp, rr = critic_logprobs(critic, rejected)
        assert not cr.requires_grad and cp.requires_grad
        out = critic_loss(cp, cr, chosen.turn_index, rp, rr, rejected.turn_index)
        opt.zero_grad(); out.loss.backward(); opt.step()
        bts.append(out.bt.item())
    assert abs(bts[0] - math.log(2)) < 1e-5  # adapter starts as the identity: all advantages 0
    assert all(math.isfinite(b) for b in bts) and bts[-1] < bts[0] - 1e-3
    changed = [n for n, p in critic.named_parameters() if n in trainable and not torch.equal(p.detach(), trainable[n])]
    assert len(changed) == len(trainable) > 0
    assert all(torch.equal(p.detach(), frozen[n]) for n, p in critic.named_parameters() if n in frozen)
    # the reference really is the initial model: disabling the adapter reproduces the base log-probs
    with torch.no_grad(), critic.disable_adapter():
        from sweet_rl.base.models import token_logprobs
        again = token_logprobs(critic, chosen.input_ids, chosen.attention_mask)
    torch.testing.assert_close(again, cr)


# ---------------------------------------------------------------- scoring API, training, learning check
from sweet_rl.methods.critic import Critic, CriticConfig, synthetic_trajectories, train_critic
from sweet_rl.methods.scorers import CriticScorer, JudgeScorer, parse_verdict, score_candidates, score_candidates_full


@pytest.fixture(scope='module')
def perturbed_critic():
    "A LoRA critic whose adapter is not the identity (so π_θ ≠ π_ref), float32."
    c = Critic.build(CriticConfig(dtype='float32', lora_r=8))
    g = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for n, p in c.model.named_parameters():
            if 'lora_B' in n: p.copy_(torch.randn(p.shape, generator=g) * 0.02)
    return c


@pytest.mark.parametrize('norm', NORMALIZATIONS)
def test_cached_scoring_equals_uncached(perturbed_critic, norm):
    c = perturbed_critic
    task = {'problem_description': 'Write area(w, h) returning the area of a rectangle.',
            'ground_truth': 'def area(w, h):\n    return w * h\n'}
    history = [{'role': 'assistant', 'content': 'Can w or h be negative?'}, {'role': 'user', 'content': 'No, never.'}]
    cands = ['Should the result be an int?', 'I WANT TO ANSWER:\ndef area(w, h): return w * h', ' x', '?' * 3,
             'A much longer candidate message that goes on for a while about rectangles and their sides.']
    fast = score_candidates(c.model, c.tokenizer, task, history, cands, normalization=norm, batch_size=2)
    slow = score_candidates_full(c.model, c.tokenizer, task, history, cands, normalization=norm)
    torch.testing.assert_close(fast, slow, atol=1e-4, rtol=0)
    assert fast.abs().max() > 1e-3  # the adapter really changes the scores
    # an empty history (the agent's first turn) works too
    torch.testing.assert_close(score_candidates(c.model, c.tokenizer, task, [], cands[:2], normalization=norm),
                               score_candidates_full(c.model, c.tokenizer, task, [], cands[:2], normalization=norm),
                               atol=1e-4, rtol=0)


def test_head_scoring_cache_matches_full_sequence(perturbed_critic):
    "Regression/value heads: the cached candidate pooling equals pooling on each full sequence."
    from sweet_rl.methods.critic import HeadModel
    c = perturbed_critic
    hm = HeadModel(c.model, c.model.get_base_model().config.hidden_size)
    with torch.no_grad(): hm.head.weight.normal_(0, 0.1); hm.head.bias.fill_(0.1)
    hc = Critic(hm, c.tokenizer, CriticConfig(head='regression', dtype='float32'))
    task = {'problem_description': 'Write f(x).', 'ground_truth': 'def f(x): return x'}
    history = [{'role': 'assistant', 'content': 'Any constraints?'}, {'role': 'user', 'content': 'None.'}]
    cands = ['Is x an int?', 'I WANT TO ANSWER:\ndef f(x): return x', 'Hm']
    fast = CriticScorer(hc).score(task, history, cands)
    full = torch.stack([hc.turn_scores([{'task': task, 'dialogue_history': history + [{'role': 'assistant', 'content': a}]}])[0][-1]
                        for a in cands])
    torch.testing.assert_close(fast, full, atol=1e-4, rtol=0)


def test_learning_check_on_synthetic_trajectories(tmp_path):
    """Success depends only on the first agent turn. After training on 8 tasks, the critic prefers the successful
    trajectory of 8 unseen tasks and gives the decisive turn the higher advantage; untrained, it is at chance."""
    train, held = synthetic_trajectories(8, seed=0), synthetic_trajectories(8, seed=1)
    assert not {t['task']['problem_description'] for t in train} & {t['task']['problem_description'] for t in held}
    held_pairs = make_pairs(held)
    cfg = CriticConfig(dtype='float32', lora_r=8, lr=1e-3, epochs=2, batch_size=4, grad_accum=1, save_steps=100)
    untrained = Critic.build(cfg).pair_accuracy(held_pairs[:2])  # its adapter starts at zero: every pair ties
    assert untrained['pair_accuracy'] == 0.5 and untrained['ties'] == 1.0
    critic = train_critic(cfg, train, tmp_path, progress=False)
    chosen = critic.turn_scores([p['chosen'] for p in held_pairs])
    rejected = critic.turn_scores([p['rejected'] for p in held_pairs])
    acc = sum(1.0 if c.sum() > r.sum() else 0.5 if c.sum() == r.sum() else 0.0 for c, r in zip(chosen, rejected)) / len(held_pairs)
    assert acc >= 0.85, acc  # pair accuracy as `pair_accuracy` computes it, from the same turn scores
    # the decisive turn (turn 0): its advantage is higher in the successful trajectory
    decisive = sum(float(c[0]) > float(r[0]) for c, r in zip(chosen, rejected)) / len(held_pairs)
    assert decisive >= 0.85, decisive
    # and through the scoring API: the clarifying question beats the small talk as a first action
    wins = 0
    for p in held_pairs:
        cands = [p['chosen']['dialogue_history'][0]['content'], p['rejected']['dialogue_history'][0]['content']]
        wins += int(CriticScorer(critic).score(p['chosen']['task'], [], cands).argmax() == 0)
    assert wins / len(held_pairs) >= 0.75, wins


def test_train_critic_resumes_from_checkpoint(tmp_path, tag_checkpoint, tiny_lm):
    "An interrupted run continues from its last checkpoint, and its log keeps every step once."
    syn = synthetic_trajectories(4, seed=3)
    cfg = CriticConfig(model=tiny_lm, dtype='float32', lora_r=4, lora_targets=['q_proj', 'v_proj'], lr=1e-3, epochs=3, batch_size=4,
                       grad_accum=1, save_steps=1, save_total_limit=1)
    train_critic(cfg, syn, tmp_path, progress=False, max_steps=2)
    sentinel = tag_checkpoint(tmp_path / 'checkpoints' / 'checkpoint-2')
    import shutil; shutil.rmtree(tmp_path / 'critic')  # as if the run had stopped after step 2
    train_critic(cfg, syn, tmp_path, progress=False)
    log = [json.loads(l) for l in (tmp_path / 'train_log.jsonl').read_text().splitlines()]
    assert [r['step'] for r in log if 'bt' in r] == [1, 2, 3]
    # steps 1-2 come from the checkpoint (a fresh start would have logged real losses there); only step 3 trained now
    assert [r['loss'] == sentinel for r in log if 'bt' in r] == [True, True, False]
    with pytest.raises(FileNotFoundError, match='not a saved Critic'): Critic.load(tmp_path)


def test_judge_scorer_round_robin_and_position_balance():
    class FirstSlot:  # a judge that always picks the first slot, whatever it sees
        def generate(self, convs, params=None): return ['AGENT 1 WINS'] * len(convs)
    task, cands = {'problem_description': 'x', 'ground_truth': 'y'}, list('abcdefgh')
    s = JudgeScorer(FirstSlot(), seed=1).score(task, [], cands)
    assert s.shape == (8,) and abs(float(s.mean()) - 0.5) < 1e-6  # every game has one winner
    # slots are drawn per game: averaged over seeds, no candidate index is favoured by a first-slot judge
    # (with a fixed order, candidate 0 would win all its games and candidate 7 none)
    mean = torch.stack([JudgeScorer(FirstSlot(), seed=k).score(task, [], cands) for k in range(40)]).mean(0)
    assert (mean - 0.5).abs().max() < 0.15, mean
    assert parse_verdict('AGENT 2 WINS ... no wait, AGENT 1 WINS') == 0
