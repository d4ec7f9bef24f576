"""Peak memory of one training step's log-probabilities (forward and backward) on a LoRA-wrapped causal LM: the
vocabulary projection as it was as it first was (chunks of positions projected, but every chunk's float32 logits
and log-softmax kept for the backward pass) against `sweet_rl.base.models.token_logprobs` today (each chunk recomputed in
the backward pass, only the hidden states kept), with and without activation recomputation in the transformer.
Each variant runs in its own process; peak resident memory is sampled every 5 ms and reported above the memory held
after loading the model. Prints GB, seconds and ratios against the old path measured in the same run; not a test.

    python benchmarks/train_memory.py                          # Qwen2.5-Coder-0.5B, 2 sequences of 1,024 tokens
    python benchmarks/train_memory.py --batch 4 --tokens 1770  # the small scale's critic step (2 pairs) that ran out of memory
"""
import argparse, json, os, platform, subprocess, sys, threading, time

import torch

VARIANTS = ('before', 'after', 'after+checkpointing')


def rss_gb() -> float:
    with open('/proc/self/status') as f:
        for line in f:
            if line.startswith('VmRSS:'): return int(line.split()[1]) / 2**20
    raise RuntimeError('no VmRSS in /proc/self/status')


def measure_backward(fn, model, ids, mask) -> dict:
    "Run `fn(model, ids, mask).sum().backward()` once: peak resident memory above the start (GiB), seconds, and checksums."
    base, peak, done = rss_gb(), [0.0], threading.Event()
    def watch():
        while not done.is_set(): peak[0] = max(peak[0], rss_gb()); time.sleep(0.005)
    t = threading.Thread(target=watch, daemon=True); t.start()
    t0 = time.perf_counter()
    lp = fn(model, ids, mask)
    lp.sum().backward()
    secs = time.perf_counter() - t0
    done.set(); t.join()
    grad = sum(float(p.grad.double().abs().sum()) for p in model.parameters() if p.grad is not None)
    return {'peak_gb': peak[0] - base, 'loaded_gb': base, 'seconds': secs, 'logprob_sum': float(lp.double().sum()), 'grad_abs_sum': grad}


def old_token_logprobs(model, ids, mask, chunk_size=256):
    "The projection before the fix: chunked, but each chunk's logits and log-softmax stay alive until the backward pass."
    import torch.nn.functional as F
    from sweet_rl.base.models import causal_lm, gather_logprobs
    lm = causal_lm(model)
    hidden = lm.base_model(input_ids=ids, attention_mask=mask).last_hidden_state[:, :-1]
    head, targets = lm.get_output_embeddings(), ids[:, 1:]
    parts = [gather_logprobs(head(hidden[:, s:s + chunk_size]).float(), targets[:, s:s + chunk_size])
             for s in range(0, hidden.shape[1], chunk_size)]
    return F.pad(torch.cat(parts, 1), (1, 0))


def child(args):
    "One variant in this process: print a JSON line with its peak memory and time."
    from sweet_rl.base.models import add_lora, load_model, token_logprobs
    from sweet_rl.base.train import checkpoint_activations
    torch.manual_seed(0)
    model, _ = load_model(args.model, device='cpu', dtype=args.dtype)
    model = add_lora(model)
    model.train()
    if args.variant == 'after+checkpointing': checkpoint_activations(model)
    ids = torch.randint(0, model.config.vocab_size, (args.batch, args.tokens))
    mask = torch.ones_like(ids)
    fn = old_token_logprobs if args.variant == 'before' else token_logprobs
    print(json.dumps({'variant': args.variant, **measure_backward(fn, model, ids, mask)}))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--model', default='qwen2.5-coder-0.5b')
    ap.add_argument('--dtype', default='float32', help='float32 (CPU training) or bfloat16')
    ap.add_argument('--batch', type=int, default=2, help='sequences per step')
    ap.add_argument('--tokens', type=int, default=1024, help='tokens per sequence')
    ap.add_argument('--variants', default=','.join(VARIANTS))
    ap.add_argument('--json', help='also write the results here')
    ap.add_argument('--variant', help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.variant: return child(args)
    rows = []
    for v in args.variants.split(','):
        if v not in VARIANTS: sys.exit(f"unknown variant {v!r}; choose from {VARIANTS}")
        cmd = [sys.executable, __file__, '--variant', v, '--model', args.model, '--dtype', args.dtype,
               '--batch', str(args.batch), '--tokens', str(args.tokens)]
        out = subprocess.run(cmd, capture_output=True, text=True)
        if out.returncode != 0: sys.exit(f"variant {v} failed (exit {out.returncode}):\n{out.stderr[-2000:]}")
        rows.append(json.loads(out.stdout.strip().splitlines()[-1]))
    base = rows[0]
    print(f"{args.model} {args.dtype}, {args.batch} x {args.tokens} tokens, {os.cpu_count()} CPUs, torch threads "
          f"{os.environ.get('OMP_NUM_THREADS', 'default')}")
    print(f"{'variant':<22}{'peak GB':>9}{'x ' + base['variant']:>14}{'seconds':>9}{'x time':>8}{'|d logprob sum|':>17}{'grad rel. diff':>16}")
    for r in rows:
        print(f"{r['variant']:<22}{r['peak_gb']:>9.2f}{r['peak_gb'] / base['peak_gb']:>14.2f}{r['seconds']:>9.1f}"
              f"{r['seconds'] / base['seconds']:>8.2f}{abs(r['logprob_sum'] - base['logprob_sum']):>17.2e}"
              f"{abs(r['grad_abs_sum'] - base['grad_abs_sum']) / base['grad_abs_sum']:>16.2e}")
    if args.json:
        with open(args.json, 'w') as f:
            json.dump({'args': vars(args), 'python': platform.python_version(), 'rows': rows}, f, indent=2)


if __name__ == '__main__':
    main()
