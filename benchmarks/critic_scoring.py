"""Critic scoring of N candidate next actions after one long shared context: the cached path of
`sweet_rl.methods.scorers.score_candidates` (context run once per model, key-value cache reused) against scoring each candidate
on its own full sequence (`score_candidates_full`, batched the same way). Prints times, their ratio and the largest
score difference; not a test. Also the peak memory each path adds (resident set, sampled every 10 ms), and the cached
path with the candidates' logits projected all at once (`chunk_tokens=None`, the code before the small scale's Figure 3a
ran out of 24 GB): its time and memory against the chunked default. And the candidates run one at a time on their own
tokens (`unpad=True`, the CPU default since Figure 3a's N = 16 runs) against padded batches: with `--length-spread`,
candidate lengths vary as Best-of-N's do (questions and answers of one state).

    python benchmarks/critic_scoring.py                        # N=16, ~1,500-token context, ~60-token candidates
    python benchmarks/critic_scoring.py --dtype bfloat16 --json out.json
    python benchmarks/critic_scoring.py --model qwen2.5-coder-0.5b --candidate-tokens 380   # Figure 3a's answers
    python benchmarks/critic_scoring.py --model qwen2.5-coder-0.5b --candidate-tokens 380 --length-spread 0.9 \
        --paths padded,unpadded --threads 1                     # padding: a state's 30-token questions beside 380-token answers
"""
import argparse, json, os, platform, random, threading, time

import torch
from peft import LoraConfig, get_peft_model

from sweet_rl.methods.critic import candidate_inputs
from sweet_rl.methods.scorers import score_candidates, score_candidates_full
from sweet_rl.base.models import DEFAULT_MODEL, load_model

WORDS = ('value list index count total item name key order sort filter merge split range limit default empty none '
         'string number return result input output check error case first last each every other').split()


def make_case(tok, context_tokens:int, n:int, cand_tokens:int, seed:int=0, spread:float=0.0):
    "A task, history and N candidates whose sizes (in tokens of the critic input) are close to the targets (each drawn from `(1 - spread, 1]` of it)."
    rng = random.Random(seed)
    words = lambda k: ' '.join(rng.choice(WORDS) for _ in range(k))
    ref = '\n'.join(f"    {rng.choice(WORDS)}_{i} = {rng.choice(WORDS)}({rng.choice(WORDS)}, {i})" for i in range(400))
    task = {'problem_description': 'Write process(items) that ' + words(30) + '.', 'ground_truth': 'def process(items):\n' + ref}
    history = []
    for t in range(3):
        history += [{'role': 'assistant', 'content': 'Question: ' + words(40) + '?'}, {'role': 'user', 'content': words(60)}]
    lines = task['ground_truth'].split('\n')
    def size(k):  # critic-input tokens before the candidate with the first k reference lines
        task['ground_truth'] = '\n'.join(lines[:k])
        enc, _ = candidate_inputs(tok, task, history, ["x"])
        return int(enc.attention_mask.sum())
    lo, hi = 2, len(lines)  # largest k whose context stays within the target
    while lo < hi:
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if size(mid) <= context_tokens else (lo, mid - 1)
    task['ground_truth'] = '\n'.join(lines[:lo])
    cands = [' '.join(rng.choice(WORDS) for _ in range(max(1, int(cand_tokens * 0.9 * (1 - spread * rng.random()))))) for _ in range(n)]
    return task, history, cands


def rss() -> int:
    "Resident set size of this process, bytes (Linux)."
    with open('/proc/self/statm') as f: return int(f.read().split()[1]) * os.sysconf('SC_PAGE_SIZE')


