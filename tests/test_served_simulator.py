"""Simulators as servers: a rollout whose simulated human is a real `transformers serve` process on 127.0.0.1, killed and
restarted in the middle of the run. The rollout either rides out the restart or, when its retry budget runs out, fails
with every finished episode on disk and completes on a rerun; no episode is lost or stored twice."""
import json, os, shutil, socket, subprocess, sys, threading, time
from pathlib import Path

import httpx
import pytest

from sweet_rl.base.data import sample_tasks
from sweet_rl.base.models import DEFAULT_MODEL, GenerationError, OpenAIBackend, TransformersBackend, fetch_model
from sweet_rl.base.rollout import RolloutConfig, env_factory, run_rollouts

N_TASKS = 4  # two waves of two episodes: the kill comes after the first wave is stored, the second meets it
CONFIG = RolloutConfig(batch_size=2, max_new_tokens=24)
ENV = dict(max_turns=2, simulator_max_new_tokens=16)


def _free_port():
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


class _Server:
    "A `transformers serve` process for the default preset on a fixed 127.0.0.1 port; it can be killed and started again."
    def __init__(self, model_path:Path, port:int, log_path:Path):
        self.model_path, self.port, self.log_path, self.proc = model_path, port, log_path, None
        self.url = f'http://127.0.0.1:{port}/v1'

    def start(self, timeout:float=180):
        "Start the server and wait until `/health` answers."
        exe = shutil.which('transformers', path=str(Path(sys.executable).parent)) or shutil.which('transformers')
        assert exe, 'the transformers CLI is not installed'
        env = dict(os.environ, HF_HUB_OFFLINE='1', TRANSFORMERS_OFFLINE='1')
        with open(self.log_path, 'a') as log:
            self.proc = subprocess.Popen([exe, 'serve', str(self.model_path), '--host', '127.0.0.1', '--port', str(self.port),
                                          '--device', 'cpu'], stdout=log, stderr=subprocess.STDOUT, env=env)
        deadline = time.monotonic() + timeout
        while True:
            if self.proc.poll() is not None: raise RuntimeError(f'transformers serve exited with {self.proc.returncode}; see {self.log_path}')
            try:
                if httpx.get(self.url[:-3] + '/health', timeout=2).status_code == 200: return
            except httpx.TransportError: pass
            if time.monotonic() > deadline: raise RuntimeError(f'transformers serve not ready after {timeout} s; see {self.log_path}')
            time.sleep(0.25)

    def kill(self):
        "SIGKILL the server process: no graceful shutdown, in-flight requests are cut."
        self.proc.kill(); self.proc.wait()

    def stop(self):
        if self.proc is None or self.proc.poll() is not None: return
        self.proc.terminate()
        try: self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired: self.kill()


@pytest.fixture(scope='module')
def server(tmp_path_factory):
    srv = _Server(fetch_model(DEFAULT_MODEL), _free_port(), tmp_path_factory.mktemp('serve') / 'serve.log')
    try:
        srv.start()
        yield srv
    finally: srv.stop()


@pytest.fixture(scope='module')
def agent():
    return TransformersBackend(DEFAULT_MODEL, batch_size=2)


def _lines(path:Path) -> list[str]:
    "The complete lines of a JSONL file (a line still being written is left out)."
    text = path.read_text() if path.exists() else ''
    return text[:text.rfind('\n') + 1].splitlines()


def _kill_after_first_episode(server:_Server, out:Path, box:dict, restart:bool, clients:list|None=None):
    """Thread body: once an episode is stored, kill the server, note what is on disk, and (if `restart`) start it again,
    but only after the rollout's client has met the dead server (`retries`), so the outage always hits the rollout."""
    try:
        deadline = time.monotonic() + 150
        while not _lines(out):
            if time.monotonic() > deadline: raise RuntimeError('no episode was stored within 150 s')
            time.sleep(0.02)
        server.kill()
        box['killed_at'] = time.monotonic()
        box['on_disk_at_kill'] = _lines(out)  # every episode finished before the kill (perhaps one more)
        if restart:
            while not (clients and clients[0].retries):
                if time.monotonic() > deadline: raise RuntimeError('the rollout never met the dead server within 150 s')
                time.sleep(0.05)
            server.start()
            box['back_at'] = time.monotonic()
    except BaseException as e: box['error'] = e


def _rollout(agent, server:_Server, out:Path, clients:list|None=None, **client):
    sim = OpenAIBackend(server.url, model=str(server.model_path), timeout=60, concurrency=2, **client)
    if clients is not None: clients.append(sim)
    try: return run_rollouts(sample_tasks('backend')[:N_TASKS], env_factory('backend', sim, **ENV), agent, CONFIG,
                             out_path=out, progress=False)
    finally: sim.close()


