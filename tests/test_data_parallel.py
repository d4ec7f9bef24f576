"""`DataParallelBackend` on a CPU: worker processes with a deterministic stand-in engine give one engine's replies in the
caller's order; a failing worker is named by its GPUs; `close` (and the interpreter's exit hook) leaves no process alive.
The workers are forked (milliseconds); on GPUs the backend spawns them (see `nbs/02_models.ipynb`)."""
import functools, gc, hashlib, json, multiprocessing, os, signal, subprocess, time

import pytest

import sweet_rl.base.models as models
from sweet_rl.base.models import Completion, DataParallelBackend, GenerationBackend, SamplingParams, shard_requests


class SeededStandIn(GenerationBackend):
    "A stand-in engine: each reply is a function of the prompt, the request's seed (`seed + i`) and the most new tokens."
    def __init__(self, refuse_on:str|None=None): # the CUDA_VISIBLE_DEVICES on which building fails
        if refuse_on is not None and os.environ.get('CUDA_VISIBLE_DEVICES') == refuse_on: raise RuntimeError('no engine fits here')
    def complete(self, conversations, params=None):
        p, out = params or SamplingParams(), []
        for i, c in enumerate(conversations):
            if c[-1]['content'] == 'raise': raise ValueError('the stand-in engine refused this prompt')
            if c[-1]['content'] == 'exit': os._exit(7)  # a crash in native code, an out-of-memory kill
            if c[-1]['content'] == 'slow': time.sleep(30)
            seed = None if p.seed is None else p.seed + i
            out.append(Completion(hashlib.sha256(json.dumps([c, seed, p.max_new_tokens]).encode()).hexdigest()[:16], p.max_new_tokens, 'stop'))
        return out


class LeakyStandIn(GenerationBackend):
    "A stand-in engine that starts a process of its own and never ends it (as vLLM's engine-core processes could be left)."
    def __init__(self): self.child = subprocess.Popen(['sleep', '60'])
    def complete(self, conversations, params=None):
        return [Completion(f'{os.getpid()} {self.child.pid}', 1, 'stop') for _ in conversations]


def chat(text): return [{'role': 'user', 'content': text}]


def groups():
    "Groups of unequal sizes, seeds (one unseeded) and lengths, prompts of unequal lengths."
    shapes = [(5, 11, 64), (1, None, 8), (8, 0, 256), (3, 2**31, 32), (2, 7, 128)]
    return [([chat(f'state {g} ' + 'x' * (37 * k % 101)) for k in range(n)], SamplingParams(seed=seed, max_new_tokens=t))
            for g, (n, seed, t) in enumerate(shapes)]


def gone(pid:int) -> bool:
    "Whether process `pid` has ended (a zombie waiting for its reaper counts as ended)."
    try:
        with open(f'/proc/{pid}/stat') as f: return f.read().rsplit(')', 1)[1].split()[0] == 'Z'
    except FileNotFoundError: return True


def wait_gone(pids, seconds:float=5.0) -> list:
    "The processes of `pids` still alive after up to `seconds`."
    deadline = time.monotonic() + seconds
    while (alive := [p for p in pids if not gone(p)]) and time.monotonic() < deadline: time.sleep(0.02)
    return alive


@pytest.mark.parametrize('workers', [2, 3])
def test_same_replies_in_the_same_order_as_one_engine(workers):
    want = SeededStandIn().complete_groups(groups())
    with DataParallelBackend(SeededStandIn, [str(d) for d in range(workers)], start_method='fork') as dp:
        assert dp.complete_groups(groups()) == want
        assert dp.complete(*groups()[2]) == want[2]  # one group, split over the engines
        assert dp.generate_groups(groups()[:1]) == [[c.text for c in want[0]]]
    assert all(rs for rs in shard_requests([[1.0] * len(c) for c, _ in groups()], workers))  # every engine had work


def test_a_failing_worker_is_named_by_its_gpus():
    gs = [(c, SamplingParams(seed=1)) for c in ([chat('a'), chat('raise')], [chat('b')] * 4)]
    runs = shard_requests([[models.request_cost(c, p) for c in convs] for convs, p in gs], 2)
    bad = next(e for e, rs in enumerate(runs) if (0, 1) in [(g, k) for g, a, b in rs for k in range(a, b)])
    devices = ['4', '6']
    with DataParallelBackend(SeededStandIn, devices, start_method='fork') as dp:
        with pytest.raises(RuntimeError, match=f'engine worker {bad} on GPU\\(s\\) {devices[bad]} \\(CUDA_VISIBLE_DEVICES={devices[bad]}\\)'
                                               '.*ValueError: the stand-in engine refused this prompt'):
            dp.complete_groups(gs)
        assert dp.complete([chat('b')], SamplingParams(seed=3)) == SeededStandIn().complete([chat('b')], SamplingParams(seed=3))  # still in step
        pids = [w.process.pid for w in dp.workers]
        with pytest.raises(RuntimeError, match='CUDA_VISIBLE_DEVICES=.*exit code 7'):
            dp.complete([chat('exit')] * 2)
        assert dp.workers == [] and wait_gone(pids) == []  # a dead worker closes the backend: no engine is left half-used
    with pytest.raises(RuntimeError, match="GPU\\(s\\) 6 .*building its engine: RuntimeError: no engine fits here"):
        DataParallelBackend(functools.partial(SeededStandIn, refuse_on='6'), devices, start_method='fork')
    assert multiprocessing.active_children() == []


def test_an_interrupted_call_closes_the_backend():
    "Ctrl-C in the middle of a call: the replies still due would answer the next call, so the backend closes."
    def interrupt(*_): raise KeyboardInterrupt
    old = signal.signal(signal.SIGALRM, interrupt)
    dp = DataParallelBackend(SeededStandIn, ['0', '1'], start_method='fork')
    pids = [w.process.pid for w in dp.workers]
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.3)
        with pytest.raises(KeyboardInterrupt): dp.complete([chat('slow')] * 2)
    finally: signal.setitimer(signal.ITIMER_REAL, 0); signal.signal(signal.SIGALRM, old)
    assert dp.workers == [] and wait_gone(pids) == []
    with pytest.raises(RuntimeError, match='closed'): dp.complete([chat('b')])


@pytest.mark.parametrize('how', ['close', 'exit hook', 'dropped'])
def test_no_process_outlives_the_backend(how):
    dp = DataParallelBackend(LeakyStandIn, ['0', '1'], start_method='fork')
    texts = dp.generate([chat('hi')] * 4)
    pids = sorted({int(p) for t in texts for p in t.split()})
    assert len(pids) == 4 and os.getpid() not in pids  # two workers, each with a process its engine started
    if how == 'close': dp.close()
    elif how == 'exit hook': models._close_data_parallel()  # what runs at interpreter exit
    else: del dp; gc.collect()
    assert wait_gone(pids) == [] and multiprocessing.active_children() == []
