"""At the paper scale the policy's candidates and evaluation decode with vLLM; the CPU scales keep the transformers
backend. vLLM is not installed on a CPU: a stand-in `vllm` module records what the engine is built
with and the prompt tokens it is given, so these tests check the arguments and the prompts, never vLLM's decoding."""
import random, sys, types
from pathlib import Path

import pytest
import torch

from sweet_rl.methods.actor import (Actor, ActorConfig, CandidateConfig, policy_backend, sample_candidates, train_actor,
                                    vllm_model_files)
from sweet_rl.runs.launch import generation_kind
from sweet_rl.base.models import (TransformersBackend, VLLMBackend, generation_prompt_ids, live_vllm_engines, load_tokenizer,
                             make_backend, token_logprobs, vllm_lora_rank, vllm_parallel_size)
from sweet_rl.runs.pipeline import Study, expand_study

ROOT = Path(__file__).resolve().parents[1]
CONVS = [[{'role': 'user', 'content': 'Write f that sorts a list.'}],
         [{'role': 'system', 'content': 'You are a careful programmer.'}, {'role': 'user', 'content': 'Write g.'},
          {'role': 'assistant', 'content': 'Should g accept an empty list?'}, {'role': 'user', 'content': 'Yes, return [].'}]]


class FakeLLM:
    "What `vllm.LLM` was built with, and the requests it was given."
    def __init__(self, **kwargs): self.kwargs, self.requests, self.closed = kwargs, [], False
    def generate(self, prompts, sampling_params=None, lora_request=None, use_tqdm=True):
        self.requests.append({'prompt_ids': [p['prompt_token_ids'] for p in prompts], 'params': sampling_params, 'lora': lora_request})
        done = lambda: types.SimpleNamespace(text='Is the list sorted already?', token_ids=[1, 2, 3], finish_reason='stop')
        return [types.SimpleNamespace(outputs=[done()]) for _ in prompts]
    def shutdown(self): self.closed = True


@pytest.fixture
def fake_vllm(monkeypatch):
    mods = {n: types.ModuleType(n) for n in ('vllm', 'vllm.inputs', 'vllm.lora', 'vllm.lora.request')}
    mods['vllm'].LLM, mods['vllm'].SamplingParams = FakeLLM, lambda **kw: kw
    mods['vllm.inputs'].TokensPrompt = lambda **kw: kw
    mods['vllm.lora.request'].LoRARequest = lambda name, int_id, path: {'name': name, 'id': int_id, 'path': path}
    for n, m in mods.items(): monkeypatch.setitem(sys.modules, n, m)
    yield
    for b in live_vllm_engines(): b.close()


def _runs(study:str, scale:str, notebook:str) -> list[dict]:
    return [p for nb, p in expand_study(Study.load(ROOT / 'studies' / f'{study}.yaml'), scale) if nb == notebook]


def test_paper_preset_decodes_with_vllm_and_the_cpu_scales_do_not(paper_cluster):
    for study in ('table2', 'table3', 'table4', 'figure3b'):
        assert {generation_kind(p.get('accelerate', '')) for p in _runs(study, 'paper', 'train_actor')} == {'vllm'}, study
        for scale in ('smoke', 'small'):
            assert {generation_kind(p.get('accelerate', '')) for p in _runs(study, scale, 'train_actor')} <= {'transformers'}, (study, scale)
    for study in ('table2', 'table4'):
        assert all(p['model'].startswith('vllm:') for p in _runs(study, 'paper', 'evaluate')), study
        assert not any(p.get('model', '').startswith('vllm:') for s in ('smoke', 'small') for p in _runs(study, s, 'evaluate')), study
    paper = _runs('figure3a', 'paper', 'best_of_n')
    assert paper and all(p['actor'].startswith('vllm:') and p['judge'] == p['actor'] for p in paper)  # the judge shares the engine
    assert not any(p.get('actor', '').startswith('vllm:') for s in ('smoke', 'small') for p in _runs('figure3a', s, 'best_of_n'))
    assert generation_kind('configs/accelerate/cpu_2proc.yaml') == 'transformers'  # launched on CPU processes (CI)