def _check_store(out:Path, on_disk_at_kill:list[str], records:list[dict]):
    "Episodes stored before the kill are there once and unchanged; every episode is stored exactly once."
    lines = _lines(out)
    stored = [json.loads(l) for l in lines]
    ids = [r['id'] for r in stored]
    assert len(ids) == len(set(ids)) == N_TASKS, 'no duplicated episode id, and the total is right'
    assert set(ids) == {r['id'] for r in records}
    assert lines[:len(on_disk_at_kill)] == on_disk_at_kill, 'episodes finished before the kill are kept byte for byte'
    for r in records: assert r == stored[ids.index(r['id'])]


def test_rollout_rides_out_a_server_restart(server, agent, tmp_path):
    out, box, clients = tmp_path / 'episodes.jsonl', {}, []
    killer = threading.Thread(target=_kill_after_first_episode, args=(server, out, box, True, clients), daemon=True)
    killer.start()
    t0 = time.monotonic()
    # waits of at most 1 s, about 2 minutes in all: longer than a restart of the tiny server takes
    records = _rollout(agent, server, out, clients, max_retries=120, backoff=0.25, max_backoff=1.0)
    finished = time.monotonic()
    killer.join(200)
    assert 'error' not in box, box.get('error')
    assert 1 <= len(box['on_disk_at_kill']) < N_TASKS, f"the server died in the middle of the rollout ({len(box['on_disk_at_kill'])} stored)"
    assert clients[0].retries > 0, 'the rollout met the dead server and retried'
    assert finished > box['back_at'], f"the rollout finished only after the server was back ({finished - box['back_at']:.1f} s)"
    assert len(records) == N_TASKS
    _check_store(out, box['on_disk_at_kill'], records)
    print(f"killed after {len(box['on_disk_at_kill'])} episodes, down {box['back_at'] - box['killed_at']:.1f} s, "
          f"{clients[0].retries} retries, rollout {finished - t0:.1f} s")


def test_rollout_that_gives_up_resumes_on_rerun(server, agent, tmp_path):
    out, box = tmp_path / 'episodes.jsonl', {}
    killer = threading.Thread(target=_kill_after_first_episode, args=(server, out, box, False), daemon=True)
    killer.start()
    t0 = time.monotonic()
    with pytest.raises(GenerationError, match='gave up after 3 attempts'):
        _rollout(agent, server, out, max_retries=2, backoff=0.1, max_backoff=0.2)  # a budget too short for the restart
    gave_up = time.monotonic()
    killer.join(60)
    assert 'error' not in box, box.get('error')
    assert gave_up - box['killed_at'] < 30, 'the failure came within the bounded retry budget'
    kept = _lines(out)
    assert 1 <= len(kept) < N_TASKS, 'finished episodes are on disk, and some were left to do'
    assert kept[:len(box['on_disk_at_kill'])] == box['on_disk_at_kill'], 'what was stored before the kill is untouched'
    server.start()
    records = _rollout(agent, server, out)  # the rerun runs only the episodes that are missing
    assert len(records) == N_TASKS
    _check_store(out, kept, records)
    print(f"gave up {gave_up - box['killed_at']:.1f} s after the kill with {len(kept)} episodes stored; "
          f"rerun completed {N_TASKS - len(kept)} more in {time.monotonic() - gave_up:.1f} s (total {time.monotonic() - t0:.1f} s)")


def test_dead_port_fails_within_the_retry_budget():
    client = OpenAIBackend(f'http://127.0.0.1:{_free_port()}/v1', timeout=2, max_retries=3, backoff=0.05, max_backoff=0.1)
    assert client.retry_waits == [0.05, 0.1, 0.1]
    t0 = time.monotonic()
    with pytest.raises(GenerationError, match='2 of 2 requests failed.*gave up after 4 attempts'):
        client.generate([[{'role': 'user', 'content': 'hi'}]] * 2)
    assert time.monotonic() - t0 < 5


def test_a_server_that_never_answers_times_out():
    "A port that accepts connections but never replies: each attempt ends at its timeout, then the request fails."
    with socket.socket() as listener:
        listener.bind(('127.0.0.1', 0)); listener.listen(8)  # the kernel accepts connections; nobody ever answers
        client = OpenAIBackend(f'http://127.0.0.1:{listener.getsockname()[1]}/v1', timeout=0.5, max_retries=1, backoff=0.05)
        t0 = time.monotonic()
        with pytest.raises(GenerationError, match='ReadTimeout.*gave up after 2 attempts'):
            client.generate([[{'role': 'user', 'content': 'hi'}]])
        assert time.monotonic() - t0 < 5
