"""Run every notebook under `nbdev_test`, each in its own process, two at a time, longest first: what CI runs.

    python scripts/run_notebooks.py --flags slow               # every notebook nbdev_test would run
    python scripts/run_notebooks.py --flags slow --only 25_reflect train_reflect
    python scripts/run_notebooks.py --flags slow --record      # also rewrite scripts/notebook_times.json

Record times in a clean clone: a notebook that finds its finished run under `runs/` reuses it and ends in seconds.

`nbdev_test` alone runs the notebooks in a pool of long-lived workers: each worker keeps the memory high-water mark of
every notebook it has run, and the order is alphabetical, so the longest notebook may start last. Here each notebook is a
fresh `nbdev_test --path NOTEBOOK` process (its memory goes back when it ends), the longest start first (seconds recorded
in `scripts/notebook_times.json`), and a notebook waits while the recorded peak memory of those running plus its own
would pass `--memory-gb`. Each notebook's time and peak memory are printed when it ends; a failed notebook's output is
printed in full at the end.

CI's own parameters: an experiment notebook's defaults are what a user runs, so CI does not shrink them. A notebook named
in the `smoke` scale of `studies/scales.yaml` runs with those parameters instead (injected after its parameters cell, as
`papermill -p` does, into a temporary copy `nbs/_ci_<name>.ipynb` that nbdev_test runs and that is removed after), so
`pipeline reproduce --scale smoke` and CI run the same thing.

Disk: each notebook runs with its own `TMPDIR` (a folder under this run's temporary folder), removed when the notebook
ends, so checkpoints and model copies that cells write with `tempfile` do not pile up over the run (CI's disk is not
large: one run failed with "No space left on device"). Free disk is printed with each notebook's end.
"""
import argparse, json, os, shutil, subprocess, sys, tempfile, time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TIMES = Path(__file__).with_name('notebook_times.json')


def notebooks() -> list[Path]:
    "The notebooks `nbdev_test` would test (nbdev's own glob), less those beside an `.notest` file."
    from nbdev.doclinks import nbglob
    files = sorted(nbglob(None, as_path=True))
    return [f.absolute() for f in files if not any((p / '.notest').exists() for p in f.absolute().parents if p.is_relative_to(ROOT))]


def ci_parameters(scales=None) -> dict:
    "`{notebook stem: parameters}` of the `smoke` scale: what CI runs instead of those notebooks' defaults."
    import yaml
    path = Path(scales or ROOT / 'studies' / 'scales.yaml')
    smoke = (yaml.safe_load(path.read_text()) or {}).get('smoke') or {} if path.is_file() else {}
    if not isinstance(smoke, dict) or not all(isinstance(v, dict) for v in smoke.values()):
        sys.exit(f"{path}: field 'smoke' must map notebook names to parameter mappings")
    return smoke


def with_parameters(nb:Path, params:dict) -> Path:
    "A copy of notebook `nb` beside it (`_ci_<name>.ipynb`) with `params` injected after its parameters cell, as papermill does."
    import nbformat
    from papermill.iorw import load_notebook_node
    from papermill.parameterize import parameterize_notebook
    from sweet_rl.runs.pipeline import notebook_parameters
    declared = notebook_parameters(nb)
    unknown = set(params) - set(declared)
    if unknown: sys.exit(f"studies/scales.yaml, smoke.{nb.stem}: {sorted(unknown)} are not parameters of {nb.name} (it declares {sorted(declared)})")
    out = nb.with_name(f'_ci_{nb.name}')
    nbformat.write(parameterize_notebook(load_notebook_node(str(nb)), params), out)
    return out


def memory_gb() -> float:
    "This machine's total memory in GiB."
    with open('/proc/meminfo') as f:
        kb = next(int(l.split()[1]) for l in f if l.startswith('MemTotal:'))
    return kb / 2**20


