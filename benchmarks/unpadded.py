"""Time of one training step's log-probabilities (forward and backward) on a right-padded batch of conversations of
different lengths, as Multi-Turn DPO and the critic see them: the padded batch run as one (`unpad=False`, what a GPU
does) against each row run on its own tokens (`unpad=True`, the CPU default of `sweet_rl.base.models.token_logprobs`).
Row lengths default to a batch drawn from the small scale's Multi-Turn DPO pairs (Qwen2.5-Coder-0.5B's own ColBench
episodes: 270 to 1,770 tokens, mean 540). Both variants run in this process, alternating, `--repeats` times each;
prints seconds, the ratio against the padded batch measured in the same run, and the largest difference of the
log-probabilities on real tokens; not a test.

    python benchmarks/unpadded.py                                   # SmolLM2-135M, 2 pairs of the small scale's lengths
    python benchmarks/unpadded.py --model qwen2.5-coder-0.5b --json benchmarks/results/unpadded_cpu.json
"""
import argparse, json, os, platform, time

import torch

# a batch of 2 Multi-Turn DPO pairs (chosen, rejected, chosen, rejected) at the small scale's median, 90th percentile and longest lengths
SMALL_SCALE_BATCH = (1770, 518, 638, 266)


def step(model, ids, mask, unpad:bool) -> tuple[float, torch.Tensor]:
    from sweet_rl.base.models import token_logprobs
    model.zero_grad(set_to_none=True)
    t0 = time.perf_counter()
    lp = token_logprobs(model, ids, mask, unpad=unpad)
    (lp * mask).sum().backward()
    return time.perf_counter() - t0, lp.detach()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--model', default='smollm2-135m')
    ap.add_argument('--lengths', default=','.join(map(str, SMALL_SCALE_BATCH)), help='tokens of each row of the batch')
    ap.add_argument('--repeats', type=int, default=3)
    ap.add_argument('--checkpointing', action='store_true', help='recompute activations in the backward pass (the small scale)')
    ap.add_argument('--json', help='also write the results here')
    args = ap.parse_args()
    from sweet_rl.base.models import add_lora, load_model
    from sweet_rl.base.train import checkpoint_activations
    torch.manual_seed(0)
    model, _ = load_model(args.model, device='cpu', dtype='float32')
    model = add_lora(model).train()
    if args.checkpointing: checkpoint_activations(model)
    lengths = [int(x) for x in args.lengths.split(',')]
    T = max(lengths)
    ids = torch.randint(0, model.config.vocab_size, (len(lengths), T))
    mask = (torch.arange(T)[None] < torch.tensor(lengths)[:, None]).long()
    step(model, ids, mask, True)  # warm-up
    times, lps = {'padded': [], 'unpadded': []}, {}
    for _ in range(args.repeats):
        for name, unpad in (('padded', False), ('unpadded', True)):
            secs, lps[name] = step(model, ids, mask, unpad)
            times[name].append(secs)
    diff = float((lps['padded'] - lps['unpadded'])[mask.bool()].abs().max())
    best = {k: min(v) for k, v in times.items()}
    print(f"{args.model} float32 LoRA{' + checkpointing' if args.checkpointing else ''}, rows of {lengths} tokens "
          f"({sum(lengths)} real of {len(lengths) * T} padded), {os.cpu_count()} CPUs, torch threads {torch.get_num_threads()}")
    print(f"{'variant':<10}{'best s':>9}{'x padded':>10}")
    for k, v in best.items(): print(f"{k:<10}{v:>9.2f}{v / best['padded']:>10.2f}")
    print(f"largest |log-prob difference| on real tokens: {diff:.2e}")
    if args.json:
        with open(args.json, 'w') as f:
            json.dump({'args': vars(args), 'python': platform.python_version(), 'torch': torch.__version__, 'seconds': times,
                       'best': best, 'ratio_unpadded': best['unpadded'] / best['padded'], 'max_abs_logprob_diff': diff}, f, indent=2)


if __name__ == '__main__':
    main()
