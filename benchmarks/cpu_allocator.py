"""Time of a CPU training step under different memory allocators. On a 2-core CPU the small scale's DPO steps spent
about a fifth of their time in the kernel: 302 million minor page faults in 90 minutes, as large activation tensors
are freshly mapped (and zero-filled) at every step and returned at its end. Each variant runs the same steps in its own
process (the allocator is chosen at process start):

- `default`: glibc malloc, as every run so far;
- `thp`: PyTorch's own switch `THP_MEM_ALLOC_ENABLE=1` (2 MB-aligned CPU tensors, advised to use transparent huge
  pages, so one fault maps 512 pages);
- `jemalloc` / `tcmalloc`: the Debian allocators `libjemalloc2` / `libtcmalloc-minimal4` through `LD_PRELOAD`, which
  keep freed memory for the next step (skipped when not installed).

A step: LoRA forward and backward of `token_logprobs` over `--batch` sequences of `--tokens` tokens with activation
recomputation (the small scale's setting). Variants alternate over `--rounds` rounds, so a drift of the machine's speed
hits all of them. Prints seconds per step (median after a warm-up step), user and system CPU seconds and minor faults
per step, and the ratio of each variant's step time to `default` measured in the same run; not a test.

    python benchmarks/cpu_allocator.py                                   # Qwen2.5-Coder-0.5B, 2 x 1,024 tokens
    python benchmarks/cpu_allocator.py --model smollm2-135m --steps 3    # a quick look
"""
import argparse, json, os, platform, resource, statistics, subprocess, sys, time
from pathlib import Path

from sweet_rl.runs.pipeline import system_library

LIBS = {'jemalloc': 'libjemalloc.so.2', 'tcmalloc': 'libtcmalloc_minimal.so.4'}
def variant_env(variant:str) -> dict|None:
    "The environment of a variant's process, or None when its allocator is not installed."
    env = {k: v for k, v in os.environ.items() if k not in ('LD_PRELOAD', 'THP_MEM_ALLOC_ENABLE')}
    if variant == 'thp': env['THP_MEM_ALLOC_ENABLE'] = '1'
    elif variant in LIBS:
        lib = system_library(LIBS[variant])
        if lib is None: return None
        env['LD_PRELOAD'] = lib
    return env


def child(args):
    "Run the steps in this process; print one JSON line per step."
    import torch
    from sweet_rl.base.models import add_lora, load_model, token_logprobs
    from sweet_rl.base.train import checkpoint_activations
    torch.manual_seed(0)
    model, _ = load_model(args.model, device='cpu', dtype='float32')
    model = checkpoint_activations(add_lora(model))
    model.train()
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-5)
    ids = torch.randint(0, model.config.vocab_size, (args.batch, args.tokens))
    mask = torch.ones_like(ids)
    for step in range(args.steps):
        r0, t0 = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
        loss = -token_logprobs(model, ids, mask).mean()
        loss.backward(); opt.step(); opt.zero_grad(set_to_none=True)
        secs, r1 = time.perf_counter() - t0, resource.getrusage(resource.RUSAGE_SELF)
        print(json.dumps({'step': step, 'seconds': secs, 'user': r1.ru_utime - r0.ru_utime, 'sys': r1.ru_stime - r0.ru_stime,
                          'minflt': r1.ru_minflt - r0.ru_minflt, 'loss': float(loss)}), flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--model', default='qwen2.5-coder-0.5b')
    ap.add_argument('--batch', type=int, default=2)
    ap.add_argument('--tokens', type=int, default=1024)
    ap.add_argument('--steps', type=int, default=4, help='steps per process; the first is a warm-up and not counted')
    ap.add_argument('--rounds', type=int, default=2, help='processes per variant, alternating between variants')
    ap.add_argument('--variants', default='default,thp,jemalloc,tcmalloc')
    ap.add_argument('--out', default='', help='also write the record to this JSON file')
    ap.add_argument('--child', action='store_true', help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child: return child(args)
    variants = [v.strip() for v in args.variants.split(',') if v.strip()]
    unknown = set(variants) - {'default', 'thp', *LIBS}
    if unknown: sys.exit(f"unknown variants {sorted(unknown)}: choose from default, thp, {', '.join(LIBS)}")
    if 'default' not in variants: sys.exit("--variants must include 'default' (the baseline of the ratios)")
    envs = {v: variant_env(v) for v in variants}
    for v in [v for v in variants if envs[v] is None]: print(f"{v}: {LIBS[v]} not installed, skipped (apt install lib{v}...)")
    variants = [v for v in variants if envs[v] is not None]
    steps = {v: [] for v in variants}
    cmd = [sys.executable, __file__, '--child', '--model', args.model, '--batch', str(args.batch), '--tokens', str(args.tokens),
           '--steps', str(args.steps)]
    for r in range(args.rounds):
        for v in variants:
            out = subprocess.run(cmd, env=envs[v], capture_output=True, text=True)
            if out.returncode: sys.exit(f"{v} failed (exit {out.returncode}):\n{out.stderr[-3000:]}")
            rows = [json.loads(l) for l in out.stdout.splitlines() if l.startswith('{')]
            steps[v] += rows[1:]  # the first step of a process warms up
            print(f"round {r + 1} {v}: " + ', '.join(f"{x['seconds']:.1f}s" for x in rows), flush=True)
    summary = {}
    for v in variants:
        med = lambda k: statistics.median(x[k] for x in steps[v])
        summary[v] = {'seconds': med('seconds'), 'user': med('user'), 'sys': med('sys'), 'minflt': med('minflt'),
                      'n_steps': len(steps[v])}
    base = summary['default']['seconds']
    print(f"\n{args.model}, {args.batch} x {args.tokens} tokens, LoRA + activation recomputation, "
          f"{os.environ.get('OMP_NUM_THREADS', 'all')} threads; median of {args.rounds} x {args.steps - 1} steps")
    print(f"{'variant':10} {'s/step':>8} {'user s':>8} {'sys s':>8} {'minor faults':>13} {'time / default':>15}")
    for v, s in summary.items():
        s['ratio'] = s['seconds'] / base
        print(f"{v:10} {s['seconds']:8.2f} {s['user']:8.2f} {s['sys']:8.2f} {s['minflt']:13,.0f} {s['ratio']:15.2f}")
    if args.out:
        import torch
        record = {'args': {k: v for k, v in vars(args).items() if k != 'child'}, 'summary': summary, 'steps': steps,
                  'torch': torch.__version__, 'python': platform.python_version(), 'cpu': platform.processor() or platform.machine(),
                  'cores': os.cpu_count(), 'command': ' '.join(sys.argv)}
        Path(args.out).write_text(json.dumps(record, indent=1) + '\n')


if __name__ == '__main__':
    main()
