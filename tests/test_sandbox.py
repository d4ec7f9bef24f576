"""Adversarial tests for `sweet_rl.base.sandbox`.

Every attack is written so that it returns 42 (the reference answer) only if it got through. Each test checks that
the attack was contained, that it scores as a failure, that nothing is left running (exactly the launcher and the
worker remain), and that the same sandbox still serves a normal job afterwards.
"""
import collections, datetime, os, pickle, shutil, signal, socket, subprocess, sys, tempfile, threading, uuid
from pathlib import Path

import pytest

from sweet_rl.base.core import ConfigError
from sweet_rl.base.sandbox import (Sandbox, SandboxConfig, SandboxPool, UnsafeValue, _descendants, decode_value,
                              run_untrusted, sandbox_available, values_equal)

AVAILABLE, REPORT = sandbox_available()
needs_sandbox = pytest.mark.skipif(not AVAILABLE, reason=f"sandbox unavailable here: {REPORT}")
REFERENCE = 42


def test_sandbox_is_available():
    # On our machines (Linux, root or unprivileged user namespaces) the sandbox must start; say why if not.
    assert AVAILABLE, REPORT


@pytest.fixture(scope='module')
def sb():
    s = Sandbox().start()
    yield s
    s.close()
    assert s.pids() == []


def passes(run, expected=REFERENCE) -> bool:
    "The evaluator's verdict: every call returned a value equal to the reference, compared here on plain data."
    return all(r.ok and values_equal(r.value, expected) for r in run.results)


def assert_contained(sb, run, launcher=None):
    "Scored as a failure, nothing left behind, the worker unchanged and still serving."
    assert not passes(run), run
    pids = sb.pids()
    assert len(pids) == 2, f"expected only the launcher and the worker, found {pids}"
    if launcher is not None: assert pids == launcher, "the worker was restarted"
    ok = sb.run("def add(a, b):\n    return a + b\n", ["add(2, 3)"])
    assert ok.statuses == ['ok'] and ok.results[0].value == 5


# --- isolation the worker reports -----------------------------------------------------------------------------

@needs_sandbox
def test_worker_isolation_report(sb):
    rep = sb.report
    assert rep['pid'] == 1
    assert rep['cap_eff'] == rep['cap_bnd'] == '0000000000000000'
    assert rep['no_new_privs'] == '1'
    assert rep['net_interfaces'] == ['lo']
    assert rep['uid_map'][1] != '0'  # uid 0 inside is an unprivileged uid outside
    assert rep['threads'] == 1


@needs_sandbox
def test_normal_job(sb):
    run = sb.run("def f(a, b):\n    return a * b\n", ["f(6, 7)", "f('a', 3)", "f([1], 2)", "f(None, 1)"])
    assert run.statuses == ['ok', 'ok', 'ok', 'error']
    assert [r.value for r in run.results[:3]] == [42, 'aaa', [1, 1]]
    assert run.results[3].error.startswith('TypeError')
    assert passes(sb.run("def f(): return 6 * 7", ["f()"]))


# --- time -----------------------------------------------------------------------------------------------------

@needs_sandbox
def test_infinite_loop(sb):
    launcher = sb.pids()
    run = sb.run("def f():\n    while True: pass\n    return 42\n", ["f()", "6 * 7"])
    # both limits are 1 s here: which one stops the loop first depends on the machine's load
    assert run.results[0].status == 'timeout' and any(w in run.results[0].error for w in ('wall-clock', 'CPU limit')), run.results[0]
    assert run.results[1].value == 42 and run.restarts == 1  # the next call ran in a fresh process
    assert_contained(sb, run, launcher)


@needs_sandbox
def test_cpu_limit_without_wall_limit():
    # A generous wall clock, so only RLIMIT_CPU can stop the loop.
    with Sandbox(SandboxConfig(timeout=30, cpu_seconds=1)) as s:
        run = s.run("def f():\n    while True: pass\n", ["f()"])
        assert run.results[0].status == 'timeout' and 'CPU' in run.results[0].error
        assert_contained(s, run)


