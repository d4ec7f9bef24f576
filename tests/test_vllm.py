"vLLM paths (GPU only): the critic scorer from prompt log-probs matches the transformers scorer; seeded candidate sampling."
import importlib.util

import pytest
import torch

pytestmark = pytest.mark.skipif(not torch.cuda.is_available() or importlib.util.find_spec('vllm') is None,
                                reason='needs a CUDA GPU and vLLM (pip install sweet_rl[gpu])')

# bf16 engines: log-probs differ in the third decimal between vLLM's kernels and transformers' forward pass
TOLERANCE = 2e-2


def test_vllm_scorer_matches_transformers(tmp_path):
    from sweet_rl.methods.critic import Critic, CriticConfig, synthetic_trajectories, train_critic
    from sweet_rl.methods.scorers import CriticScorer, VLLMScorer
    trajs = synthetic_trajectories(4)
    critic = train_critic(CriticConfig(lr=1e-3, batch_size=2, grad_accum=1, epochs=1), trajs, tmp_path, max_steps=3, progress=False)
    t = trajs[0]
    cands = ['What type are the items?', 'Did you have a nice weekend?', 'I WANT TO ANSWER:\ndef f(items):\n    return items']
    expected = CriticScorer(critic).score(t['task'], [], cands)
    got = VLLMScorer(tmp_path / 'critic', gpu_memory_utilization=0.3).score(t['task'], [], cands)
    torch.testing.assert_close(got, expected, atol=TOLERANCE, rtol=0)


def test_vllm_sampling_is_seeded():
    from sweet_rl.base.models import SamplingParams, VLLMBackend
    # no prefix cache: a second call that hit it would prefill fewer query rows, and in bf16 that can move a logit
    # enough to flip a sample, so the two calls would not be the same computation
    be = VLLMBackend(gpu_memory_utilization=0.3, enable_prefix_caching=False)
    convs = [[{'role': 'user', 'content': 'Ask me a question.'}]] * 4
    p = SamplingParams(max_new_tokens=16, temperature=1.0, seed=7)
    assert be.generate(convs, p) == be.generate(convs, p)