def test_vllm_shards_only_what_one_gpu_cannot_hold(paper_cluster):
    tmp, _ = paper_cluster
    GiB = 2 ** 30
    assert vllm_parallel_size(tmp / 'models' / 'Llama-3.1-8B-Instruct', gpus=8, gpu_bytes=80 * GiB) == 1
    assert vllm_parallel_size(tmp / 'models' / 'Llama-3.1-70B-Instruct', gpus=8, gpu_bytes=80 * GiB) == 4  # 131 GiB of weights
    assert [vllm_lora_rank(r) for r in (4, 12, 16, 24)] == [8, 16, 16, 32]  # vLLM refuses max_lora_rank 12 and 24


def test_vllm_prompts_are_the_transformers_prompts_token_for_token(tiny_lm, fake_vllm, monkeypatch):
    seen = []
    def decode(self, prompts, params):
        seen.extend(prompts); return [[self.eot_ids[0]] for _ in prompts]
    monkeypatch.setattr(TransformersBackend, '_decode', decode)
    from sweet_rl.base.models import SamplingParams
    params = SamplingParams(max_new_tokens=16, temperature=1.0, seed=7, stop=['\n\n'])
    TransformersBackend(tiny_lm).complete(CONVS, params)
    engine = VLLMBackend(tiny_lm)
    out = engine.complete(CONVS, params)
    req = engine.llm.requests[0]
    assert sorted(req['prompt_ids']) == sorted(seen)  # the transformers backend runs the longest prompt first
    tok = load_tokenizer(tiny_lm)
    assert req['prompt_ids'] == [generation_prompt_ids(tok, c) for c in CONVS] and req['lora'] is None
    assert [p['seed'] for p in req['params']] == [7, 8] and all(p['stop_token_ids'] == engine.eot_ids and p['stop'] == ['\n\n'] for p in req['params'])
    assert [o.text for o in out] == ['Is the list sorted already?'] * 2


def _logits(model, ids):
    with torch.no_grad(): return token_logprobs(model, ids)


class SeededLLM(FakeLLM):
    "A stand-in engine whose reply is a function of the prompt tokens and the request's seed alone, as a seeded vLLM request's is."
    def generate(self, prompts, sampling_params=None, lora_request=None, use_tqdm=True):
        self.requests.append(len(prompts))
        reply = lambda p, sp: types.SimpleNamespace(text=f"{random.Random(str((p['prompt_token_ids'], sp['seed']))).random():.9f}",
                                                    token_ids=[1], finish_reason='stop')
        return [types.SimpleNamespace(outputs=[reply(p, sp)]) for p, sp in zip(prompts, sampling_params)]


def test_candidates_batched_across_states_are_the_per_state_ones(tiny_lm, fake_vllm, monkeypatch, tmp_path):
    "Before: one engine call of 16 requests per state. Now `states_per_call` states' requests go at once, each keeping its seed."
    monkeypatch.setattr(sys.modules['vllm'], 'LLM', SeededLLM)
    turns = [{'id': f'turn{i}', 'task': {}, 'history': [], 'prompt': CONVS[i % 2]} for i in range(5)]
    per_state, batched = VLLMBackend(tiny_lm), VLLMBackend(tiny_lm)
    one = sample_candidates(per_state, turns, CandidateConfig(n_candidates=4, states_per_call=1), progress=False)
    many = sample_candidates(batched, turns, CandidateConfig(n_candidates=4, states_per_call=2), tmp_path / 'c.jsonl', progress=False)
    assert many == one and len({c for r in one for c in r['candidates']}) == 20  # same texts, same order; every seed its own
    assert (per_state.llm.requests, batched.llm.requests) == ([4] * 5, [8, 8, 4])  # 5 calls of one state; 3 of up to two
    again = VLLMBackend(tiny_lm)
    assert sample_candidates(again, turns + turns[:1], CandidateConfig(n_candidates=4, states_per_call=2), tmp_path / 'c.jsonl',
                             progress=False) == one + one[:1] and again.llm.requests == []  # resumed from the store: no call
    # the transformers backend decodes no groups together: one call per state, as before (the CPU scales are unchanged)
    assert not TransformersBackend.joint_calls and VLLMBackend.joint_calls


