"Tests of sweet_rl.methods.critic: Eq. 2-3 in each normalization, preference pairs, critic inputs and masks, a LoRA critic step."
import json, math, random
from pathlib import Path

import pytest
import torch

from sweet_rl.methods.critic import (NORMALIZATIONS, PairConfig, agent_nll, bt_loss, critic_logprobs, critic_loss, critic_messages,
                             encode_critic_inputs, is_success, make_pairs, token_log_ratio, training_info, trajectory_score,
                             turn_advantages)
from sweet_rl.base.core import REPO_ROOT

# one trajectory: 2 prompt tokens, agent turn 0 (2 tokens), 1 user token, agent turn 1 (3 tokens)
TURN = torch.tensor([-1, -1, 0, 0, -1, 1, 1, 1])
RATIO = torch.tensor([5., -3., 0.2, 0.4, 9., 0.1, 0.3, -0.1])
REF = torch.full((8,), -1.0)
POL = REF + RATIO


@pytest.mark.parametrize('norm,turns,score', [('paper', [0.3, 0.1], 0.4), ('release', [0.12, 0.06], 0.18),
                                              ('none', [0.6, 0.3], 0.9)])
def test_hand_computed_modes(norm, turns, score):
    torch.testing.assert_close(turn_advantages(POL, REF, TURN, norm), torch.tensor(turns))
    torch.testing.assert_close(trajectory_score(POL, REF, TURN, norm), torch.tensor(score))


def test_default_is_paper_and_unknown_mode_refused():
    torch.testing.assert_close(trajectory_score(POL, REF, TURN), trajectory_score(POL, REF, TURN, 'paper'))
    with pytest.raises(ValueError, match='normalization must be one of'): trajectory_score(POL, REF, TURN, 'mean')
    with pytest.raises(ValueError, match='shapes differ'): token_log_ratio(POL, REF[:3], TURN)


def test_non_agent_tokens_ignored():
    noisy = POL.clone(); noisy[TURN < 0] = 123.0
    for norm in NORMALIZATIONS:
        torch.testing.assert_close(turn_advantages(noisy, REF, TURN, norm), turn_advantages(POL, REF, TURN, norm))


def test_modes_agree_where_they_should():
    one_turn = torch.tensor([-1, 0, 0, 0, 0, -1])
    pol, ref = torch.randn(6), torch.randn(6)
    # one agent turn: paper (turn mean) == release (mean over all agent tokens)
    torch.testing.assert_close(trajectory_score(pol, ref, one_turn, 'paper'), trajectory_score(pol, ref, one_turn, 'release'))
    # K equal-length turns: release == paper / K; none == paper * L
    eq = torch.tensor([-1, 0, 0, -1, 1, 1, -1, 2, 2])
    pol, ref = torch.randn(9), torch.randn(9)
    paper = trajectory_score(pol, ref, eq, 'paper')
    torch.testing.assert_close(trajectory_score(pol, ref, eq, 'release'), paper / 3)
    torch.testing.assert_close(trajectory_score(pol, ref, eq, 'none'), paper * 2)


def test_padded_batch_with_different_turn_counts():
    turn2 = torch.tensor([-1, 0, 0, 0, -1, -1, -1, -1])
    pol2 = REF + torch.tensor([0., 0.3, 0.6, 0.9, 7., 7., 7., 7.])
    P, R, T = torch.stack([POL, pol2]), torch.stack([REF, REF]), torch.stack([TURN, turn2])
    torch.testing.assert_close(turn_advantages(P, R, T), torch.tensor([[0.3, 0.1], [0.6, 0.0]]))
    torch.testing.assert_close(trajectory_score(P, R, T, 'release'), torch.tensor([0.18, 0.6]))
    torch.testing.assert_close(trajectory_score(P, R, T, 'none'), torch.tensor([0.9, 1.8]))
    # each row scored alone gives the same value as in the batch
    torch.testing.assert_close(trajectory_score(pol2, REF, turn2, 'paper'), torch.tensor(0.6))


def test_bt_loss_eq2():
    s_pos, s_neg = torch.tensor([0.4, 2.0, -1.0]), torch.tensor([0.9, 2.0, 3.0])
    for beta in (0.1, 1.0):
        want = sum(-math.log(1 / (1 + math.exp(-beta * (a - b))))
                   for a, b in zip(s_pos.tolist(), s_neg.tolist())) / 3
        assert abs(bt_loss(s_pos, s_neg, beta).item() - want) < 1e-6
    assert abs(bt_loss(torch.zeros(2), torch.zeros(2)).item() - math.log(2)) < 1e-7


