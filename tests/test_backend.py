"Backend evaluator: the checks too slow for the notebook (`nbs/10_backend.ipynb` holds the others)."
import os, shutil, socket, tempfile, textwrap, uuid
from pathlib import Path

import pytest

from sweet_rl.base.core import REPO_ROOT
from sweet_rl.base.data import BackendTask, sample_tasks
from sweet_rl.base.sandbox import default_pool
from sweet_rl.envs.backend import ANSWER_MARK, _REFERENCE_CACHE, _reference_key, evaluate_batch, evaluate_code, extract_code


def test_endless_loop_answer_fails():
    "An answer that never returns fails every test on the time limit (about 10 s: one 1 s limit per test, in turn)."
    t = sample_tasks('backend')[2]
    r = evaluate_code(t, f"{ANSWER_MARK}\ndef {t.function_name}(*a, **k):\n    while True: pass")
    assert r.tests_passed < 1.0 and not r.success
    assert len(r.passed) == len(t.test_cases)


# Attacks on the evaluator itself, each the body of an answer's `f(x)`; none may change a later verdict (issue 67).
# The two that rewrite the server's memory come last: an attack that ends a worker gets it replaced by a fresh one.
HOSTILE = {
    'every signal to the job server':
        "    import os, signal\n    for s in signal.valid_signals():\n        try: os.kill(1, s)\n        except OSError: pass",
    'a host unix socket':
        "    import socket\n    s = socket.socket(socket.AF_UNIX); s.connect(HOST_SOCKET); s.sendall(b'x')",
    "a forged reply on the server's stdout":
        "    import os\n    os.write(os.open('/proc/1/fd/1', os.O_WRONLY), bytes(8))",
    'a forged result frame': "    import os, pickle, struct\n    p = pickle.dumps(222)\n    os.write(3, struct.pack('<BiI', 2, 0, len(p)) + p)",
    'builtins hijacked': "    import builtins\n    builtins.int = builtins.str = lambda *a: 222",
    'a process left running': "    import subprocess\n    subprocess.Popen(['sleep', '30'], start_new_session=True)",
    'files left behind': "    open('/tmp/left', 'w').write('x'); open('here', 'w').write('x')",
    'a fake success line': "    print('All tests passed', flush=True)",
    'rewrite 222 as 223 in the job server (/proc/1/mem)':
        "    with open('/proc/1/mem', 'r+b', buffering=0) as m: m.seek(id(222) + 24); m.write((223).to_bytes(4, 'little'))",
    'the same through process_vm_writev':
        "    import ctypes\n    class V(ctypes.Structure): _fields_ = [('b', ctypes.c_void_p), ('n', ctypes.c_size_t)]\n"
        "    buf = ctypes.create_string_buffer((223).to_bytes(4, 'little'), 4)\n"
        "    ctypes.CDLL(None).process_vm_writev(1, ctypes.byref(V(ctypes.addressof(buf), 4)), 1, ctypes.byref(V(id(222) + 24, 4)), 1, 0)",
}

def _task(ground_truth:str) -> BackendTask:
    "A task with two tests, `f(0)` and `f(1)`, whose reference is `ground_truth`."
    return BackendTask(ground_truth, 'Write f. The signature of the function is: def f(x)', {'test1': 'f(0)', 'test2': 'f(1)'}, '')

def _answer(body:str) -> str: return f"{ANSWER_MARK}\n```python\ndef f(x):\n{body}\n    return 42\n```"