@pytest.mark.parametrize('lora', [False, True], ids=['full', 'lora'])
def test_a_trained_actor_is_what_vllm_loads(tiny_lm, tmp_path, fake_vllm, lora):
    "vLLM gets a model folder holding the trained weights (full fine-tuning) or the base model with the trained adapter."
    from transformers import AutoModelForCausalLM
    rows = [{'conversation': CONVS[1] + [{'role': 'assistant', 'content': 'def g(x): return sorted(x)'}]}] * 2
    config = ActorConfig(model=tiny_lm, method='rft', lora=lora, lora_r=4, lora_alpha=8, dtype='float32', lr=5e-2, warmup_ratio=0.0,
                         batch_size=1, save_steps=1000, save_minutes=None)
    trained = train_actor(config, rows, tmp_path / 'run', max_steps=2, progress=False, device='cpu')
    engine = policy_backend(tmp_path / 'run' / 'actor', 'vllm', tensor_parallel_size=1)
    kw, files = engine.llm.kwargs, vllm_model_files(tmp_path / 'run' / 'actor')
    ids = torch.tensor([generation_prompt_ids(trained.tokenizer, CONVS[1])])
    want, base = _logits(trained.model, ids), _logits(AutoModelForCausalLM.from_pretrained(tiny_lm, dtype=torch.float32), ids)
    assert (want - base).abs().max() > 1e-3  # training moved the policy: the comparison below can tell the two apart
    if lora:
        from peft import PeftModel
        assert kw['model'] == tiny_lm and kw['enable_lora'] and kw['max_lora_rank'] == 8
        assert engine.lora['path'] == files['lora']
        got = _logits(PeftModel.from_pretrained(AutoModelForCausalLM.from_pretrained(tiny_lm, dtype=torch.float32), files['lora']), ids)
    else:
        assert kw['model'] == files['model'] != tiny_lm and 'enable_lora' not in kw and engine.lora is None
        got = _logits(AutoModelForCausalLM.from_pretrained(files['model'], dtype=torch.float32), ids)  # what vLLM reads: config, tokenizer, weights
        assert load_tokenizer(files['model'])(['x'])['input_ids'] == load_tokenizer(tiny_lm)(['x'])['input_ids']
    torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-5)
    engine.complete(CONVS[:1])
    assert engine.llm.requests[0]['lora'] == engine.lora
    assert policy_backend(trained, 'transformers').model is trained.model  # the CPU scales: the model in this process


def test_a_launch_waits_for_vllm_engines_to_close(tiny_lm, fake_vllm):
    from sweet_rl.base.train import release_models
    engine = make_backend(f'vllm:{tiny_lm}') if torch.cuda.is_available() else VLLMBackend(tiny_lm)
    with pytest.raises(RuntimeError, match='vLLM engine'): release_models('launch_training')
    llm = engine.llm
    engine.close()
    assert llm.closed and engine.llm is None and live_vllm_engines() == []
    release_models('launch_training')
    with VLLMBackend(tiny_lm) as scoped: assert live_vllm_engines() == [scoped]
    assert live_vllm_engines() == []  # `with` closes it


def test_the_dry_run_still_checks_a_vllm_models_folder(tmp_path):
    from sweet_rl.runs.pipeline import missing_paths
    (tmp_path / 'here').mkdir()
    assert missing_paths({'model': f'vllm:{tmp_path}/gone', 'judge': f'vllm:{tmp_path}/here', 'simulator': 'openai:M@http://h:1/v1',
                          'actor': f'vllm*8:{tmp_path}/gone', 'data_model': f'vllm*2:{tmp_path}/here'}) == [
        f'model=vllm:{tmp_path}/gone', f'actor=vllm*8:{tmp_path}/gone']  # data-parallel specs (`vllm*N:`) are checked too