@needs_sandbox
def test_sleeping_code_and_slow_module(sb):
    run = sb.run("import time\ndef f():\n    time.sleep(60)\n    return 42\n", ["f()"], timeout=0.5)
    assert run.statuses == ['timeout']
    assert_contained(sb, run)
    run = sb.run("import time\ntime.sleep(60)\ndef f(): return 42\n", ["f()", "f()"], timeout=0.5)
    assert run.setup.status == 'timeout' and run.statuses == ['timeout', 'timeout']
    assert_contained(sb, run)


# --- processes and memory -------------------------------------------------------------------------------------

@needs_sandbox
def test_fork_bomb_is_stopped_at_the_process_limit(sb):
    limit = sb.config.max_procs
    flat = ("import os, time\ndef f():\n    n = 0\n    try:\n        for _ in range(200):\n"
            "            if os.fork() == 0: time.sleep(60); os._exit(0)\n            n += 1\n"
            "    except OSError as e: raise RuntimeError(f'{n} forks, then {e}')\n    return 42\n")
    run = sb.run(flat, ["f()"])
    assert run.results[0].error.startswith(f"RuntimeError: {limit} forks, then"), run.results[0]
    assert_contained(sb, run)


@needs_sandbox
def test_exponential_fork_bomb(sb):
    # Bounded even if the limit failed: 8 doublings are 256 processes. Each new process prints one line.
    bomb = ("import os, time\ndef f():\n    for _ in range(8):\n        if os.fork() == 0: print('child', flush=True)\n"
            "    time.sleep(60)\n    return 42\n")
    run = sb.run(bomb, ["f()"])
    assert run.results[0].status == 'error' and 'Resource temporarily unavailable' in run.results[0].error
    assert run.output.splitlines().count('child') <= sb.config.max_procs
    assert_contained(sb, run)


@needs_sandbox
def test_thread_bomb(sb):
    code = ("import threading, time\ndef f():\n    for _ in range(200):\n"
            "        threading.Thread(target=time.sleep, args=(60,), daemon=True).start()\n    return 42\n")
    run = sb.run(code, ["f()"])
    assert run.results[0].error.startswith('RuntimeError')
    assert_contained(sb, run)


@needs_sandbox
def test_memory_bomb(sb):
    code = ("def f():\n    return len(bytearray(10**10)) and 42\n"
            "def g():\n    blocks = []\n    while True: blocks.append(bytes(10**8))\n    return 42\n")
    run = sb.run(code, ["f()", "g()"])
    assert run.statuses == ['error', 'error'] and all('MemoryError' in r.error for r in run.results)
    assert_contained(sb, run)


@needs_sandbox
def test_memory_limit_is_configurable_and_not_absurd():
    with Sandbox(SandboxConfig(memory_mb=300)) as s:
        run = s.run("def f(mb):\n    return len(bytearray(mb << 20)) >> 20\n", ["f(50)", "f(400)"])
        assert run.results[0].value == 50 and run.results[1].status == 'error'


@needs_sandbox
def test_deep_recursion(sb):
    code = ("import sys\ndef f(n):\n    return f(n + 1) + 1\n"
            "def g(n):\n    sys.setrecursionlimit(10**7)\n    return g(n + 1) + 1\n")
    run = sb.run(code, ["f(0)", "g(0)"])
    assert run.results[0].error.startswith('RecursionError')
    assert run.results[1].status != 'ok'  # MemoryError, a timeout or a crashed process, depending on the stack
    assert_contained(sb, run)


# --- output and exits -----------------------------------------------------------------------------------------

@needs_sandbox
def test_huge_output():
    # a generous wall limit: on a loaded 2-core machine building and writing 100 MB can pass the default 1 s, and this
    # test is about the output cap, which must stop the job long before that
    code = "import os\ndef f():\n    print('x' * 10**8)\n    return 42\ndef g():\n    os.write(2, b'y' * 10**8)\n    return 42\n"
    with Sandbox(SandboxConfig(timeout=20)) as sb:
        run = sb.run(code, ["f()", "g()", "6 * 7"])
        assert run.statuses[:2] == ['output_limit', 'output_limit'] and run.results[2].value == 42
        assert run.output_truncated and len(run.output) <= 2 * sb.config.max_output_bytes
        assert not passes(run)
        assert_contained(sb, run)


