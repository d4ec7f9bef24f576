"""Critic scoring of N candidate next actions after one long shared context: the cached path of
`sweet_rl.critic.score_candidates` (context run once per model, key-value cache reused) against scoring each candidate
on its own full sequence (`score_candidates_full`, batched the same way). Prints times, their ratio and the largest
score difference; not a test. Also the peak memory each path adds (resident set, sampled every 10 ms), and the cached
path with the candidates' logits projected all at once (`chunk_tokens=None`, the code before issue 14's Figure 3a
ran out of 24 GB): its time and memory against the chunked default.

    python benchmarks/critic_scoring.py                        # N=16, ~1,500-token context, ~60-token candidates
    python benchmarks/critic_scoring.py --dtype bfloat16 --json out.json
    python benchmarks/critic_scoring.py --model qwen2.5-coder-0.5b --candidate-tokens 380   # Figure 3a's answers
"""
import argparse, json, os, platform, random, threading, time

import torch
from peft import LoraConfig, get_peft_model

from sweet_rl.critic import candidate_inputs
from sweet_rl.scorers import score_candidates, score_candidates_full
from sweet_rl.models import DEFAULT_MODEL, load_model

WORDS = ('value list index count total item name key order sort filter merge split range limit default empty none '
         'string number return result input output check error case first last each every other').split()


def make_case(tok, context_tokens:int, n:int, cand_tokens:int, seed:int=0):
    "A task, history and N candidates whose sizes (in tokens of the critic input) are close to the targets."
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
    cands = [' '.join(rng.choice(WORDS) for _ in range(int(cand_tokens * 0.9))) for _ in range(n)]
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
    ap.add_argument('--batch-size', type=int, default=16, help='candidates per forward pass (both paths)')
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
    task, history, cands = make_case(tok, args.context_tokens, args.n, args.candidate_tokens)
    enc, k = candidate_inputs(tok, task, history, cands)
    lengths = enc.attention_mask.sum(-1)
    cand_len = (enc.turn_index == k).sum(-1).float()
    kw = dict(batch_size=args.batch_size)
    score_candidates(critic, tok, task, history, cands[:2], **kw)  # warm-up
    t_full, full, m_full = timed(lambda: score_candidates_full(critic, tok, task, history, cands, **kw), args.repeats)
    t_cached, cached, m_cached = timed(lambda: score_candidates(critic, tok, task, history, cands, **kw), args.repeats)
    t_whole, whole, m_whole = timed(lambda: score_candidates(critic, tok, task, history, cands, chunk_tokens=None, **kw), args.repeats)
    gb = lambda b: round(b / 2**30, 2)
    res = dict(model=args.model, dtype=args.dtype, device=str(base.device), torch_threads=torch.get_num_threads(),
               cpu=platform.processor() or platform.machine(), n_candidates=args.n,
               context_tokens=int(lengths.min() - cand_len.max()), mean_candidate_tokens=round(float(cand_len.mean()), 1),
               full_s=round(t_full, 3), cached_s=round(t_cached, 3), speedup=round(t_full / t_cached, 2),
               max_abs_diff=float((full - cached).abs().max()), target='speedup >= 5, max_abs_diff <= 1e-4',
               vocab=len(tok), full_peak_gb=gb(m_full), cached_peak_gb=gb(m_cached),
               unchunked_s=round(t_whole, 3), unchunked_peak_gb=gb(m_whole),
               chunked_vs_unchunked_time=round(t_cached / t_whole, 2), chunked_vs_unchunked_memory=round(m_cached / max(1, m_whole), 2),
               chunked_vs_unchunked_max_abs_diff=float((whole - cached).abs().max()))
    for key, v in res.items(): print(f"{key:22s} {v}")
    if args.json:
        with open(args.json, 'w') as f: json.dump(res, f, indent=2)
    return res


if __name__ == '__main__': main()