def test_the_dry_run_wants_vllm_for_a_data_parallel_spec(monkeypatch):
    "A study whose only vLLM use is a `vllm*N:` spec still gets the 'vllm imports' check (and a plain name does not)."
    from sweet_rl.runs import pipeline
    monkeypatch.setattr(pipeline, 'import_error', lambda m: f'no module named {m}')
    monkeypatch.setattr(pipeline, 'gpu_memory_gib', lambda: [])
    wants = lambda model: any('vllm does not import' in p for p in pipeline.cluster_problems(
        [pipeline.Study('dp', [{'notebook': 'evaluate', 'params': {'model': model}}])], {}, [], 'paper'))
    assert wants('vllm*2:/models/x') and wants('vllm:/models/x') and not wants('smollm2-135m')


def test_the_paper_runs_build_these_engines(paper_cluster, fake_vllm, tiny_lm, monkeypatch):
    "What each paper-scale run's policy decoding builds on a node of 8 GPUs of 80 GB: the model folder, dtype and GPUs of its engine."
    import shutil
    from sweet_rl.runs.launch import train_actor_configs
    from sweet_rl.runs.pipeline import check_params
    tmp, _ = paper_cluster
    for name in ('Llama-3.1-8B-Instruct', 'Llama-3.1-70B-Instruct'):  # tokenizer files beside the published configs
        for f in Path(tiny_lm).iterdir():
            if f.name.startswith(('tokenizer', 'chat_template')): shutil.copy(f, tmp / 'models' / name / f.name)
    monkeypatch.setattr(torch.cuda, 'device_count', lambda: 8)
    monkeypatch.setattr(torch.cuda, 'get_device_properties', lambda i: types.SimpleNamespace(total_memory=80 * 2 ** 30))
    monkeypatch.setattr(torch.cuda, 'is_bf16_supported', lambda *a, **k: True)
    def engine(b):
        assert isinstance(b, VLLMBackend)
        return Path(b.llm.kwargs['model']).name, b.llm.kwargs['dtype'], b.llm.kwargs['tensor_parallel_size']
    built = {('table2', 'evaluate'): {engine(make_backend(p['model'])) for p in _runs('table2', 'paper', 'evaluate')},
             ('table4', 'evaluate'): {engine(make_backend(p['model'])) for p in _runs('table4', 'paper', 'evaluate')},
             ('figure3a', 'best_of_n'): {engine(make_backend(p['actor'])) for p in _runs('figure3a', 'paper', 'best_of_n')}}
    for study in ('table2', 'table4'):  # train_actor: the starting policy (SWEET's candidates), as the notebook asks for it
        full = [check_params('train_actor', p) for p in _runs(study, 'paper', 'train_actor')]
        built[(study, 'train_actor')] = {engine(policy_backend(train_actor_configs(p)['actor'].model, generation_kind(p['accelerate'])))
                                         for p in full}
    eight, seventy = ('Llama-3.1-8B-Instruct', 'bfloat16', 1), ('Llama-3.1-70B-Instruct', 'bfloat16', 4)
    assert built == {('table2', 'evaluate'): {eight}, ('table4', 'evaluate'): {seventy}, ('figure3a', 'best_of_n'): {eight},
                     ('table2', 'train_actor'): {eight}, ('table4', 'train_actor'): {seventy}}


def test_vllm_scorer_asks_for_a_rank_vllm_accepts(tiny_lm, tmp_path, fake_vllm):
    "Before: `max_lora_rank=max(r, 8)`, which vLLM refuses for r = 12 (it accepts 1, 8, 16, 32, ...: vllm/config/lora.py)."
    from sweet_rl.methods.critic import Critic, CriticConfig
    from sweet_rl.methods.scorers import VLLMScorer
    Critic.build(CriticConfig(model=tiny_lm, lora_r=12, lora_alpha=24, dtype='float32'), 'cpu').save(tmp_path / 'critic')
    assert VLLMScorer(tmp_path / 'critic').llm.kwargs['max_lora_rank'] == 16