def test_critic_loss_combines_terms_and_grads_only_agent_tokens():
    turn2 = torch.tensor([-1, 0, 0, 0, -1, -1, -1, -1])
    rej = REF + torch.tensor([0., 0.3, 0.6, 0.9, 0., 0., 0., 0.])
    p = POL.clone().requires_grad_()
    out = critic_loss(p[None], REF[None], TURN[None], rej[None], REF[None], turn2[None], beta=0.1, nll_coef=0.01)
    bt = -math.log(1 / (1 + math.exp(-0.1 * (0.4 - 0.6))))
    nll = 1 - 0.18  # mean of -log π_θ over the chosen agent tokens
    assert abs(out.bt.item() - bt) < 1e-6 and abs(out.nll.item() - nll) < 1e-6
    assert abs(out.loss.item() - (bt + 0.01 * nll)) < 1e-6
    assert out.accuracy.item() == 0.0
    out.loss.backward()
    assert p.grad[TURN < 0].abs().sum().item() == 0.0
    assert (p.grad[TURN >= 0] < 0).all()
    assert abs(agent_nll(REF[None], TURN[None]).item() - 1.0) < 1e-7


def _traj(task, reward, success=None, tag=''):
    r = {'task': {'problem_description': task, 'ground_truth': 'def f(): pass', 'hidden_information': 'def f(): pass',
                  'test_cases': {'test1': 'f()'}},
         'dialogue_history': [{'role': 'assistant', 'content': f'answer {tag}'}], 'answer': 'x', 'reward': reward}
    if success is not None: r['success'] = success
    return r


ROLLS = [_traj('A', 1.0, tag='a0'), _traj('A', 0.3, tag='a1'), _traj('A', 0.0, tag='a2'),
         _traj('B', 0.9, tag='b0'), _traj('B', 0.2, tag='b1'),
         _traj('C', 1.0, True, 'c0'), _traj('C', 1.0, True, 'c1'), _traj('C', 0.5, False, 'c2')]


def _tags(pairs): return [(p['chosen']['dialogue_history'][0]['content'], p['rejected']['dialogue_history'][0]['content']) for p in pairs]


def test_pairs_released_protocol():
    pairs = make_pairs(ROLLS)
    tags = _tags(pairs)
    assert [t[1] for t in tags] == ['answer a1', 'answer a2', 'answer c2']
    assert all(t[0] == 'answer a0' for t in tags[:2]) and tags[2][0] in ('answer c0', 'answer c1')
    assert all(p['chosen']['reward'] > p['rejected']['reward'] for p in pairs)
    assert len({p['task_id'] for p in pairs}) == 2  # B's best failed


def test_pairs_knobs():
    assert len(make_pairs(ROLLS, PairConfig(require_success=False))) == 4
    assert len(make_pairs(ROLLS, PairConfig(min_reward_gap=0.6))) == 2
    assert len(make_pairs(ROLLS, PairConfig(min_reward_gap=0.5))) == 3  # 1.0 - 0.5 >= 0.5 still pairs
    capped = make_pairs(ROLLS, PairConfig(max_pairs_per_task=1))
    assert len(capped) == 2 and len({p['task_id'] for p in capped}) == 2
    assert make_pairs([_traj('D', 0.8, True), _traj('D', 0.1, False)])[0]['chosen']['reward'] == 0.8
    assert make_pairs([_traj('D', 1.0, False), _traj('D', 0.1)]) == []
    assert make_pairs([_traj('D', 0.8), _traj('D', 0.1)], PairConfig(success_threshold=0.75)) != []
    assert is_success({'reward': 1.0}) and not is_success({'reward': 0.99}) and is_success({'reward': 0.1, 'success': True})


def test_pairs_deterministic_and_per_task_independent():
    many = [_traj('E', 1.0, tag=f'top{k}') for k in range(4)] + [_traj('E', 0.1 * k, tag=f'low{k}') for k in range(6)]
    cfg = PairConfig(max_pairs_per_task=3, seed=7)
    a = _tags(make_pairs(many, cfg))
    assert a == _tags(make_pairs(many, cfg)) and len(a) == 3
    # other tasks in the input (and their order) do not change this task's pairs
    shuffled = many + ROLLS
    random.Random(1).shuffle(shuffled)
    b = _tags([p for p in make_pairs(shuffled, cfg) if p['chosen']['task']['problem_description'] == 'E'])
    assert sorted(a) == sorted(b)
    seeds = {tuple(_tags(make_pairs(many, PairConfig(max_pairs_per_task=3, seed=s)))) for s in range(8)}
    assert len(seeds) > 1  # the seed matters


