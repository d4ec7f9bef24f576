"Prefix caching in TransformersBackend: same replies as `model.generate` on whole prompts, reuse, budget."
import pytest
import torch

from sweet_rl.base import models as M
from sweet_rl.base.models import (BackendConfig, PrefixCache, SamplingParams, TransformersBackend, kv_bytes_per_token, load_model,
                             make_backend)

GREEDY = SamplingParams(max_new_tokens=20, temperature=0)
CONVS = [[{'role': 'user', 'content': 'What is 2+2? Explain at length.'}],
         [{'role': 'system', 'content': 'You are a careful Python programmer.'}, {'role': 'user', 'content': 'Write is_even(n).'}],
         [{'role': 'user', 'content': 'Hi'}],
         [{'role': 'user', 'content': 'Name three colours and say which one you like best, and why.'}],
         [{'role': 'user', 'content': 'Count from 1 to 20 with commas.'}]]


@pytest.fixture(scope='module')
def lm():
    return load_model(M.DEFAULT_MODEL, dtype='float32', device='cpu')


@pytest.fixture(scope='module')
def reference(lm):
    return TransformersBackend(*lm, batch_size=3, prefix_cache=False)


def test_batch_of_different_lengths_matches_generate(lm, reference):
    cached = TransformersBackend(*lm, batch_size=3)
    assert cached.complete(CONVS, GREEDY) == reference.complete(CONVS, GREEDY)
    s = cached.cache_stats
    assert s['prompt_tokens'] == s['reused_tokens'] + s['shared_tokens'] + s['prefilled_tokens'] > 0
    assert len(cached.prefix_store) > 0


def test_second_turn_reuses_the_first_and_matches_generate(lm, reference):
    cached = TransformersBackend(*lm, batch_size=3)
    first = cached.complete(CONVS, GREEDY)
    turn2 = [c + [{'role': 'assistant', 'content': o.text}, {'role': 'user', 'content': 'Why? Tell me more.'}]
             for c, o in zip(CONVS, first)]
    before = dict(cached.cache_stats)
    assert cached.complete(turn2, GREEDY) == reference.complete(turn2, GREEDY)
    delta = {k: cached.cache_stats[k] - before[k] for k in before}
    assert delta['reused_tokens'] > 2 * delta['prefilled_tokens'] > 0, delta


def test_identical_prompts_share_one_prefill(lm, reference):
    cached, same = TransformersBackend(*lm, batch_size=8), [CONVS[1]] * 6
    assert cached.complete(same, GREEDY) == reference.complete(same, GREEDY)
    n = len(M.generation_prompt_ids(lm[1], CONVS[1]))
    assert cached.cache_stats == {'prompt_tokens': 6 * n, 'reused_tokens': 0, 'shared_tokens': 5 * n, 'prefilled_tokens': n}
    hot = SamplingParams(max_new_tokens=12, temperature=1.0, seed=1)
    assert len(set(cached.generate(same, hot))) > 1  # the copies still sample independently


@pytest.mark.parametrize('params', [SamplingParams(max_new_tokens=40, temperature=0, stop=['7']),
                                    SamplingParams(max_new_tokens=40, temperature=0, stop=['\n\n', '5\n']),
                                    SamplingParams(max_new_tokens=3, temperature=0)])
def test_stops_lengths_and_finish_reasons_as_before(lm, reference, params):
    cached = TransformersBackend(*lm, batch_size=3)
    got, want = cached.complete(CONVS, params), reference.complete(CONVS, params)
    assert got == want
    assert all(o.num_tokens <= params.max_new_tokens for o in got)
    if not params.stop: assert {o.finish_reason for o in got} == {'length'}
    else: assert not any(s in o.text for o in got for s in params.stop) and got[-1].finish_reason == 'stop'


def test_store_respects_its_memory_budget(lm, reference):
    per_token = kv_bytes_per_token(lm[0])
    assert per_token == 2 * 30 * 3 * 64 * 4  # SmolLM2-135M in float32: 30 layers, 3 key/value heads of 64 numbers
    cached = TransformersBackend(*lm, batch_size=2, cache_bytes=120 * per_token)
    for conv in CONVS:
        cached.complete([conv], GREEDY)
        assert 0 < cached.prefix_store.tokens <= 120
        assert cached.prefix_store.nbytes == cached.prefix_store.tokens * per_token  # what the entries really hold
    assert len(cached.prefix_store) < len(CONVS)  # some entries were evicted
    assert cached.complete(CONVS, GREEDY) == reference.complete(CONVS, GREEDY)


def test_least_recently_used_entry_is_evicted_and_extended_entries_dropped():
    kv = lambda n: [(torch.zeros(1, 1, n, 2), torch.zeros(1, 1, n, 2))]  # 16 bytes a token
    store = PrefixCache(max_bytes=8 * 16)
    store.add([1, 2], kv(2)); store.add([1, 2, 3], kv(3))
    assert [e.ids.tolist() for e in store.entries] == [[1, 2, 3]]
    store.add([4, 4], kv(2)); store.add([5, 5], kv(2))
    assert store.match([1, 2, 9])[1] == 2  # touches [1, 2, 3]: [4, 4] is now the least recently used
    store.add([6, 6], kv(2))
    assert sorted(e.ids.tolist() for e in store.entries) == [[1, 2, 3], [5, 5], [6, 6]]


def test_seeded_sampling_is_reproducible_across_fresh_backends(lm):
    hot = SamplingParams(max_new_tokens=12, temperature=0.9, top_p=0.95, seed=11)
    state = torch.get_rng_state()
    first, second = (TransformersBackend(*lm, batch_size=2).generate(CONVS, hot) for _ in range(2))
    assert first == second
    assert torch.equal(state, torch.get_rng_state())  # the caller's RNG is untouched


def test_changed_weights_empty_the_store(lm):
    model, tok = load_model(M.DEFAULT_MODEL, dtype='float32', device='cpu')  # a copy of its own: its weights get touched
    cached = TransformersBackend(model, tok)
    cached.complete(CONVS[:1], GREEDY)
    with torch.no_grad(): next(model.parameters()).mul_(1.0)  # an in-place update, as an optimizer step makes
    before = cached.cache_stats['reused_tokens']
    cached.complete(CONVS[:1], GREEDY)
    assert cached.cache_stats['reused_tokens'] == before


def test_backend_config_switches_prefix_caching():
    assert make_backend(BackendConfig(dtype='float32', prefix_cache=False)).prefix_store is None
    assert make_backend({'dtype': 'float32', 'cache_bytes': 1000}).prefix_store.max_bytes == 1000
