"""Peak memory of one training step's log-probabilities (forward and backward) for a model inside a DDP wrapper, at
Qwen's real vocabulary (151,936 tokens) with a tiny hidden size, so that the vocabulary projection is nearly all the
memory: the wrapped path as it was as it first was (`model(...).logits[:, :-1].float()` for every position,
then `log_softmax`) against `sweet_rl.base.train.policy_logprobs` today (the forward through the wrapper with one position
of logits, the backbone's hidden states projected `chunk_size` positions at a time and recomputed in the backward pass).
Each variant runs in its own process, in a one-process gloo group with the model wrapped in
`DistributedDataParallel`; peak resident memory is sampled every 5 ms and reported above the memory held once the model
is built and wrapped. Prints GB, seconds and the ratio of the two peaks measured in the same run; not a test.

    python benchmarks/wrapped_logprobs.py                                   # 1 sequence of 2,048 tokens
    python benchmarks/wrapped_logprobs.py --json benchmarks/results/wrapped_logprobs_cpu.json
"""
import argparse, json, os, platform, subprocess, sys, tempfile, threading, time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from train_memory import measure_backward  # the one peak-memory measurement both benchmarks use

VARIANTS = ('full', 'chunked')
QWEN_VOCAB = 151936  # Qwen2.5's vocabulary


def full_logprobs(model, ids, mask):
    "The wrapped path before the fix: every position's logits from the wrapper's forward, in float32."
    import torch.nn.functional as F
    from sweet_rl.base.models import gather_logprobs
    return F.pad(gather_logprobs(model(input_ids=ids, attention_mask=mask).logits[:, :-1].float(), ids[:, 1:]), (1, 0))


def child(args):
    "One variant in this process: print a JSON line with its peak memory and time."
    import torch.distributed as dist
    from transformers import Qwen2Config, Qwen2ForCausalLM
    from sweet_rl.base.train import policy_logprobs
    torch.manual_seed(0)
    cfg = Qwen2Config(vocab_size=args.vocab, hidden_size=args.hidden, intermediate_size=2 * args.hidden, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=max(4096, args.tokens),
                      tie_word_embeddings=True)
    with tempfile.TemporaryDirectory() as d:
        dist.init_process_group('gloo', store=dist.FileStore(f'{d}/store', 1), rank=0, world_size=1)
        try:
            model = torch.nn.parallel.DistributedDataParallel(Qwen2ForCausalLM(cfg).to(getattr(torch, args.dtype)))
            model.train()
            ids = torch.randint(0, args.vocab, (args.batch, args.tokens))
            mask = torch.ones_like(ids)
            fn = full_logprobs if args.variant == 'full' else policy_logprobs
            result = measure_backward(fn, model, ids, mask)
        finally: dist.destroy_process_group()
    print(json.dumps({'variant': args.variant, **result}))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--vocab', type=int, default=QWEN_VOCAB)
    ap.add_argument('--hidden', type=int, default=64, help='hidden size (tiny: the vocabulary projection dominates)')
    ap.add_argument('--dtype', default='float32', help='float32 (CPU training) or bfloat16')
    ap.add_argument('--batch', type=int, default=1, help='sequences per step')
    ap.add_argument('--tokens', type=int, default=2048, help='tokens per sequence')
    ap.add_argument('--variants', default=','.join(VARIANTS))
    ap.add_argument('--json', help='also write the results here')
    ap.add_argument('--variant', help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.variant: return child(args)
    rows = []
    for v in args.variants.split(','):
        if v not in VARIANTS: sys.exit(f"unknown variant {v!r}; choose from {VARIANTS}")
        cmd = [sys.executable, __file__, '--variant', v, '--vocab', str(args.vocab), '--hidden', str(args.hidden),
               '--dtype', args.dtype, '--batch', str(args.batch), '--tokens', str(args.tokens)]
        out = subprocess.run(cmd, capture_output=True, text=True)
        if out.returncode != 0: sys.exit(f"variant {v} failed (exit {out.returncode}):\n{out.stderr[-2000:]}")
        rows.append(json.loads(out.stdout.strip().splitlines()[-1]))
    base = rows[0]
    logits_gb = args.batch * (args.tokens - 1) * args.vocab * 4 / 2**30
    print(f"DDP (1 process, gloo), vocabulary {args.vocab}, hidden {args.hidden}, {args.dtype}, {args.batch} x {args.tokens} "
          f"tokens; one float32 [B, T-1, V] tensor is {logits_gb:.2f} GB; {os.cpu_count()} CPUs, torch threads "
          f"{os.environ.get('OMP_NUM_THREADS', 'default')}")
    print(f"{'variant':<10}{'peak GB':>9}{'x ' + base['variant']:>9}{'seconds':>9}{'|d logprob sum|':>17}{'grad rel. diff':>16}")
    for r in rows:
        r['ratio_to_' + base['variant']] = r['peak_gb'] / base['peak_gb']
        print(f"{r['variant']:<10}{r['peak_gb']:>9.2f}{r['peak_gb'] / base['peak_gb']:>9.3f}{r['seconds']:>9.1f}"
              f"{abs(r['logprob_sum'] - base['logprob_sum']):>17.2e}"
              f"{abs(r['grad_abs_sum'] - base['grad_abs_sum']) / base['grad_abs_sum']:>16.2e}")
    if args.json:
        with open(args.json, 'w') as f:
            json.dump({'args': vars(args), 'python': platform.python_version(), 'torch': torch.__version__,
                       'logits_gb': logits_gb, 'rows': rows}, f, indent=2)
            f.write('\n')


if __name__ == '__main__':
    main()