@needs_sandbox
def test_exits(sb):
    code = "import os, sys\ndef f(): sys.exit(0)\ndef g(): os._exit(0)\ndef h(): raise KeyboardInterrupt\n"
    run = sb.run(code, ["f()", "g()", "h()", "6 * 7"])
    assert run.statuses == ['error', 'crash', 'error', 'ok']
    assert run.results[0].error.startswith('SystemExit')
    assert_contained(sb, run)
    run = sb.run("import sys\nsys.exit(0)\ndef f(): return 42\n", ["f()"])
    assert run.setup.status == 'error' and run.statuses == ['error']
    assert_contained(sb, run)


@needs_sandbox
def test_killing_the_parent(sb):
    launcher = sb.pids()
    code = (f"import os, signal, time\nPROJECT = {os.getpid()}\n"
            "def f():\n"
            "    for target in (os.getppid(), 1, PROJECT, -1):\n"
            "        try: os.kill(target, signal.SIGKILL)\n"
            "        except OSError: pass\n"
            "    for pid in [int(p) for p in os.listdir('/proc') if p.isdigit() and int(p) != os.getpid()]:\n"
            "        try: os.kill(pid, signal.SIGKILL)\n"
            "        except OSError: pass\n"
            "    time.sleep(0.2)\n"
            "    return 'still here'\n"
            "def g():\n    os.killpg(0, signal.SIGKILL)\n    return 42\n")
    run = sb.run(code, ["f()", "g()"])
    assert run.statuses == ['ok', 'crash'] and run.results[0].value == 'still here'
    assert_contained(sb, run, launcher)  # the same worker survived


# --- files ----------------------------------------------------------------------------------------------------

@pytest.fixture
def canary_dir():
    # In the repository, not in /tmp, so the sandbox sees it; world-writable, so that only the read-only mount
    # (not file permissions or the sandbox's uid) stands between the answer and the files.
    # A checkout under /tmp (as a CI clone may be) is not visible inside: the sandbox's /tmp is its own tmpfs.
    # Not root and a checkout under /tmp: every other writable place is hidden by the sandbox (/home, /var/tmp, ...).
    here = Path(__file__).resolve().parent
    places = [p for p in (here, Path('/var/cache')) if not str(p).startswith('/tmp/') and os.access(p, os.W_OK)]
    if not places: pytest.skip('no writable directory outside /tmp that the sandbox shows (checkout in /tmp, not root)')
    d = Path(tempfile.mkdtemp(prefix='.sandbox_canary_', dir=places[0]))
    (d / 'canary.txt').write_text('canary')
    d.chmod(0o777); (d / 'canary.txt').chmod(0o666)
    yield d
    shutil.rmtree(d)


@needs_sandbox
def test_files_outside_the_sandbox(sb, canary_dir):
    canary, host_tmp = canary_dir / 'canary.txt', f'/tmp/sweet_rl_escape_{uuid.uuid4().hex}'
    code = (f"import os\nC = {str(canary)!r}\nD = {str(canary_dir)!r}\nT = {host_tmp!r}\n"
            "def read(): return open(C).read()\n"
            "def write(): open(C, 'w').write('pwned'); return 42\n"
            "def delete(): os.remove(C); return 42\n"
            "def rename(): os.rename(C, C + '.moved'); return 42\n"
            "def chmod(): os.chmod(C, 0o777); return 42\n"
            "def create(): open(os.path.join(D, 'new.txt'), 'w').write('x'); return 42\n"
            "def etc(): open('/etc/sweet_rl_pwned', 'w').write('x'); return 42\n"
            "def symlink():\n    os.symlink(C, 'link'); open('link', 'w').write('pwned'); return 42\n"
            "def tmp(): open(T, 'w').write('x'); return 'private /tmp only'\n")
    calls = ["read()", "write()", "delete()", "rename()", "chmod()", "create()", "etc()", "symlink()", "tmp()"]
    run = sb.run(code, calls)
    assert run.results[0].value == 'canary'  # visible, read-only
    assert all(r.status == 'error' for r in run.results[1:8]), run.results
    assert run.results[8].value == 'private /tmp only'
    assert canary.read_text() == 'canary' and sorted(os.listdir(canary_dir)) == ['canary.txt']
    assert oct(canary.stat().st_mode)[-3:] != '777'
    assert not os.path.exists('/etc/sweet_rl_pwned') and not os.path.exists(host_tmp)
    assert_contained(sb, run)