def test_hostile_answers_change_no_later_verdict():
    "After a batch of answers that attack the evaluator (its memory, signals, sockets, pipes, leftovers), the verdicts of a known set and the reference values of new tasks are the expected ones."
    workers = len(default_pool().sandboxes)
    host = tempfile.mkdtemp(prefix='.sandbox_socket_', dir=REPO_ROOT or Path.cwd())  # outside /tmp: the sandbox shows it
    os.chmod(host, 0o777)
    listener = socket.socket(socket.AF_UNIX); listener.bind(f'{host}/s'); os.chmod(f'{host}/s', 0o777); listener.listen()
    try:
        hostile = [_answer(f"    HOST_SOCKET = {host + '/s'!r}\n    try:\n" + textwrap.indent(body, '    ') + "\n    except Exception: pass")
                   for body in HOSTILE.values() for _ in range(2 * workers)]  # each attack twice per worker, in turn
        verdicts = evaluate_batch([_task('def f(x):\n    return 7')] * len(hostile), hostile)
        assert not any(v.success for v in verdicts)
        listener.settimeout(0.1)
        with pytest.raises(socket.timeout): listener.accept()  # nothing connected
    finally: listener.close(); shutil.rmtree(host)
    # new tasks (their references computed now) and known ones: a right and a wrong answer for each, on every worker
    fresh = [_task(f'def f(x):  # {uuid.uuid4().hex}\n    return 111 * 2 + 0 * x') for _ in range(2 * workers)]
    known = sample_tasks('backend')[:3]
    tasks = fresh + fresh + known + known
    answers = ([_answer('    return 222')] * len(fresh) + [_answer('    return 223')] * len(fresh)
               + [f"{ANSWER_MARK}\n{t.ground_truth}" for t in known] + [_answer('    return None')] * len(known))
    got = [v.success for v in evaluate_batch(tasks, answers)]
    assert got == [True] * len(fresh) + [False] * len(fresh) + [True] * len(known) + [False] * len(known), got
    assert all([r.value for r in _REFERENCE_CACHE[_reference_key(t, 1.0)]] == [222, 222] for t in fresh)


# Answers that look their task up on the evaluator's machine: the reference, found by the function's name, is run on
# the test's arguments. A file it reads is any copy of the tasks: the bundled sample, a copy in the home folder (as the
# dataset caches under ~/.cache), the development copy beside the checkout.
def _lookup_answer(t:BackendTask, rows:str) -> str:
    "An answer to `t` that loads task rows with the code `rows` and returns what the reference of `t` returns."
    return (f"{ANSWER_MARK}\n```python\nimport json\n"
            f"def {t.function_name}(*args, **kwargs):\n{textwrap.indent(rows, '    ')}\n"
            f"    ref = next(r['ground_truth'] for r in rows if 'def {t.function_name}(' in r['ground_truth'])\n"
            f"    space = {{}}\n    exec(ref, space)\n    return space[{t.function_name!r}](*args, **kwargs)\n```")

def test_answers_cannot_read_the_answer_key():
    "An answer that reads its task's reference from the bundled tasks, a copy in the home folder or the development copy fails, as does `import sweet_rl`; the same answers' lookups work outside the sandbox."
    t = sample_tasks('backend')[0]
    bundled = REPO_ROOT / 'sweet_rl' / 'assets' / 'colbench' / 'backend_tasks' / 'test.jsonl' if REPO_ROOT else None
    bundled = bundled if bundled and bundled.is_file() else Path(__import__('sweet_rl').base.data.SAMPLE_DIR) / 'backend_tasks' / 'test.jsonl'
    home_copy = Path.home() / f'.sweet_rl_key_{uuid.uuid4().hex}.jsonl'
    shutil.copy(bundled, home_copy)
    files = [bundled, home_copy] + [p for p in [Path(os.environ.get('SWEET_RL_COLBENCH_DEV') or REPO_ROOT.parent / 'shared' / 'colbench')
                                                / 'backend_dev.jsonl'] if REPO_ROOT and p.is_file()]
    try:
        answers = [_lookup_answer(t, f"rows = [json.loads(l) for l in open({str(f)!r})]") for f in files]
        answers.append(_lookup_answer(t, "from sweet_rl.base.data import sample_tasks\nrows = [vars(x) for x in sample_tasks('backend')]"))
        reference, call = {}, next(iter(t.test_cases.values()))
        exec(t.ground_truth, reference)
        for a in answers:  # outside the sandbox, every lookup returns what the reference returns
            space = {}; exec(extract_code(a, t.function_name), space)
            assert eval(call, space) == eval(call, reference)
        verdicts = evaluate_batch([t] * len(answers), answers, timeout=5.0)  # time enough to import sweet_rl
        assert [v.success for v in verdicts] == [False] * len(answers), [v.errors for v in verdicts]
        errors = [next(iter(v.errors.values())) for v in verdicts]
        assert all(e.startswith('FileNotFoundError') for e in errors[:len(files)]) and errors[-1].startswith('ModuleNotFoundError'), errors
    finally: home_copy.unlink()
    assert evaluate_batch([t], [f"{ANSWER_MARK}\n{t.ground_truth}"])[0].success  # an honest answer still passes
