"""Tests of sweet_rl.base.models that a notebook cannot hold: the HTTP client against a real `transformers serve` process,
and the masks and batched log-probs of the optional presets (skipped when not fetched). The default preset's checks,
asset fetching, prefix caching and the stub-server failures live in nbs/02_models.ipynb."""
import os, shutil, socket, subprocess, sys, time
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from sweet_rl.base import models as M
from sweet_rl.base.models import (PRESETS, SamplingParams, OpenAIBackend, TransformersBackend, encode_conversations,
                                  score_conversations, assistant_char_spans, load_model, fetch_model, preset_dir)

CONV = [{'role': 'system', 'content': 'You are a careful Python programmer.'},
        {'role': 'user', 'content': 'Write is_even(n).'},
        {'role': 'assistant', 'content': 'Should negative numbers be supported?'},
        {'role': 'user', 'content': 'Yes, all integers.'},
        {'role': 'assistant', 'content': 'I WANT TO ANSWER:\ndef is_even(n):\n    return n % 2 == 0'}]
CONVS = [CONV, CONV[:3], CONV[1:3],
         [{'role': 'user', 'content': 'Hi'}, {'role': 'assistant', 'content': ' leading space and trailing newline\n'}],
         [{'role': 'user', 'content': 'Say nothing.'}, {'role': 'assistant', 'content': ''}, {'role': 'user', 'content': 'ok'},
          {'role': 'assistant', 'content': 'Done. ✓ ünïcödé'}]]

# the default preset (always fetched by setup.sh) is checked in the notebook; the others only when already in the cache
OPTIONAL_PRESETS = [pytest.param(n, marks=pytest.mark.skipif(not M._ready(preset_dir(n) / 'hf', PRESETS[n]),
                    reason=f'{n} not fetched (python -m sweet_rl.base.models fetch {n})')) for n in PRESETS if n != M.DEFAULT_MODEL]
_loaded = {}


def _model(name):
    if name not in _loaded: _loaded[name] = load_model(name, dtype='float32', device='cpu')
    return _loaded[name]


# ---------------------------------------------------------------- masks and log-probs of the optional presets

@pytest.mark.parametrize('name', OPTIONAL_PRESETS)
def test_mask_selects_exactly_assistant_contents(name):
    model, tok = _model(name)
    eot = M.end_of_turn_ids(tok, model)[0]
    batch = encode_conversations(tok, CONVS)
    for b, conv in enumerate(CONVS):
        contents = [m['content'] for m in conv if m['role'] == 'assistant']
        text = M._render(tok, conv)
        spans = assistant_char_spans(tok, conv, text)
        enc = tok(text, add_special_tokens=False, return_offsets_mapping=True)
        n = len(enc['input_ids'])
        assert batch.input_ids[b, :n].tolist() == enc['input_ids']  # scored tokens == one tokenization of the template
        turns = batch.turn_index[b]
        assert int(turns.max()) + 1 == len(contents)
        assert (turns[n:] == -1).all()
        for k, content in enumerate(contents):
            ids = batch.input_ids[b][turns == k].tolist()
            assert ids[-1] == eot, 'each turn ends with the end-of-turn token'
            assert tok.decode(ids[:-1]) == content
        for t, (s, e) in enumerate(enc['offset_mapping']):  # token by token: masked iff inside a content span (or its end)
            inside = any(s < ce and e > cs for cs, ce in spans)
            if turns[t] >= 0: assert inside or enc['input_ids'][t] == eot, (t, text[s:e])
            else: assert not inside, (t, text[s:e])


@pytest.mark.parametrize('name', OPTIONAL_PRESETS)
def test_batched_logprobs_match_one_at_a_time_reference(name):
    model, tok = _model(name)
    scored = score_conversations(model, tok, CONVS, batch_size=3)
    for sc, conv in zip(scored, CONVS):
        ids = tok(M._render(tok, conv), add_special_tokens=False, return_tensors='pt')['input_ids']
        with torch.no_grad(): logits = model(input_ids=ids).logits[0].float()
        ref = F.pad(logits[:-1].log_softmax(-1).gather(-1, ids[0, 1:, None]).squeeze(-1), (1, 0))
        assert torch.equal(sc.input_ids, ids[0])
        assert (sc.logprobs - ref).abs().max() < 1e-4
        assert sc.mask.sum() > 0 and (sc.logprobs[sc.mask] <= 0).all()


# ---------------------------------------------------------------- HTTP client: real server

def _free_port():
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


@pytest.fixture(scope='module')
def served_model():
    "A real `transformers serve` process on 127.0.0.1 serving the default preset from the local safetensors cache."
    path, port = fetch_model(M.DEFAULT_MODEL), _free_port()
    exe = shutil.which('transformers', path=str(Path(sys.executable).parent)) or shutil.which('transformers')
    assert exe, 'the transformers CLI is not installed'
    env = dict(os.environ, HF_HUB_OFFLINE='1', TRANSFORMERS_OFFLINE='1')
    log = open(Path(path).parent / 'serve-test.log', 'w')
    proc = subprocess.Popen([exe, 'serve', str(path), '--host', '127.0.0.1', '--port', str(port), '--device', 'cpu'],
                            stdout=log, stderr=subprocess.STDOUT, env=env)
    import httpx
    deadline, url = time.monotonic() + 180, f'http://127.0.0.1:{port}'
    try:
        while True:
            if proc.poll() is not None: pytest.fail(f'transformers serve exited with {proc.returncode}; see {log.name}')
            try:
                if httpx.get(url + '/health', timeout=2).status_code == 200: break
            except httpx.TransportError: pass
            if time.monotonic() > deadline: pytest.fail(f'transformers serve not ready after 180 s; see {log.name}')
            time.sleep(0.5)
        yield url + '/v1', str(path)
    finally:
        proc.terminate()
        try: proc.wait(timeout=20)
        except subprocess.TimeoutExpired: proc.kill(); proc.wait()
        log.close()


def test_openai_backend_against_transformers_serve(served_model):
    base_url, model_name = served_model
    client = OpenAIBackend(base_url, model=model_name, timeout=120, max_retries=1, concurrency=2)
    prompts = [[{'role': 'user', 'content': 'What is the capital of France?'}],
               [{'role': 'system', 'content': 'Answer in one word.'}, {'role': 'user', 'content': 'Name a fruit.'}],
               [{'role': 'user', 'content': 'Count from 1 to 20 with commas.'}]]
    greedy = SamplingParams(max_new_tokens=16, temperature=0)
    outs = client.complete(prompts, greedy)
    assert all(o.text.strip() and 0 < o.num_tokens <= 16 for o in outs)
    # the server runs the same bf16 checkpoint: greedy texts match local generation one conversation at a time
    model, tok = load_model(M.DEFAULT_MODEL, dtype='bfloat16', device='cpu')
    local = TransformersBackend(model, tok, batch_size=1)
    assert [o.text for o in outs] == local.generate(prompts, greedy)
    stopped = client.complete(prompts[2:], SamplingParams(max_new_tokens=40, temperature=0, stop=['5']))[0]
    assert '5' not in stopped.text and stopped.text.startswith('1')
