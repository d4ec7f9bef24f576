"Tests of sweet_rl.methods.actor: the top/bottom-half pair rule, masks token by token, and training that moves the policy the intended way."
import random

import pytest
import torch

from sweet_rl.methods.actor import (Actor, ActorCollator, ActorConfig, CandidateConfig, offline_turns, pair_margins, rank_pairs,
                            rft_examples, sample_candidates, score_turns, sweet_pairs, train_actor, turn_pair_ids)
from sweet_rl.base.data import sample_tasks
from sweet_rl.base.models import Completion, GenerationBackend, load_tokenizer, score_conversations
from sweet_rl.base.rollout import env_factory


# ---------------------------------------------------------------------------------------------- the pair rule
def test_rank_pairs_hand_made():
    scores = [0.9, 0.1, 0.5, 0.7, 0.3, 0.2]  # top half 0, 3, 2 (0.9, 0.7, 0.5); bottom half 4, 5, 1 (0.3, 0.2, 0.1)
    pairs = rank_pairs(scores, 4, random.Random(0))
    assert len(pairs) == len(set(pairs)) == 4
    assert all(c in {0, 3, 2} and r in {4, 5, 1} for c, r in pairs)
    assert sorted(rank_pairs(scores, 99, random.Random(1))) == sorted((c, r) for c in (0, 3, 2) for r in (4, 5, 1))


