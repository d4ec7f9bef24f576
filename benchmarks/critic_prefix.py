"""Critic training throughput with each pair's shared prefix run once (`CriticConfig.share_prefix`: each pair packed into one
sequence, the prefix once and then each trajectory's own tokens under an attention mask that keeps them apart;
`sweet_rl.methods.critic.shared_prefix_logprobs`) against both full sequences (the path before it), in the same run:
pair-steps per second of one training step's loss, forward and backward (policy with gradients, frozen reference
without), the two paths interleaved step by step; plus the loss and gradient differences between them. Pairs are shaped
like the clarify testbed's: the critic prompt with the request and the reference (~150 tokens) is shared, then each
trajectory has 20-60 tokens of its own; `--prefix-tokens 600` gives a longer shared prefix (a ColBench-sized
reference). Wall-clock and CPU-time ratios are both printed: on a machine shared with other work the CPU time of this
process moves less. Not a test.

    python benchmarks/critic_prefix.py                                  # SmolLM2-135M, LoRA, float32, 150-token prefix, 1 pair a step
    python benchmarks/critic_prefix.py --prefix-tokens 600 --batch-size 4 --json out.json
"""
import argparse, json, platform, random, statistics, time
from types import SimpleNamespace

import torch

from sweet_rl.methods.critic import Critic, CriticConfig, _pair_batch, encode_critic_inputs, pair_loss, pair_prefix_lengths

WORDS = ('value list index count total item name key order sort filter merge split range limit default empty none '
         'string number return result input output check error case first last each every other').split()


def make_pair(tok, prefix_tokens:int, rng:random.Random, own:tuple=(20, 60)) -> dict:
    "A chosen and a rejected trajectory of one task: a shared critic input of about `prefix_tokens`, then 20-60 tokens each."
    words = lambda k: ' '.join(rng.choice(WORDS) for _ in range(k))
    request = f"Write process(items) that {words(12)}."
    lines = [f"    {rng.choice(WORDS)} = {i}\n" for i in range(1000)]  # short lines: the prefix lands within a few tokens of the target
    n_own = [rng.randint(*own) for _ in range(2)]
    texts = (f"Should {words(n_own[0] - 2)}?", f"I WANT TO ANSWER: {words(n_own[1] - 5)}")

    def pair(n_lines:int) -> dict:  # the reference holds the first `n_lines` lines
        task = {'problem_description': request, 'ground_truth': 'def process(items):\n' + ''.join(lines[:n_lines])}
        chosen, rejected = ({'task': task, 'dialogue_history': [{'role': 'assistant', 'content': t}], 'reward': r}
                            for t, r in zip(texts, (1.0, 0.0)))
        return {'chosen': chosen, 'rejected': rejected}

    def shared(p:dict) -> int:
        enc = encode_critic_inputs(tok, [p['chosen'], p['rejected']])
        return int(pair_prefix_lengths(enc.input_ids, enc.attention_mask)[0])

    lo, hi = 0, len(lines)  # the most reference lines that keep the shared prefix within the target
    while lo < hi:
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if shared(pair(mid)) <= prefix_tokens else (lo, mid - 1)
    return pair(lo)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--model', default='smollm2-135m')
    ap.add_argument('--dtype', default='float32')
    ap.add_argument('--prefix-tokens', type=int, default=150, help='shared prefix of each pair (critic prompt with the reference)')
    ap.add_argument('--batch-size', type=int, default=1, help='pairs per step (the credit study trains at 1)')
    ap.add_argument('--steps', type=int, default=6, help='timed steps per path (different batches), interleaved')
    ap.add_argument('--normalization', default='paper')
    ap.add_argument('--threads', type=int, default=None)
    ap.add_argument('--seed', type=int, default=0)
    ap.add_argument('--json', default=None)
    args = ap.parse_args(argv)
    if args.threads: torch.set_num_threads(args.threads)
    device = 'cuda' if torch.cuda.is_available() else 'cpu'
    critic = Critic.build(CriticConfig(model=args.model, dtype=args.dtype), device)  # LoRA r=16 on every projection
    g = torch.Generator().manual_seed(args.seed)
    with torch.no_grad():  # a trained-looking adapter: policy and reference differ
        for name, p in critic.model.named_parameters():
            if 'lora_B' in name: p.copy_((torch.randn(p.shape, generator=g) * 0.02).to(p))
    model, tok = critic.model.train(), critic.tokenizer
    rng = random.Random(args.seed)
    batches = []
    for _ in range(args.steps + 1):  # the first is the warm-up and the exactness check
        pairs = [make_pair(tok, args.prefix_tokens - rng.randrange(10), rng) for _ in range(args.batch_size)]
        batches.append({k: v.to(device) for k, v in critic.collator()(pairs).items()})
    stub = SimpleNamespace(processing_class=tok, ref_model=critic.ref_model, note=lambda **stats: None)  # what `pair_loss` reads of a trainer
    trainable = [p for p in model.parameters() if p.requires_grad]

    def step(batch, share:bool, normalization:str=args.normalization):
        model.zero_grad(set_to_none=True)
        out = pair_loss(stub, model, batch, 0.1, 0.01, normalization, share_prefix=share)
        out.loss.backward()
        return out.loss.item(), torch.cat([p.grad.flatten() for p in trainable])

    exact = {}
    for norm in ('paper', 'release'):
        (l0, g0), (l1, g1) = step(batches[0], False, norm), step(batches[0], True, norm)
        exact |= {f'{norm}_loss_abs_diff': abs(l0 - l1), f'{norm}_grad_max_abs_diff': float((g0 - g1).abs().max()),
                  f'{norm}_grad_max_abs': float(g0.abs().max())}
    times, cpu = {False: [], True: []}, {False: [], True: []}  # wall clock; CPU time of this process (less moved by other load on the machine)
    for i, batch in enumerate(batches[1:]):
        for share in ((False, True) if i % 2 == 0 else (True, False)):  # alternate which path goes first
            if device == 'cuda': torch.cuda.synchronize()
            t0, c0 = time.perf_counter(), time.process_time()
            step(batch, share)
            if device == 'cuda': torch.cuda.synchronize()
            times[share].append(time.perf_counter() - t0); cpu[share].append(time.process_time() - c0)
    ids, mask, turn, B = _pair_batch(batches[1], tok.pad_token_id)
    P, L = pair_prefix_lengths(ids, mask), mask.sum(-1)
    full_s, shared_s = statistics.median(times[False]), statistics.median(times[True])
    res = dict(model=args.model, dtype=args.dtype, device=torch.cuda.get_device_name() if device == 'cuda' else platform.processor() or 'cpu',
               torch_threads=torch.get_num_threads(), batch_pairs=args.batch_size, steps=args.steps,
               shared_prefix_tokens=P.tolist(), own_tokens=(L - P.repeat(2)).tolist(),
               full_s_per_step=round(full_s, 3), shared_s_per_step=round(shared_s, 3),
               full_pair_steps_per_s=round(args.batch_size / full_s, 3), shared_pair_steps_per_s=round(args.batch_size / shared_s, 3),
               speedup=round(full_s / shared_s, 2),
               cpu_time_speedup=round(statistics.median(cpu[False]) / statistics.median(cpu[True]), 2), **exact, target='speedup >= 1.7, loss diff <= 1e-4')
    for key, v in res.items(): print(f"{key:26s} {v}")
    if args.json:
        with open(args.json, 'w') as f: json.dump(res, f, indent=2)
    return res


if __name__ == '__main__': main()