def free_gb(path=ROOT) -> float:
    "Free disk space where `path` lies, in GiB."
    return shutil.disk_usage(path).free / 2**30


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--flags', default='', help="flags passed to nbdev_test (e.g. 'slow' or 'slow gpu')")
    ap.add_argument('--jobs', type=int, default=min(os.cpu_count() or 1, 2), help='notebooks run at once')
    ap.add_argument('--memory-gb', type=float, default=None, help='memory the running notebooks may use together (recorded peaks; default: 80%% of this machine)')
    ap.add_argument('--only', nargs='*', default=None, help='notebook names (stems) to run instead of all')
    ap.add_argument('--record', action='store_true', help=f'write the measured seconds and peak memory to {TIMES.name}')
    args = ap.parse_args(argv)
    files = notebooks()
    if args.only is not None:
        unknown = set(args.only) - {f.stem for f in files}
        if unknown: sys.exit(f"unknown notebooks: {sorted(unknown)}")
        files = [f for f in files if f.stem in set(args.only)]
    if not files: print('No files were eligible for testing'); return 1
    known = json.loads(TIMES.read_text()) if TIMES.exists() else {}
    ci = ci_parameters()
    key = lambda f: str(f.relative_to(ROOT / 'nbs'))
    est = lambda f: known.get(key(f), {}).get('seconds', 60.0)
    peak = lambda f: known.get(key(f), {}).get('peak_gb', 2.0)
    budget = args.memory_gb or 0.8 * memory_gb()
    todo = sorted(files, key=lambda f: -est(f))  # longest first: the last to finish starts early
    running, results, logs, t0 = {}, {}, {}, time.time()
    env = {**os.environ, 'OMP_NUM_THREADS': os.environ.get('OMP_NUM_THREADS', '1')}
    scratch = Path(tempfile.mkdtemp(prefix='sweet_rl_notebooks_'))  # logs, and one TMPDIR per notebook
    print(f"{len(files)} notebooks, {args.jobs} at a time, memory budget {budget:.1f} GiB, {free_gb():.1f} GiB disk free", flush=True)
    while todo or running:
        # start the longest waiting notebook that fits beside those running (always one when none runs)
        while todo and len(running) < args.jobs:
            used = sum(peak(f) for f, _ in running.values())
            fit = next((f for f in todo if not running or used + peak(f) <= budget), None)
            if fit is None: break
            todo.remove(fit)
            log = logs[fit] = scratch / f"{fit.stem}.log"
            tmp = scratch / f"tmp-{fit.stem}"; tmp.mkdir()
            out = open(log, 'w')
            target = with_parameters(fit, ci[fit.stem]) if fit.stem in ci else fit
            if target != fit: print(f"{key(fit)} runs with CI's parameters {ci[fit.stem]} (studies/scales.yaml, smoke)", flush=True)
            proc = subprocess.Popen(['nbdev_test', '--path', str(target), '--flags', args.flags], stdout=out,
                                    stderr=subprocess.STDOUT, cwd=ROOT, env={**env, 'TMPDIR': str(tmp)})
            out.close()
            running[proc.pid] = (fit, time.time())
            print(f"Starting {key(fit)}", flush=True)
        pid, status, usage = os.wait4(-1, 0)  # the next notebook to end, with its own peak memory
        if pid not in running: continue
        f, start = running.pop(pid)
        f.with_name(f'_ci_{f.name}').unlink(missing_ok=True)
        left = sum(p.stat().st_size for p in (scratch / f"tmp-{f.stem}").rglob('*') if p.is_file()) / 2**30
        shutil.rmtree(scratch / f"tmp-{f.stem}", ignore_errors=True)
        rc, secs, gb = os.waitstatus_to_exitcode(status), time.time() - start, usage.ru_maxrss / 2**20
        results[f] = dict(rc=rc, seconds=round(secs, 1), peak_gb=round(gb, 2))
        print(f"- {'Completed' if rc == 0 else 'FAILED'} {key(f)}: {secs:.0f} s, peak {gb:.1f} GiB, "
              f"{left:.2f} GiB of temporary files removed, {free_gb():.1f} GiB disk free", flush=True)
    failed = [f for f, r in results.items() if r['rc'] != 0]
    for f in failed:
        print(f"=== {key(f)} failed; its output (last 200 lines) ===")
        print('\n'.join(logs[f].read_text(errors='replace').splitlines()[-200:]))
    print(f"{len(files)} notebooks in {time.time() - t0:.0f} s wall ({sum(r['seconds'] for r in results.values()):.0f} s summed); slowest:")
    for f, r in sorted(results.items(), key=lambda x: -x[1]['seconds'])[:8]: print(f"  {key(f)}: {r['seconds']:.0f} s, {r['peak_gb']:.1f} GiB")
    if args.record and not failed:
        known.update({key(f): {'seconds': r['seconds'], 'peak_gb': r['peak_gb']} for f, r in results.items()})
        TIMES.write_text(json.dumps(dict(sorted(known.items())), indent=1) + '\n')
    if not failed: shutil.rmtree(scratch, ignore_errors=True)
    else: print(f"logs kept in {scratch}")
    for f in failed:  # once more, short, at the very end: CI's report may keep only the last lines of the output
        tail = [l for l in logs[f].read_text(errors='replace').splitlines() if l.strip()][-12:]
        print(f"--- {key(f)}: the last lines of its output ---", *tail, sep='\n')
    if failed: print('FAIL: ' + ', '.join(key(f) for f in failed))
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
