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
from sweet_rl.methods.critic import Critic, CriticConfig, pair_outcomes, synthetic_trajectories, train_critic
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


def first_action_wins(scorer, pairs) -> float:
    """Share of pairs whose successful first action the scorer ranks above the failed one, as `pair_outcomes` counts
    (ties one half). The right action comes first in every other pair, so a constant scorer and one that favours a slot
    both get exactly 0.5."""
    outcomes = []
    for i, p in enumerate(pairs):
        right, wrong = p['chosen']['dialogue_history'][0]['content'], p['rejected']['dialogue_history'][0]['content']
        cands = [right, wrong] if i % 2 == 0 else [wrong, right]
        s = [float(x) for x in scorer.score(p['chosen']['task'], [], cands)]
        at = cands.index(right)
        outcomes += pair_outcomes([s[at]], [s[1 - at]])
    return sum(outcomes) / len(outcomes)


class _Fixed:
    "A scorer that ignores what it reads: the same score for every candidate, or a higher one for the first slot."
    def __init__(self, first_slot:bool): self.first_slot = first_slot
    def score(self, task, history, candidates): return torch.tensor([float(self.first_slot)] + [0.0] * (len(candidates) - 1))


def test_learning_check_fails_without_learning():
    "The learning check's count gives chance to a constant scorer and to one that favours a slot; 1 to a scorer that knows."
    pairs = make_pairs(synthetic_trajectories(8, seed=1))
    assert first_action_wins(_Fixed(False), pairs) == 0.5 and first_action_wins(_Fixed(True), pairs) == 0.5
    right = {p['chosen']['dialogue_history'][0]['content'] for p in pairs}
    class Knows:
        def score(self, task, history, candidates): return torch.tensor([float(c in right) for c in candidates])
    assert first_action_wins(Knows(), pairs) == 1.0


def test_learning_check_on_synthetic_trajectories(tmp_path):
    """Success depends only on the first agent turn. After one pass over 8 tasks (2 steps), the critic prefers the successful
    trajectory of 8 unseen tasks and gives the decisive turn the higher advantage; untrained, it is at chance. Every
    check below fails for a critic whose scores are constant (tests/test_critic.py::test_learning_check_fails_without_learning)."""
    train, held = synthetic_trajectories(8, seed=0), synthetic_trajectories(8, seed=1)
    assert not {t['task']['problem_description'] for t in train} & {t['task']['problem_description'] for t in held}
    held_pairs = make_pairs(held)
    cfg = CriticConfig(dtype='float32', lora_r=8, lr=2e-3, epochs=1, batch_size=4, grad_accum=1, save_steps=100)
    fresh = Critic.build(cfg)  # its adapter starts at zero: every pair ties
    untrained = fresh.pair_accuracy(held_pairs[:1])
    assert untrained['pair_accuracy'] == 0.5 and untrained['ties'] == 1.0
    untrained_wins = first_action_wins(CriticScorer(fresh), held_pairs[:1])
    assert untrained_wins == 0.5
    critic = train_critic(cfg, train, tmp_path, progress=False, critic=fresh)
    chosen = critic.turn_scores([p['chosen'] for p in held_pairs])
    rejected = critic.turn_scores([p['rejected'] for p in held_pairs])
    acc = sum(pair_outcomes([c.sum() for c in chosen], [r.sum() for r in rejected])) / len(held_pairs)  # as `pair_accuracy` counts
    assert acc >= 0.85 and acc >= untrained['pair_accuracy'] + 0.3, acc
    # the decisive turn (turn 0): its advantage is strictly higher in the successful trajectory (a tie counts against)
    decisive = sum(float(c[0]) > float(r[0]) for c, r in zip(chosen, rejected)) / len(held_pairs)
    assert decisive >= 0.85, decisive
    # and through the scoring API: the clarifying question beats the small talk as a first action, in either slot
    wins = first_action_wins(CriticScorer(critic), held_pairs)
    assert wins >= 0.75 and wins >= untrained_wins + 0.25, wins


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