@pytest.mark.parametrize('seed', range(25))
def test_rank_pairs_rule_on_random_scores(seed):
    rng = random.Random(seed)
    n = rng.randint(2, 17)
    scores = [rng.choice([0.0, 0.5, 1.0, rng.random()]) for _ in range(n)]  # ties are common
    order = sorted(range(n), key=lambda i: (-scores[i], i))
    top, bottom = set(order[:n // 2]), set(order[n - n // 2:])
    k = rng.randint(1, 6)
    pairs = rank_pairs(scores, k, random.Random(seed))
    possible = [(c, r) for c in top for r in bottom if scores[c] > scores[r]]
    assert len(pairs) == min(k, len(possible)) and len(set(pairs)) == len(pairs)
    assert all(c in top and r in bottom and scores[c] > scores[r] for c, r in pairs)


def test_sweet_pairs_are_deterministic_per_state_and_skip_identical_texts():
    recs = [{'id': 'a', 'turn_id': 't', 'prompt': [{'role': 'user', 'content': 'hi'}], 'candidates': ['x', 'y', 'x', 'z']}]
    rows = sweet_pairs(recs, [[0.9, 0.8, 0.1, 0.0]], pairs_per_turn=4, seed=3)
    assert {(r['chosen'][0]['content'], r['rejected'][0]['content']) for r in rows} == {('x', 'z'), ('y', 'x'), ('y', 'z')}
    assert rows == sweet_pairs(recs, [[0.9, 0.8, 0.1, 0.0]], pairs_per_turn=4, seed=3)


# ---------------------------------------------------------------------------------------------- masks, token by token
@pytest.fixture(scope='module')
def tok(): return load_tokenizer('smollm2-135m')

PROMPT = [{'role': 'system', 'content': 'You are a careful assistant.'}, {'role': 'user', 'content': 'Write f for me.'},
          {'role': 'assistant', 'content': 'What should f return?'}, {'role': 'user', 'content': 'The sum of its inputs.'}]


def test_turn_pair_completions_are_exactly_the_agent_message(tok):
    row = {'prompt': PROMPT, 'chosen': 'Should negative numbers count?', 'rejected': 'I WANT TO ANSWER:\ndef f(*x): return sum(x)'}
    ids = turn_pair_ids(tok, row)
    for key in ('chosen', 'rejected'):
        assert tok.convert_ids_to_tokens(ids[f'{key}_ids'])[-1] == '<|im_end|>'
        assert tok.decode(ids[f'{key}_ids']) == row[key] + '<|im_end|>'
    full = tok.apply_chat_template(PROMPT + [{'role': 'assistant', 'content': row['chosen']}], tokenize=False)
    assert tok.decode(ids['prompt_ids'] + ids['chosen_ids']) + '\n' == full  # everything else is the prompt, untrained


def test_baseline_masks_cover_only_agent_turns(tok):
    conv = PROMPT + [{'role': 'assistant', 'content': 'I WANT TO ANSWER:\ndef f(*x): return sum(x)'}]
    b = ActorCollator(tok)([{'conversation': conv}])
    ids, turn = b['input_ids'][0], b['turn_index'][0]
    agent = [m['content'] for m in conv if m['role'] == 'assistant']
    assert [tok.decode(ids[turn == k]) for k in range(len(agent))] == [a + '<|im_end|>' for a in agent]
    marked = sum(len(tok(a + '<|im_end|>', add_special_tokens=False)['input_ids']) for a in agent)
    assert int((turn >= 0).sum()) == marked  # nothing else: no system, user or template token
    pair = ActorCollator(tok)([{'chosen': conv, 'rejected': conv[:3]}])
    assert int((pair['rejected_turn_index'][0] >= 0).sum()) == len(tok(agent[0] + '<|im_end|>', add_special_tokens=False)['input_ids'])


# ---------------------------------------------------------------------------------------------- candidates
class CountingBackend(GenerationBackend):
    "Returns numbered texts and records each call's seed."
    def __init__(self): self.seeds = []
    def complete(self, conversations, params=None):
        self.seeds.append(params.seed)
        return [Completion(f'candidate {params.seed % 97} #{i}', 3, 'stop') for i in range(len(conversations))]


def _offline(task, answer_ok=True, reply='Return zero.'):
    ans = 'I WANT TO ANSWER:\n' + (task['ground_truth'] if answer_ok else 'def f(): pass')
    return {'task': task, 'dialogue_history': [{'role': 'assistant', 'content': 'What about empty inputs?'},
                                               {'role': 'user', 'content': reply}, {'role': 'assistant', 'content': ans}],
            'answer': ans, 'reward': 1.0 if answer_ok else 0.0, 'success': answer_ok}


def test_candidates_resume_without_resampling_and_seed_per_state(tmp_path):
    task = sample_tasks('backend')[0].to_dict()
    turns = offline_turns([_offline(task), _offline(task, False, 'Raise an error.')], env_factory('backend', max_turns=3))
    assert len(turns) == 3  # the shared first state once, then each rollout's second state
    cfg = CandidateConfig(n_candidates=3, max_new_tokens=8)
    be = CountingBackend()
    first = sample_candidates(be, turns[:2], cfg, tmp_path / 'c.jsonl', progress=False)
    assert len(be.seeds) == 2 and len(set(be.seeds)) == 2
    again = CountingBackend()
    allr = sample_candidates(again, turns, cfg, tmp_path / 'c.jsonl', progress=False)
    assert allr[:2] == first and len(again.seeds) == 1  # only the new state was sampled
    fresh = CountingBackend()
    assert sample_candidates(fresh, turns, cfg, progress=False) == allr  # same seeds without the file: same samples
    other = sample_candidates(CountingBackend(), turns, cfg, progress=False, tag='another policy')
    assert [r['id'] for r in other] != [r['id'] for r in allr]
    scores = score_turns(type('S', (), {'score': lambda self, t, h, c: [len(x) for x in c]})(), allr, tmp_path / 's.jsonl', progress=False)
    assert [len(s) for s in scores] == [3, 3, 3]


# ---------------------------------------------------------------------------------------------- training moves the policy
P1 = [{'role': 'user', 'content': 'Greet me.'}]
P2 = [{'role': 'user', 'content': 'Ask me a question.'}]
TURN_ROWS = [{'prompt': P1, 'chosen': 'Hello! How can I help?', 'rejected': 'No.'},
             {'prompt': P2, 'chosen': 'What are you working on?', 'rejected': 'Fine.'}]
TRAJ_PAIRS = [{'chosen': P1 + [{'role': 'assistant', 'content': 'Hello! How can I help?'}, {'role': 'user', 'content': 'Thanks.'},
                               {'role': 'assistant', 'content': 'Anytime.'}],
               'rejected': P1 + [{'role': 'assistant', 'content': 'No.'}, {'role': 'user', 'content': 'Thanks.'},
                                 {'role': 'assistant', 'content': 'Go away.'}]}]


@pytest.mark.parametrize('method,rows', [('sweet', TURN_ROWS), ('mtdpo', TRAJ_PAIRS)])
def test_dpo_methods_grow_the_margin(tmp_path, method, rows):
    cfg = ActorConfig(method=method, dtype='float32', lr=5e-3, batch_size=len(rows))
    actor = Actor.build(cfg)
    before = pair_margins(actor.model, actor.tokenizer, rows)
    trained = train_actor(cfg, rows, tmp_path, max_steps=4, progress=False, actor=actor)
    after = pair_margins(trained.model, trained.tokenizer, rows)
    assert torch.all(after > before + 0.5), (method, before, after)
    with trained.initial_policy() as base:  # the reference is untouched: adapter disabled = the model before training
        torch.testing.assert_close(pair_margins(base.model, trained.tokenizer, rows), before)


def test_rft_grows_the_likelihood_of_successful_trajectories(tmp_path):
    task = min(sample_tasks('backend'), key=lambda t: len(t.problem_description)).to_dict()
    examples = rft_examples([_offline(task), _offline(task, False)], env_factory('backend', max_turns=3))
    assert len(examples) == 1  # only the success
    cfg = ActorConfig(method='rft', dtype='float32', lr=5e-3, batch_size=1)
    actor = Actor.build(cfg)
    ll = lambda m: sum(s.logprobs[s.mask].sum() for s in score_conversations(m, actor.tokenizer, [e['conversation'] for e in examples]))
    before = ll(actor.model)
    trained = train_actor(cfg, examples, tmp_path, max_steps=4, progress=False, actor=actor)
    assert ll(trained.model) > before + 1.0


def test_finished_run_is_reused_and_another_config_refused(tmp_path, tiny_lm):
    cfg = ActorConfig(model=tiny_lm, method='sweet', dtype='float32', lr=5e-3, batch_size=2)
    first = train_actor(cfg, TURN_ROWS, tmp_path, max_steps=2, progress=False)
    again = train_actor(cfg, TURN_ROWS, tmp_path, max_steps=2, progress=False)  # nothing to do: loaded from actor/
    for k, v in first.trainable_state().items(): torch.testing.assert_close(again.trainable_state()[k], v)
    with pytest.raises(ValueError, match='another config'):
        train_actor(ActorConfig(model=tiny_lm, method='sweet', dtype='float32', lr=1e-3, batch_size=2), TURN_ROWS, tmp_path, progress=False)
    with pytest.raises(ValueError, match='no training examples'): train_actor(cfg, [], tmp_path / 'empty', progress=False)


def test_next_round_keeps_the_policy_and_starts_a_fresh_adapter(tmp_path):
    cfg = ActorConfig(method='sweet', dtype='float32', lr=5e-3, batch_size=2)
    trained = train_actor(cfg, TURN_ROWS, tmp_path, max_steps=3, progress=False)
    margins = pair_margins(trained.model, trained.tokenizer, TURN_ROWS)
    trained.next_round()
    torch.testing.assert_close(pair_margins(trained.model, trained.tokenizer, TURN_ROWS), margins, atol=1e-4, rtol=1e-4)
    with trained.initial_policy() as base:  # the new round's reference is the trained policy
        torch.testing.assert_close(pair_margins(base.model, trained.tokenizer, TURN_ROWS), margins, atol=1e-4, rtol=1e-4)
    assert all(float(v.abs().sum()) == 0 for k, v in trained.trainable_state().items() if 'lora_B' in k)


def test_interrupted_training_resumes_from_its_checkpoint(tmp_path, tag_checkpoint):
    "A run stopped after step 1 (its checkpoint kept, no final actor) continues at step 2 instead of starting over."
    import json, shutil
    cfg = ActorConfig(method='mtdpo', dtype='float32', lr=5e-3, batch_size=1, save_steps=1)
    first = train_actor(cfg, TRAJ_PAIRS * 2, tmp_path, max_steps=1, progress=False)
    sentinel = tag_checkpoint(tmp_path / 'checkpoints' / 'checkpoint-1')
    shutil.rmtree(tmp_path / 'actor')  # as if the process had died after the checkpoint
    resumed = train_actor(cfg, TRAJ_PAIRS * 2, tmp_path, max_steps=2, progress=False)
    log = [r for r in map(json.loads, (tmp_path / 'train_log.jsonl').read_text().splitlines()) if 'loss' in r]
    assert [r['step'] for r in log] == [1, 2]
    # step 1 comes from the checkpoint (a fresh start would have logged a real loss there); only step 2 trained now
    assert log[0]['loss'] == sentinel and log[1]['loss'] != sentinel
    assert any(not torch.equal(v, first.trainable_state()[k]) for k, v in resumed.trainable_state().items())