@needs_sandbox
def test_nested_namespaces_cannot_make_mounts_writable(sb):
    # A job may create its own user and mount namespaces, but the read-only mounts it inherits are locked.
    code = ("import ctypes, os\nlibc = ctypes.CDLL(None, use_errno=True)\n"
            "def f():\n    libc.unshare(0x10000000 | 0x00020000)  # CLONE_NEWUSER | CLONE_NEWNS\n"
            "    for path in (b'/', b'/etc'):\n"
            "        libc.mount(None, path, None, ctypes.c_ulong(32 | 4096), None)  # MS_REMOUNT | MS_BIND, no MS_RDONLY\n"
            "    open('/etc/sweet_rl_nested', 'w').write('x')\n    return 42\n")
    run = sb.run(code, ["f()"])
    assert run.results[0].status == 'error' and 'Read-only file system' in run.results[0].error
    assert not os.path.exists('/etc/sweet_rl_nested')
    assert_contained(sb, run)


@needs_sandbox
def test_nothing_persists_between_jobs(sb):
    sb.run("import os\nopen('here.txt', 'w').write('x')\nopen('/tmp/there.txt', 'w').write('y')\n", [])
    run = sb.run("import os\ndef f(): return sorted(os.listdir('.')), sorted(os.listdir('/tmp'))\n", ["f()"])
    cwd, tmp = run.results[0].value  # its own working directory is empty, and /tmp holds only that directory
    kept = {p.split('/')[2] for p in sb.report['exposed'] if p.startswith('/tmp/')}  # read-only dirs bound back (a checkout in /tmp)
    assert cwd == [] and len(set(tmp) - kept) == 1 and (set(tmp) - kept).pop().startswith('job'), (cwd, tmp)


# --- secrets and network --------------------------------------------------------------------------------------

@needs_sandbox
def test_parent_environment_is_invisible():
    secret = f'hunter2-{uuid.uuid4().hex}'
    os.environ['SWEET_RL_TEST_SECRET'] = secret
    try:
        with Sandbox() as s:  # started after the secret was set
            code = (f"import os\nS = {secret!r}\n"
                    "def f():\n    seen = [repr(dict(os.environ))]\n"
                    "    for p in ['/proc/self/environ', '/proc/1/environ'] + [f'/proc/{d}/environ' for d in os.listdir('/proc') if d.isdigit()]:\n"
                    "        try: seen.append(open(p, 'rb').read().decode(errors='replace'))\n"
                    "        except OSError: pass\n"
                    "    return 42 if any(S in x for x in seen) else 'not found'\n")
            run = s.run(code, ["f()"])
            assert run.results[0].value == 'not found' and secret not in run.output
            assert_contained(s, run)
    finally:
        del os.environ['SWEET_RL_TEST_SECRET']


@needs_sandbox
def test_no_network(sb):
    server = socket.socket(); server.bind(('127.0.0.1', 0)); server.listen(); server.settimeout(0.3)
    port = server.getsockname()[1]
    abstract = f'\0sweet_rl_test_{uuid.uuid4().hex}'
    unix_server = socket.socket(socket.AF_UNIX); unix_server.bind(abstract); unix_server.listen()
    code = (f"import socket\nPORT = {port}\nABSTRACT = {abstract!r}\n"
            "def tcp(): socket.create_connection(('127.0.0.1', PORT), timeout=1); return 42\n"
            "def udp(): socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b'x', ('127.0.0.1', PORT)); return 42\n"
            "def unix():\n    s = socket.socket(socket.AF_UNIX); s.connect(ABSTRACT); return 42\n"
            "def dns(): return socket.gethostbyname('example.com') and 42\n")
    try:
        run = sb.run(code, ["tcp()", "udp()", "unix()", "dns()"])
        assert run.statuses == ['error'] * 4, run.results
        with pytest.raises(socket.timeout): server.accept()
    finally:
        server.close(); unix_server.close()
    assert_contained(sb, run)


