"""Generation throughput of a preset with the local transformers backend: tokens/s at batch 1 and batch 8, their ratio,
and peak memory (RSS). Prints results; not a test.

    python benchmarks/generation.py                       # default preset, 64 new tokens
    python benchmarks/generation.py --model qwen2.5-coder-0.5b --new-tokens 128 --json out.json
    python benchmarks/generation.py --model qwen2.5-coder-0.5b --batches 8,16,32 --context 1500 --new-tokens 128 --repeats 2

`--batches` compares larger batches instead (the same conversations in batches of each size, sizes interleaved over
`--repeats` rounds so a busy machine slows them alike; ratios against the first size). `--context` pads each prompt with
that many tokens of earlier dialogue, as a late turn of a collaborative episode sees.
"""
import argparse, json, platform, resource, sys, time

import torch

from sweet_rl.base.models import DEFAULT_MODEL, SamplingParams, TransformersBackend, load_model

PROMPTS = ['Write a short story about a lighthouse keeper.', 'Explain how a hash table works, step by step.',
           'Describe the water cycle to a ten-year-old.', 'Write a Python function that merges two sorted lists, then explain it.',
           'List ten facts about the Moon, one per line.', 'Write a letter asking a neighbour to water your plants.',
           'Explain the difference between a list and a tuple in Python, with examples.',
           'Describe a walk through a forest in autumn.']


def peak_rss_mb() -> float:
    "Peak resident set size of this process so far, in MiB (Linux reports KiB, macOS bytes)."
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (1024 * 1024 if sys.platform == 'darwin' else 1024)


def finish(res:dict, path) -> dict:
    "Print the peak memory and the results as JSON; also write them to `path` when given."
    print(f"peak RSS: {res['peak_rss_mb']} MiB")
    print(json.dumps(res))
    if path:
        with open(path, 'w') as f: json.dump(res, f, indent=2)
    return res


def throughput(backend, convs, params, batch_size) -> dict:
    "Generate replies to `convs` in batches of `batch_size`; aggregate generated tokens per second."
    backend.batch_size = batch_size
    t0 = time.perf_counter()
    outs = backend.complete(convs, params)
    seconds = time.perf_counter() - t0
    tokens = sum(o.num_tokens for o in outs)
    return dict(batch_size=batch_size, conversations=len(convs), tokens=tokens, seconds=round(seconds, 2),
                tokens_per_s=round(tokens / seconds, 1))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--model', default=DEFAULT_MODEL, help='preset, local folder or cached hub id')
    ap.add_argument('--dtype', default='auto', help="'auto' (bf16 where the CPU supports it), 'bfloat16', 'float32'")
    ap.add_argument('--new-tokens', type=int, default=64, help='max new tokens per reply')
    ap.add_argument('--batch1-prompts', type=int, default=4, help='replies generated one at a time for the batch-1 figure')
    ap.add_argument('--threads', type=int, default=None, help='torch CPU threads (default: torch default)')
    ap.add_argument('--batches', default=None, help="comma-separated batch sizes to compare (e.g. '8,16,32') instead of batch 1 vs 8")
    ap.add_argument('--context', type=int, default=0, help='tokens of earlier dialogue before each prompt (with --batches)')
    ap.add_argument('--repeats', type=int, default=1, help='rounds over the batch sizes (with --batches)')
    ap.add_argument('--json', default=None, help='also write the results to this JSON file')
    args = ap.parse_args(argv)
    if args.threads: torch.set_num_threads(args.threads)

    t0 = time.perf_counter()
    model, tok = load_model(args.model, dtype=args.dtype)
    load_s = time.perf_counter() - t0
    backend = TransformersBackend(model, tok)
    convs = [[{'role': 'user', 'content': p}] for p in PROMPTS]
    params = SamplingParams(max_new_tokens=args.new_tokens, temperature=1.0, seed=0)
    backend.generate(convs[:2], SamplingParams(max_new_tokens=4, temperature=0))  # warm-up
    if args.batches: return compare_batches(args, backend, tok, model, load_s)

    b1 = throughput(backend, convs[:args.batch1_prompts], params, 1)
    b8 = throughput(backend, convs, params, 8)
    res = dict(model=args.model, dtype=str(model.dtype).replace('torch.', ''), device=str(model.device),
               torch_threads=torch.get_num_threads(), cpu=platform.processor() or platform.machine(),
               new_tokens=args.new_tokens, load_s=round(load_s, 2), batch1=b1, batch8=b8,
               speedup_batch8_vs_batch1=round(b8['tokens_per_s'] / b1['tokens_per_s'], 2), peak_rss_mb=round(peak_rss_mb()))

    print(f"model {res['model']} ({res['dtype']}, {res['device']}, {res['torch_threads']} threads), loaded in {res['load_s']} s")
    for b in (b1, b8):
        print(f"batch {b['batch_size']}: {b['tokens']:5d} tokens in {b['seconds']:7.2f} s = {b['tokens_per_s']:7.1f} tokens/s")
    ok = 'meets' if res['speedup_batch8_vs_batch1'] >= 4 else 'below'
    print(f"batch 8 / batch 1 aggregate throughput: {res['speedup_batch8_vs_batch1']}x ({ok} the 4x target)")
    return finish(res, args.json)


def dialogue_convs(tok, n:int, context:int) -> list:
    "`n` conversations: an earlier exchange of about `context` tokens (a request, code, a reply), then one of PROMPTS."
    filler = 'def helper(values):\n    total = 0\n    for v in values:\n        total += v * 2\n    return total\n'
    reps = max(1, context // max(1, len(tok(filler)['input_ids']))) if context else 0
    convs = []
    for i in range(n):
        earlier = ([{'role': 'user', 'content': f'I need help with a function (request {i}).'},
                    {'role': 'assistant', 'content': filler * reps}, {'role': 'user', 'content': 'Thanks, now the next part.'}]
                   if reps else [])
        convs.append(earlier + [{'role': 'user', 'content': PROMPTS[i % len(PROMPTS)]}])
    return convs


def compare_batches(args, backend, tok, model, load_s) -> dict:
    "Aggregate tokens/s of the same conversations generated in batches of each size; ratios against the first size."
    sizes = [int(b) for b in args.batches.split(',')]
    convs = dialogue_convs(tok, max(sizes), args.context)
    params = SamplingParams(max_new_tokens=args.new_tokens, temperature=1.0, seed=0)
    runs = {b: [] for b in sizes}
    for r in range(args.repeats):
        for b in (sizes if r % 2 == 0 else sizes[::-1]): runs[b].append(throughput(backend, convs, params, b))
    rate = {b: sum(x['tokens'] for x in rs) / sum(x['seconds'] for x in rs) for b, rs in runs.items()}
    res = dict(model=args.model, dtype=str(model.dtype).replace('torch.', ''), device=str(model.device),
               torch_threads=torch.get_num_threads(), cpu=platform.processor() or platform.machine(), new_tokens=args.new_tokens,
               context_tokens=args.context, conversations=len(convs), repeats=args.repeats, load_s=round(load_s, 2),
               runs={str(b): rs for b, rs in runs.items()}, tokens_per_s={str(b): round(v, 1) for b, v in rate.items()},
               ratio_vs_first={str(b): round(v / rate[sizes[0]], 2) for b, v in rate.items()}, peak_rss_mb=round(peak_rss_mb()))
    for b in sizes:
        print(f"batch {b:3d}: {rate[b]:7.1f} tokens/s over {args.repeats} round(s) = {res['ratio_vs_first'][str(b)]}x batch {sizes[0]}")
    return finish(res, args.json)


if __name__ == '__main__': main()