# ---------------------------------------------------------------- shared prefix in training, scoring precision, info_field
def _tiny_critic(tiny_lm, **config):
    "A LoRA critic on the tiny model whose adapter is not the identity (so π_θ ≠ π_ref)."
    c = Critic.build(CriticConfig(model=tiny_lm, lora_r=4, lora_targets=['q_proj', 'v_proj'], **{'dtype': 'float32', **config}), 'cpu')
    g = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for n, p in c.model.named_parameters():
            if 'lora_B' in n: p.copy_((torch.randn(p.shape, generator=g) * 0.5).to(p))
    return c


def _prefix_pairs() -> list[dict]:
    "Pairs that part at the first agent turn, after a shared agent turn (its tokens are in the prefix), and never (same dialogue)."
    task = {'problem_description': 'Write f(x).', 'ground_truth': 'def f(x): return x', 'hidden_information': ''}
    say = lambda *turns: [{'role': r, 'content': c} for r, c in zip(('assistant', 'user') * 3, turns)]
    rec = lambda reward, *turns: {'task': task, 'dialogue_history': say(*turns), 'answer': '', 'reward': reward}
    return [{'chosen': rec(1.0, 'Should f return x unchanged, or a copy of it?', 'Unchanged.', 'I WANT TO ANSWER:\ndef f(x): return x'),
             'rejected': rec(0.0, 'I WANT TO ANSWER:\ndef f(x): return 0')},
            {'chosen': rec(1.0, 'What is x?', 'A number.', 'I WANT TO ANSWER:\ndef f(x): return x'),
             'rejected': rec(0.0, 'What is x?', 'A number.', 'I WANT TO ANSWER:\ndef f(x):\n    return -x  # negated, with a longer tail')},
            {'chosen': rec(1.0, 'I WANT TO ANSWER:\ndef f(x): return x'), 'rejected': rec(0.5, 'I WANT TO ANSWER:\ndef f(x): return x')}]


@pytest.mark.parametrize('norm', ['paper', 'release'])  # `release` divides by all agent tokens, those in the shared prefix too
def test_shared_prefix_gives_the_same_loss_and_gradients(tiny_lm, norm):
    "Each pair packed with its prefix once (pairs batched with padding, or one at a time; sdpa or eager attention) = the two full sequences."
    from types import SimpleNamespace
    from sweet_rl.base.models import token_logprobs
    from sweet_rl.methods.critic import _pair_batch, pair_loss, pair_prefix_lengths, shared_prefix_logprobs
    c = _tiny_critic(tiny_lm)
    model, tok = c.model.train(), c.tokenizer
    batch = c.collator()(_prefix_pairs())
    ids, mask, turn, B = _pair_batch(batch, tok.pad_token_id)
    P, L = pair_prefix_lengths(ids, mask), mask.sum(-1)
    S = L - P.repeat(2)  # each row's own tokens: unequal within a pair, and one each where the two rows are the same tokens
    assert len(set(P.tolist())) == 3 and S[0] != S[B] and S[1] != S[B + 1] and (S[2], S[B + 2]) == (1, 1)
    assert bool((turn[1, :int(P[1])] >= 0).any())  # pair 1's shared first question is in its prefix
    trainable = [p for p in model.parameters() if p.requires_grad]
    def run(logprobs):
        model.zero_grad()
        pol = logprobs(model)
        with torch.no_grad(), model.disable_adapter(): ref = logprobs(model)
        out = critic_loss(pol[:B], ref[:B], turn[:B], pol[B:], ref[B:], turn[B:], normalization=norm)
        out.loss.backward()
        return out.loss.detach(), torch.cat([p.grad.flatten() for p in trainable])
    for attention in ('sdpa', 'eager') if norm == 'paper' else ('sdpa',):  # the mask is boolean for one, added to the scores by the other
        model.set_attn_implementation(attention)
        assert model.get_base_model().config._attn_implementation == attention
        loss, grad = run(lambda m: token_logprobs(m, ids, mask))
        assert grad.abs().max() > 1e-3
        for unpad in (False, True):  # pairs batched (padded) or one at a time
            l, g = run(lambda m: shared_prefix_logprobs(m, ids, mask, turn >= 0, unpad=unpad))
            torch.testing.assert_close(l, loss, atol=1e-5, rtol=0)
            torch.testing.assert_close(g, grad, atol=1e-4 * float(grad.abs().max()), rtol=0)
    model.set_attn_implementation('sdpa')
    # the trainer's loss: the same through either path
    stub = SimpleNamespace(processing_class=tok, ref_model=None, note=lambda **stats: None)
    model.zero_grad(); full = pair_loss(stub, model, batch, 0.1, 0.01, norm, share_prefix=False)
    model.zero_grad(); shared = pair_loss(stub, model, batch, 0.1, 0.01, norm, share_prefix=True)
    torch.testing.assert_close(shared.loss, full.loss, atol=1e-5, rtol=0)


