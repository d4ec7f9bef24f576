"""Cost of sandboxing the backend evaluator.

Scores N backend tasks with their ground-truth answers (as final agent messages), three ways, in the same run:
  1. unsafe, in-process: what an unsandboxed evaluator does for the same tests. Per task: extract the answer's code,
     `exec` the reference and the answer, then for each of the 10 tests evaluate both calls under a 1 s timer
     (the paper's per-test limit) and compare with `==`. Sequential, in this process.
  2. sweet_rl's sandbox: `evaluate_batch` with an empty reference cache, as a fresh evaluation: one job per answer
     plus the jobs computing reference outputs (several references per job), parallel on all cores.
  3. the process-per-answer floor: bare `fork()` + `_exit()` of a minimal Python process, once per job of (2), on all
     cores. Any evaluator that gives each answer a fresh process pays at least this; (2) adds isolation and limits.
(1) and (2) are measured in alternation, `--repeats` pairs, and the ratio reported is the median of the per-pair ratios
(this machine's speed drifts between seconds). Prints median wall times and the ratios of (2) to (1) and to (3).
Target: (2) at most 3x (1).

Usage: python benchmarks/sandbox.py [--n 100] [--repeats 15]
"""
import argparse, json, os, signal, statistics, subprocess, sys, time
from pathlib import Path

from sweet_rl.base.data import load_tasks, sample_tasks
from sweet_rl.envs.backend import ANSWER_MARK, evaluate_batch, extract_code, _REFERENCE_CACHE, _reference_jobs
from sweet_rl.base.sandbox import default_pool

DEV = Path(os.environ.get('SWEET_RL_COLBENCH_DEV', Path(__file__).resolve().parents[2] / 'shared' / 'colbench')) / 'backend_dev.jsonl'

def load(n):
    tasks = load_tasks(DEV) if DEV.exists() else sample_tasks('backend')
    return (tasks * (n // len(tasks) + 1))[:n]

class _Timeout(Exception): pass
def _alarm(*_): raise _Timeout()

def unsafe_score(task, message:str) -> float:
    "Fraction of tests passed, computed in this process with no isolation (the unsafe path)."
    ref_ns, ans_ns = {}, {}
    exec(task.ground_truth, ref_ns)
    exec(extract_code(message, task.function_name), ans_ns)
    passed = 0
    for call in task.test_cases.values():
        signal.setitimer(signal.ITIMER_REAL, 1.0)
        try: passed += eval(call, ref_ns) == eval(call, ans_ns)
        except Exception: pass
        finally: signal.setitimer(signal.ITIMER_REAL, 0)
    return passed / len(task.test_cases)

def run_unsafe(tasks, answers):
    signal.signal(signal.SIGALRM, _alarm)
    assert all(unsafe_score(t, a) == 1.0 for t, a in zip(tasks, answers))

def run_sandbox(tasks, answers):
    _REFERENCE_CACHE.clear()  # score references and answers: two sandbox jobs per task, as a fresh evaluation does
    assert all(r.success for r in evaluate_batch(tasks, answers))

FLOOR = """import os, sys
n = int(sys.argv[1])
for _ in range(n):
    pid = os.fork()
    if pid == 0: os._exit(0)
    os.waitpid(pid, 0)
"""

def run_floor(jobs:int):
    "`jobs` bare fork+exit cycles of a minimal interpreter, split over all cores (start-up excluded by subtraction)."
    cores = os.cpu_count() or 1
    def batch(n):
        procs = [subprocess.Popen([sys.executable, '-S', '-c', FLOOR, str(n)]) for _ in range(cores)]
        for p in procs: p.wait()
    t = time.perf_counter(); batch(0); startup = time.perf_counter() - t
    t = time.perf_counter(); batch(-(-jobs // cores)); return time.perf_counter() - t - startup

def timed(fn) -> float:
    t = time.perf_counter(); fn(); return time.perf_counter() - t

if __name__ == '__main__':
    ap = argparse.ArgumentParser(); ap.add_argument('--n', type=int, default=100); ap.add_argument('--repeats', type=int, default=15)
    a = ap.parse_args()
    tasks = load(a.n)
    answers = [f"{ANSWER_MARK}\n```python\n{t.ground_truth}\n```" for t in tasks]
    default_pool().run('x = 1', ['x'])  # start the workers once, as a long evaluation would
    jobs = len(tasks) + len(_reference_jobs(tasks))  # one per answer, plus the bundled reference jobs
    pairs = [(timed(lambda: run_unsafe(tasks, answers)), timed(lambda: run_sandbox(tasks, answers))) for _ in range(a.repeats)]
    floors = [run_floor(jobs) for _ in range(5)]
    unsafe, sandbox, floor = (statistics.median(x) for x in ([u for u, _ in pairs], [s for _, s in pairs], floors))
    ratios = sorted(s / u for u, s in pairs)
    out = {'tasks': len(tasks), 'sandbox_jobs': jobs, 'cores': os.cpu_count(), 'repeats': a.repeats,
           'unsafe_inprocess_s': round(unsafe, 4), 'sandbox_s': round(sandbox, 4), 'fork_floor_s': round(floor, 4),
           'sandbox_over_unsafe': round(statistics.median(ratios), 2),
           'sandbox_over_unsafe_quartiles': [round(ratios[len(ratios) // 4], 2), round(ratios[3 * len(ratios) // 4], 2)],
           'sandbox_over_fork_floor': round(sandbox / floor, 2), 'fork_floor_over_unsafe': round(floor / unsafe, 2)}
    print(json.dumps(out, indent=2))
