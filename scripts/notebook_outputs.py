"""Execute the library notebooks (`nbs/NN_*.ipynb`; the tens digit is the folder: base, envs, methods, runs) in place,
so that they are committed with their outputs at smoke scale: what a reader opening one in JupyterLab or on GitHub
sees without running anything.

    python scripts/notebook_outputs.py            # every library notebook
    python scripts/notebook_outputs.py 20_critic  # some of them
    python scripts/notebook_outputs.py --check    # fail when a library notebook shows fewer than 3 outputs (what CI runs)

Cells run as `nbdev_test --flags slow` runs them: cells marked `#| eval: false`, `#| notest` or `#| gpu` (without a GPU)
are skipped and keep no output. Afterwards `nbdev_clean` strips execution counts and metadata and keeps the outputs
(`clear_all = False` in settings.ini).
"""
import argparse, os, subprocess, sys, time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NBS = ROOT / 'nbs'


def library_notebooks(names=()) -> list[Path]:
    "The library notebooks, or those named (with or without `.ipynb`)."
    found = sorted(NBS.glob('[0-9][0-9]_*.ipynb'))
    if not names: return found
    want = {Path(n).stem for n in names}
    unknown = want - {p.stem for p in found}
    if unknown: sys.exit(f"not library notebooks: {sorted(unknown)} (choose from {[p.stem for p in found]})")
    return [p for p in found if p.stem in want]


def skip_flags() -> set:
    "Flags of cells not run here: those nbdev_test skips, less `slow`; `gpu` too unless CUDA is present."
    try:
        import torch
        cuda = torch.cuda.is_available()
    except ImportError: cuda = False
    return {'notest'} | (set() if cuda else {'gpu'})


def directives(source:str) -> dict:
    "The `#| name value` lines at the top of a cell."
    out = {}
    for line in source.splitlines():
        if not line.startswith('#|'): break
        key, *rest = line[2:].split()
        out[key.rstrip(':')] = rest
    return out


def execute(path:Path):
    "Run `path` top to bottom in a fresh shell and write it back with its outputs; raise on the first error."
    from execnb.nbio import read_nb, write_nb
    from execnb.shell import CaptureShell
    from fastcore.xtras import working_directory
    nb, flags = read_nb(path), skip_flags()
    for c in nb.cells:
        if c.cell_type == 'code': c.outputs, c.execution_count = [], None

    def skip(cell) -> bool:
        if cell.cell_type != 'code': return True
        d = directives(cell.source)
        return d.get('eval', [''])[0].lower() == 'false' or bool(flags & d.keys())
    shell = CaptureShell(path)
    with working_directory(path.parent):
        shell.run_all(nb, exc_stop=True, preproc=skip)
    write_nb(nb, path)


MIN_SHOWN = 3  # cells with an output each library notebook shows a reader (a table, a plot, a run's numbers)


def check(paths) -> list[str]:
    "Library notebooks with fewer than `MIN_SHOWN` cells that show an output, and outputs that are errors."
    import json
    bad = []
    for p in paths:
        cells = [c for c in json.loads(p.read_text())['cells'] if c['cell_type'] == 'code']
        outs = [o for c in cells for o in c.get('outputs', [])]
        shown = sum(bool(c.get('outputs')) for c in cells)
        if shown < MIN_SHOWN:
            bad.append(f"{p.relative_to(ROOT)}: {shown} cells show an output, at least {MIN_SHOWN} should "
                       f"(add what a reader would look at, then run: python scripts/notebook_outputs.py {p.stem})")
        if any(o.get('output_type') == 'error' for o in outs): bad.append(f"{p.relative_to(ROOT)}: an output is an error")
    return bad


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('names', nargs='*', help='library notebooks to run (default: all)')
    ap.add_argument('--check', action='store_true', help=f'only check that every library notebook shows at least {MIN_SHOWN} outputs')
    ap.add_argument('--in-process', action='store_true', help='run the notebooks in this process (default: one process each)')
    args = ap.parse_args(argv)
    paths = library_notebooks(args.names)
    if args.check:
        bad = check(paths)
        for b in bad: print(b)
        sys.exit(1 if bad else 0)
    if args.in_process:
        for p in paths: execute(p)
        return
    os.environ.setdefault('OMP_NUM_THREADS', '2')
    for p in paths:
        t0 = time.time()
        print(f"{p.name} ...", end=' ', flush=True)
        # one process per notebook: a model a notebook leaves alive would stop the next one's launch checks (`release_models`)
        if subprocess.run([sys.executable, __file__, '--in-process', p.stem], cwd=ROOT).returncode: sys.exit(f"{p.name} failed")
        print(f"{time.time() - t0:.0f} s")
    for p in paths: subprocess.run([str(Path(sys.executable).parent / 'nbdev_clean'), '--fname', str(p)], cwd=ROOT, check=True)


if __name__ == '__main__': main()