def test_training_shares_the_prefix(tiny_lm, tmp_path, monkeypatch):
    "train_critic runs each pair's prefix once by default (`CriticConfig.share_prefix`), and full sequences when told."
    import sweet_rl.methods.critic as critic_module
    calls, real = [], critic_module.shared_prefix_logprobs
    monkeypatch.setattr(critic_module, 'shared_prefix_logprobs', lambda *a, **k: calls.append(1) or real(*a, **k))
    syn = synthetic_trajectories(2, seed=3)
    for share in (True, False):
        calls.clear()
        cfg = CriticConfig(model=tiny_lm, dtype='float32', lora_r=4, lora_targets=['q_proj', 'v_proj'], batch_size=2, grad_accum=1,
                           share_prefix=share)
        train_critic(cfg, syn, tmp_path / str(share), progress=False, max_steps=1)
        assert bool(calls) == share


def test_scorers_compute_in_float32_on_cpu(tiny_lm):
    "On a CPU a bfloat16 critic or model scores in float32 (its weights cast up for the call, then put back); batch size changes nothing."
    import copy
    from sweet_rl.methods.scorers import PrivilegedScorer, scoring_dtype
    assert scoring_dtype('auto', 'cpu') == torch.float32
    c = _tiny_critic(tiny_lm, dtype='bfloat16')
    task = {'problem_description': 'Write area(w, h).', 'ground_truth': 'def area(w, h):\n    return w * h\n'}
    history = [{'role': 'assistant', 'content': 'Can w be negative?'}, {'role': 'user', 'content': 'No.'}]
    cands = ['Should the result be an int?', 'I WANT TO ANSWER:\ndef area(w, h): return w * h', 'ok', 'A longer question about the sides?']
    weights = {n: (p.data_ptr(), p.dtype) for n, p in c.model.named_parameters()}
    upcast = copy.deepcopy(c.model).float()
    got = CriticScorer(c).score(task, history, cands)
    assert all((p.data_ptr(), p.dtype) == weights[n] for n, p in c.model.named_parameters())  # the critic's own tensors, bfloat16, are back
    assert c.model.get_base_model().model.embed_tokens.weight.dtype == torch.bfloat16
    want = score_candidates(upcast, c.tokenizer, task, history, cands)
    torch.testing.assert_close(got, want, atol=1e-5, rtol=0)
    torch.testing.assert_close(CriticScorer(c, batch_size=1).score(task, history, cands), got, atol=1e-5, rtol=0)
    for unpad in (False, True):  # padded batches of any size: the same scores in float32
        torch.testing.assert_close(score_candidates(upcast, c.tokenizer, task, history, cands, batch_size=3, unpad=unpad), want, atol=1e-5, rtol=0)
    # the privileged scorer: loaded in float32 by default on a CPU; batch size changes nothing
    pmi = PrivilegedScorer(tiny_lm, batch_size=8, device='cpu')
    assert pmi.model.dtype == torch.float32
    one = PrivilegedScorer(pmi.model, pmi.tokenizer, batch_size=1).score(task, history, cands)
    torch.testing.assert_close(pmi.score(task, history, cands), one, atol=1e-5, rtol=0)
    half = PrivilegedScorer(copy.deepcopy(pmi.model).to(torch.bfloat16), pmi.tokenizer)  # a bfloat16 model, scored in float32
    torch.testing.assert_close(half.score(task, history, cands), PrivilegedScorer(pmi.model.to(torch.bfloat16).float(), pmi.tokenizer).score(task, history, cands), atol=1e-5, rtol=0)