def test_pairs_bad_input():
    with pytest.raises(ValueError, match="trajectory 1: field 'reward'"): make_pairs([_traj('A', 1.0), {**_traj('A', 0), 'reward': None}])
    with pytest.raises(ValueError, match="trajectory 0: field 'task'"): make_pairs([{'reward': 1.0}])


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


@pytest.mark.parametrize('use_hidden_info', [True, False])
def test_mask_token_by_token_on_real_template(tok, use_hidden_info):
    msgs = critic_messages(TRAJ, use_hidden_info)
    text = tok.apply_chat_template(msgs, tokenize=False)
    enc = encode_critic_inputs(tok, [TRAJ], use_hidden_info)
    ids, turns = enc.input_ids[0].tolist(), enc.turn_index[0].tolist()
    offsets = tok(text, add_special_tokens=False, return_offsets_mapping=True)['offset_mapping']
    assert tok(text, add_special_tokens=False)['input_ids'] == ids
    # independent of models.py: find each agent message's content by text search, then check every token
    spans, pos = [], 0
    for m in TRAJ['dialogue_history']:
        start = text.index(m['content'], pos); pos = start + len(m['content'])
        if m['role'] == 'assistant': spans.append((start, pos))
    end_id = tok.convert_tokens_to_ids('<|im_end|>')
    for t, ((s, e), k) in enumerate(zip(offsets, turns)):
        inside = [j for j, (cs, ce) in enumerate(spans) if s < ce and e > cs]
        if inside: assert k == inside[0], (t, tok.decode([ids[t]]))
        elif k >= 0:  # only the end-of-turn token right after an agent message may be marked outside its content
            assert ids[t] == end_id and text[spans[k][1]:s].strip() == '', (t, tok.decode([ids[t]]))
        else: assert k == -1
    for k, (cs, ce) in enumerate(spans):
        assert tok.decode([i for i, j in zip(ids, turns) if j == k]) == text[cs:ce] + '<|im_end|>'
    outside = tok.decode([i for i, j in zip(ids, turns) if j < 0])
    assert 'Yes, exactly unchanged.' in outside and 'Write f(x).' in outside and 'system' in outside
    assert 'Should f return' not in outside
    assert ('def f(x): return x' in outside) == use_hidden_info  # the reference sits in the prompt, never scored


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


def test_pairs_accept_trajectory_objects_and_validate_config():
    from sweet_rl.base.data import Trajectory
    objs = [Trajectory.from_dict(_traj('F', 1.0, tag='x')), Trajectory.from_dict(_traj('F', 0.0, tag='y'))]
    pairs = make_pairs(objs)
    assert len(pairs) == 1 and pairs[0]['chosen']['reward'] == 1.0 and pairs[0]['rejected']['reward'] == 0.0
    with pytest.raises(ValueError, match='max_pairs_per_task'): PairConfig(max_pairs_per_task=0)
    with pytest.raises(ValueError, match='min_reward_gap'): PairConfig(min_reward_gap=-0.1)
    with pytest.raises(TypeError, match='expected a trajectory record'): make_pairs(['not a record'])
    assert PairConfig.from_dict({'max_pairs_per_task': 2}).max_pairs_per_task == 2


# ---------------------------------------------------------------- scoring API, training, learning check
from sweet_rl.methods.critic import Critic, CriticConfig, candidate_inputs, synthetic_trajectories, train_critic
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


def test_candidate_inputs_refuse_bad_input(tok):
    task = {'problem_description': 'p', 'ground_truth': 'def f(): pass'}
    with pytest.raises(ValueError, match='non-empty list'): candidate_inputs(tok, task, [], 'just a string')
    with pytest.raises(ValueError, match='candidate 1'): candidate_inputs(tok, task, [], ['ok', 3])
    with pytest.raises(ValueError, match='ends with an agent message'):
        candidate_inputs(tok, task, [{'role': 'assistant', 'content': 'hi'}], ['ok'])


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