def timed(fn, repeats:int):
    "Best time of `repeats` calls, the last call's result, and the most memory any call added above where it started."
    best, added = float('inf'), 0
    for _ in range(repeats):
        start, peak, done = rss(), [0], threading.Event()
        def watch():
            while not done.is_set(): peak[0] = max(peak[0], rss()); time.sleep(0.01)
        w = threading.Thread(target=watch, daemon=True); w.start()
        t0 = time.perf_counter(); out = fn(); best = min(best, time.perf_counter() - t0)
        done.set(); w.join(); added = max(added, peak[0] - start)
    return best, out, added


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--model', default=DEFAULT_MODEL)
    ap.add_argument('--dtype', default='float32', help="'float32' (default; the equality check), 'bfloat16', 'auto'")
    ap.add_argument('--n', type=int, default=16, help='candidates')
    ap.add_argument('--context-tokens', type=int, default=1500)
    ap.add_argument('--candidate-tokens', type=int, default=60)
    ap.add_argument('--length-spread', type=float, default=0.0, help='candidate lengths uniform in (1 - spread, 1] of --candidate-tokens')
    ap.add_argument('--paths', default='full,cached,unchunked,padded,unpadded',
                    help='which to time: full sequences, cached (default options), cached unchunked, cached padded batches, cached one at a time')
    ap.add_argument('--batch-size', type=int, default=16, help='candidates per forward pass (every batched path)')
    ap.add_argument('--repeats', type=int, default=2, help='best of this many timings per path')
    ap.add_argument('--threads', type=int, default=None)
    ap.add_argument('--json', default=None)
    args = ap.parse_args(argv)
    if args.threads: torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    base, tok = load_model(args.model, dtype=args.dtype, device='cuda' if torch.cuda.is_available() else 'cpu')
    critic = get_peft_model(base, LoraConfig(r=16, lora_alpha=32, target_modules=['q_proj', 'k_proj', 'v_proj', 'o_proj'],
                                             lora_dropout=0.0)).eval()
    with torch.no_grad():  # a trained-looking adapter, so policy and reference differ
        for name, p in critic.named_parameters():
            if 'lora_B' in name: p.normal_(0, 0.02)
    task, history, cands = make_case(tok, args.context_tokens, args.n, args.candidate_tokens, spread=args.length_spread)
    enc, k = candidate_inputs(tok, task, history, cands)
    lengths = enc.attention_mask.sum(-1)
    cand_len = (enc.turn_index == k).sum(-1).float()
    kw = dict(batch_size=args.batch_size)
    score_candidates(critic, tok, task, history, cands[:2], **kw)  # warm-up
    paths = {'full': lambda: score_candidates_full(critic, tok, task, history, cands, **kw),
             'cached': lambda: score_candidates(critic, tok, task, history, cands, **kw),
             'unchunked': lambda: score_candidates(critic, tok, task, history, cands, chunk_tokens=None, **kw),
             'padded': lambda: score_candidates(critic, tok, task, history, cands, unpad=False, **kw),
             'unpadded': lambda: score_candidates(critic, tok, task, history, cands, unpad=True, **kw)}
    asked = [p.strip() for p in args.paths.split(',') if p.strip()]
    if bad := [p for p in asked if p not in paths]: ap.error(f"unknown --paths {bad}; choose from {list(paths)}")
    t, out, mem = {}, {}, {}
    for p in asked: t[p], out[p], mem[p] = timed(paths[p], args.repeats)
    gb = lambda b: round(b / 2**30, 2)
    res = dict(model=args.model, dtype=args.dtype, device=str(base.device), torch_threads=torch.get_num_threads(),
               cpu=platform.processor() or platform.machine(), n_candidates=args.n, vocab=len(tok),
               context_tokens=int(lengths.min() - cand_len.max()), mean_candidate_tokens=round(float(cand_len.mean()), 1),
               max_candidate_tokens=int(cand_len.max()), length_spread=args.length_spread)
    for p in asked: res |= {f'{p}_s': round(t[p], 3), f'{p}_peak_gb': gb(mem[p])}
    def compare(a, b, name, time_key='time'):  # `a` against `b`: time ratio, memory ratio, largest score difference
        if a in t and b in t:
            res.update({f'{name}_{time_key}': round(t[a] / t[b], 2), f'{name}_memory': round(mem[a] / max(1, mem[b]), 2),
                        f'{name}_max_abs_diff': float((out[a] - out[b]).abs().max())})
    if 'full' in t and 'cached' in t:
        res |= dict(speedup=round(t['full'] / t['cached'], 2), max_abs_diff=float((out['full'] - out['cached']).abs().max()),
                    target='speedup >= 5, max_abs_diff <= 1e-4')
    compare('cached', 'unchunked', 'chunked_vs_unchunked')
    compare('unpadded', 'padded', 'unpadded_vs_padded')
    if 'unpadded' in out and 'padded' in out: res['same_choice'] = int(out['unpadded'].argmax()) == int(out['padded'].argmax())
    for key, v in res.items(): print(f"{key:22s} {v}")
    if args.json:
        with open(args.json, 'w') as f: json.dump(res, f, indent=2)
    return res


if __name__ == '__main__': main()