# --- shells and background processes --------------------------------------------------------------------------

@needs_sandbox
def test_shell_is_contained(sb, canary_dir):
    code = (f"import os, subprocess\nD = {str(canary_dir)!r}\n"
            "def shell():\n"
            "    r = subprocess.run(['sh', '-c', f'id -u; echo pwned > {D}/shell.txt; echo pwned > /etc/shell.txt'],\n"
            "                       capture_output=True, text=True, timeout=5)\n"
            "    return 42 if os.path.exists(f'{D}/shell.txt') else r.stdout + r.stderr\n"
            "def system(): return os.system('sleep 1000 &')\n"
            "def daemon():\n    subprocess.Popen(['sleep', '1000'], start_new_session=True)\n"
            "    if os.fork() == 0: os.setsid(); os.execvp('sleep', ['sleep', '1000'])\n    return 'left running'\n")
    run = sb.run(code, ["shell()", "system()", "daemon()"])
    assert run.results[0].ok and 'Read-only file system' in run.results[0].value  # the shell ran, contained
    assert run.results[1].value == 0 and run.results[2].value == 'left running'
    assert os.listdir(canary_dir) == ['canary.txt'] and not os.path.exists('/etc/shell.txt')
    assert_contained(sb, run)  # the background sleeps were killed with the job


# --- values that try to fake a pass ---------------------------------------------------------------------------

@needs_sandbox
def test_always_equal_objects(sb):
    code = ("import os, struct\n"
            "class AlwaysEqual:\n    def __eq__(self, other): return True\n"
            "class EqualInt(int):\n    def __eq__(self, other): return True\n    __hash__ = int.__hash__\n"
            "class Sneaky:\n    def __reduce__(self): return (os.system, ('echo pwned',))\n"
            "class Lying(list):\n    def __eq__(self, other): return True\n"
            "def forged():\n"
            "    p = b'\\x80\\x04cposix\\nsystem\\n\\x8c\\x02id\\x85R.'\n"
            "    os.write(3, struct.pack('<BiI', 2, 0, len(p)) + p)  # a hand-made result frame\n    return 42\n")
    calls = ["AlwaysEqual()", "EqualInt(1)", "Sneaky()", "Lying()", "forged()"]
    for call in calls:
        run = sb.run(code, [call])
        assert run.results[0].status == 'error' and not passes(run), (call, run.results[0])
    assert 'not plain data' in sb.run(code, ["forged()"]).results[0].error
    assert_contained(sb, run)


def test_decode_value_refuses_code():
    assert decode_value(pickle.dumps({'a': [1, (2.5, None)], 'b': {3}})) == {'a': [1, (2.5, None)], 'b': {3}}
    assert decode_value(pickle.dumps(datetime.datetime(2024, 5, 1))) == datetime.datetime(2024, 5, 1)
    assert decode_value(pickle.dumps(collections.Counter('aab'))) == {'a': 2, 'b': 1}
    for bad in [pickle.dumps(os.system), b'\x80\x04cbuiltins\neval\n\x8c\x041+1\x85R.',
                b'\x80\x04cbuiltins\nbytes\nJ\x00\xe4\x0bT\x85R.', b'garbage']:
        with pytest.raises(UnsafeValue): decode_value(bad)
    assert values_equal(float('nan'), float('nan')) is False and values_equal([1, 2], [1, 2.0]) is True


# --- scheduling -----------------------------------------------------------------------------------------------

@needs_sandbox
def test_restart_and_fail_rest(sb):
    code = "import time\nstate = []\ndef f(x):\n    state.append(x)\n    if x == 0: time.sleep(60)\n    return len(state)\n"
    run = sb.run(code, ["f(1)", "f(0)", "f(2)", "f(3)"], timeout=1.0)
    assert run.statuses == ['ok', 'timeout', 'ok', 'ok'] and [r.value for r in run.results] == [1, None, 1, 2]
    with Sandbox(SandboxConfig(on_crash='fail_rest', timeout=1.0)) as s:
        assert s.run(code, ["f(1)", "f(0)", "f(2)"]).statuses == ['ok', 'timeout', 'skipped']