def test_info_field_replaces_the_reference(tiny_lm):
    "With info_field the critic reads that task field instead of the reference, in training and in scoring; a missing field is named."
    from sweet_rl.base.data import Task
    from sweet_rl.methods.scorers import PrivilegedScorer
    slots = '- Should f accept None? yes (not the usual choice)\n- Round the result? no'
    task = Task.from_dict({'problem_description': 'Write f(x).', 'hidden_information': 'def f(x): return x', 'hidden_slots': slots}).to_dict()
    rec = lambda t, r: {'task': t, 'dialogue_history': [{'role': 'assistant', 'content': 'Accept None?'}], 'answer': '', 'reward': r}
    first = critic_messages(rec(task, 1.0), info_field='hidden_slots')[0]['content']
    assert slots in first and 'def f(x)' not in first
    bare = {k: v for k, v in task.items() if k != 'hidden_slots'}
    with pytest.raises(ValueError, match="no field 'hidden_slots'"): critic_messages(rec(bare, 1.0), info_field='hidden_slots')
    c = _tiny_critic(tiny_lm, info_field='hidden_slots')
    text = c.tokenizer.decode(c.collator()([{'chosen': rec(task, 1.0), 'rejected': rec(task, 0.0)}])['chosen_input_ids'][0])
    assert slots in text and 'def f(x)' not in text
    assert slots in c.tokenizer.decode(c.encode([rec(task, 1.0)]).input_ids[0])
    for scorer in (CriticScorer(c), PrivilegedScorer(c.model.get_base_model(), c.tokenizer, info_field='hidden_slots')):
        assert scorer.score(task, [], ['Accept None?', 'ok']).shape == (2,)
        with pytest.raises(ValueError, match="no field 'hidden_slots'"): scorer.score(bare, [], ['Accept None?'])


# ---------------------------------------------------------------- what a scorer takes (issue 69)
def test_scorers_take_task_objects_and_refuse_what_is_not_env_history(tiny_lm):
    "Every scorer takes a task object (`Task`, an environment's `env.task`) as its record, and refuses, saying so, a history that is not `env.history`."
    from sweet_rl.base.data import Task, sample_tasks
    from sweet_rl.base.protocol import make_env
    from sweet_rl.methods.scorers import PrivilegedScorer, RandomScorer
    class FirstSlot:  # a judge that always picks the first slot
        def generate(self, convs, params=None): return ['AGENT 1 WINS'] * len(convs)
    c = _tiny_critic(tiny_lm)
    scorers = [CriticScorer(c), RandomScorer(0), PrivilegedScorer(c.model.get_base_model(), c.tokenizer), JudgeScorer(FirstSlot(), seed=1)]
    env = make_env('backend')
    observation = env.reset(sample_tasks('backend')[0])  # the agent's view: its prompt in the request's place
    env.act('Can the signal be empty?'); observation = env.hear('Yes, return an empty list then.')
    cands = ['Should the result be rounded?', 'I WANT TO ANSWER:\ndef f(x): return x']
    person = Task.from_dict({'problem_description': 'Write area(w, h).', 'hidden_information': 'def area(w, h):\n    return w * h\n'})
    wrong_histories = {'a string': observation[-1]['content'], "the agent's observation": observation,
                       "role 'system'": [{'role': 'system', 'content': 'Be brief.'}], 'not role and content': [{'text': 'Yes.'}]}
    for s in scorers:
        for task in (env.task, person):  # a BackendTask and a Task: scored as their records are
            assert [float(x) for x in s.score(task, env.history, cands)] == [float(x) for x in s.score(task.to_dict(), env.history, cands)]
        for says, wrong in wrong_histories.items():
            with pytest.raises(ValueError, match=f"{type(s).__name__}.score: history is .*{says}.*; it must be `env.history`"): s.score(env.task, wrong, cands)
