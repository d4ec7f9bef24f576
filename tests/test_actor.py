"""Tests of sweet_rl.methods.actor that train a model: the policy moves the intended way, runs are reused, resumed and chained
(the pair rule, masks and candidate files are checked in nbs/23_actor.ipynb)."""
import pytest
import torch

from sweet_rl.methods.actor import Actor, ActorConfig, pair_margins, rft_examples, train_actor
from sweet_rl.base.data import sample_tasks
from sweet_rl.base.models import score_conversations
from sweet_rl.base.rollout import env_factory


def _offline(task, answer_ok=True, reply='Return zero.'):
    ans = 'I WANT TO ANSWER:\n' + (task['ground_truth'] if answer_ok else 'def f(): pass')
    return {'task': task, 'dialogue_history': [{'role': 'assistant', 'content': 'What about empty inputs?'},
                                               {'role': 'user', 'content': reply}, {'role': 'assistant', 'content': ans}],
            'answer': ans, 'reward': 1.0 if answer_ok else 0.0, 'success': answer_ok}


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