@needs_sandbox
def test_determinism(sb):
    code = "import random\ndef f(): return list({'apple', 'pear', 'fig', 'kiwi', 'plum'}), random.random()\n"
    a, b = sb.run(code, ["f()", "f()"]), sb.run(code, ["f()"])
    assert a.results[0].value == a.results[1].value == b.results[0].value


@needs_sandbox
def test_set_order_is_the_same_on_every_worker(sb):
    # A pool runs a reference on one worker and the answer on another: both must see the same string hashes.
    # (Each worker once had its own random hash seed, so a correct set-returning answer failed by chance.)
    code = "def f(): return [list({c * k for c in 'abcdefghijkl'}) for k in range(1, 4)]\n"
    with Sandbox() as other:
        assert other.run(code, ["f()"]).results[0].value == sb.run(code, ["f()"]).results[0].value


@needs_sandbox
def test_parallel_batch_and_no_leftovers():
    jobs = [(f"def f(x):\n    return x + {k}\n", [f"f({i})" for i in range(5)]) for k in range(12)]
    jobs[3] = ("def f(x):\n    while True: pass\n", ["f(1)"])
    with SandboxPool(n_workers=2, config=SandboxConfig(timeout=0.5)) as pool:
        runs = pool.map(jobs, progress=False)
        assert len({p for s in pool.sandboxes for p in s.pids()}) == 4  # two launchers, two workers
    assert runs[3].statuses == ['timeout']
    assert [[r.value for r in run.results] for i, run in enumerate(runs) if i != 3] == \
           [[i + k for i in range(5)] for k in range(12) if k != 3]
    assert all(s.pids() == [] for s in pool.sandboxes)
    assert run_untrusted("def f(): return 6 * 7", ["f()"]).results[0].value == 42


@needs_sandbox
def test_worker_crash_is_survived():
    with Sandbox() as s:
        os.kill(s.pids()[1], signal.SIGKILL)  # the worker itself dies (never caused by a job; simulates a bug)
        run = s.run("def f(): return 6 * 7", ["f()"])
        assert passes(run) and len(s.pids()) == 2  # a fresh worker was started


def test_config_is_checked():
    with pytest.raises(ConfigError, match='on_crash'): SandboxConfig(on_crash='ignore')
    with pytest.raises(ConfigError, match='timeout'): SandboxConfig(timeout=0)


def _is_sandbox_process(pid) -> bool:
    try: cmd = Path(f'/proc/{pid}/cmdline').read_bytes()
    except OSError: return False
    return b'_z_main()' in cmd or b'_z_serve()' in cmd  # the launcher's (setup) and the worker's (server) command lines


@needs_sandbox
def test_zz_nothing_left_behind(sb):
    # After the default pool is closed, the module's own sandbox is the only sandbox process under this test process.
    from sweet_rl.base.sandbox import _POOLS, _close_pools
    _close_pools(); _POOLS.clear()
    assert sorted(p for p in _descendants(os.getpid()) if _is_sandbox_process(p)) == sorted(sb.pids())


@needs_sandbox
def test_interpreter_under_tmp_is_kept_and_worker_stays_clean(tmp_path):
    "An interpreter or checkout under /tmp (as in a CI clone) is bound back read-only into the workspace: kept, never unclean."
    venv = tmp_path / 'venv'
    subprocess.run([sys.executable, '-m', 'venv', '--without-pip', str(venv)], check=True, timeout=120)
    site = next(venv.glob('lib/python3*/site-packages'))
    (site / 'marker_mod.py').write_text('VALUE = 7\n')
    with Sandbox(SandboxConfig(python=str(venv / 'bin' / 'python'))) as sb:
        first = sb.pids()
        for _ in range(3):
            run = sb.run('import marker_mod\ndef f(): return marker_mod.VALUE', ['f()'])
            assert run.results[0].value == 7, run
            assert sb.pids() == first  # the same worker: every job ended clean
    assert (site / 'marker_mod.py').read_text() == 'VALUE = 7\n'
