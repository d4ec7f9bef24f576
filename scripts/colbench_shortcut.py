"""What the small-scale ColBench SWEET critic learned: the answer-mark shortcut, measured.

Retrains the critic that Table 2's SWEET-RL row used (shared folder c852915d8dc3: 40 LoRA steps on the 56 reward-gap
pairs of 240 Qwen2.5-Coder-0.5B episodes; its weights are not committed) and rescores the 27 training states'
candidates (`results/runs/shared/candidates/4ab633d430b3`) five ways:

- `sweet`: Eq. 3 as trained (each candidate's mean log-ratio over its tokens), checked against the committed store;
- `sweet_unmarked`: the same with the answer mark's tokens left out of the mean;
- `pmi`: the frozen model's mean log p(a | o, c) - mean log p(a | o) (`scorers.PrivilegedScorer`, no training);
- `release`: the released ranker's formula, the critic's mean log p(a | o, c) minus the frozen model's mean
  log p(a | o) over the same tokens, which is `sweet + pmi` exactly (the release also counts 4 header tokens and uses
  the agent's own prompt for log p(a | o); here both terms read the critic's prompt, with and without the reference);
- `length`: the candidate's length in characters (a non-learned baseline: "the longer answer wins").

For each: the answers' scores (sign, mean, highest, Pearson with 1/length), how they order answer pairs against the
unit tests, and how often going on beats answering. Also, for 10 answers, the share of the summed per-token
log-ratio that sits on the mark's tokens. Writes `results/colbench_shortcut/` (shortcut.json, scores.jsonl,
manifest.json).

    OMP_NUM_THREADS=2 .venv/bin/python scripts/colbench_shortcut.py            # ~35 min training + ~10 min scoring on 2 cores
    OMP_NUM_THREADS=2 .venv/bin/python scripts/colbench_shortcut.py --train-only
"""
import argparse, json, statistics, sys, time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CRITIC_ID, CANDIDATES_ID, STORE_ID, ROLLOUTS_ID = 'c852915d8dc3', '4ab633d430b3', '222c3ec6d421', 'aaaa945341fc'
ARCHIVE = ROOT / 'results' / 'runs' / 'shared'


def trajectories():
    "The 240 offline episodes in the order the critic saw them (the rollout queue: task, then sample)."
    from sweet_rl.base.core import stable_id
    from sweet_rl.base.data import read_jsonl, sample_tasks
    rows = [r for _, r in read_jsonl(ARCHIVE / 'rollouts' / ROLLOUTS_ID / 'trajectories.jsonl')]
    order = {stable_id(t.to_dict()): i for i, t in enumerate(sample_tasks('backend', 'extra')[:60])}
    return sorted(rows, key=lambda r: (order[stable_id(r['task'])], r['sample']))


def critic(runs_dir=None, progress=True):
    "The critic of shared folder `CRITIC_ID`, trained in `runs/` once (its settings from the archive), then loaded."
    from sweet_rl.methods.critic import CriticConfig, PairConfig, shared_critic, shared_critic_dir
    saved = json.loads((ARCHIVE / 'critic' / CRITIC_ID / 'params.json').read_text())
    config, pairs, trajs = CriticConfig(**saved['config']), PairConfig(**saved['pairs']), trajectories()
    folder = shared_critic_dir(config, trajs, pairs, saved['max_steps'], runs_dir)
    if folder.name != CRITIC_ID: sys.exit(f"the critic's settings now name folder {folder.name}, not {CRITIC_ID}: the code moved on")
    return shared_critic(config, trajs, pairs, saved['max_steps'], runs_dir, progress=progress)


def mark_tokens(tokenizer, ids:list, text:str) -> int:
    "How many leading tokens it takes to cover the answer mark (a token that runs on past it counts: 'ANSWER:Certainly'); 0 without one."
    from sweet_rl.base.data import ANSWER_MARK
    if not text.lstrip().startswith(ANSWER_MARK): return 0
    return next(m for m in range(1, len(ids) + 1) if tokenizer.decode(ids[:m]).strip().startswith(ANSWER_MARK))


def token_terms(critic, scorer, record) -> list[dict]:
    """Per candidate of one state: its tokens' log-probs under the trained critic with the reference, the frozen model
    with it and without it, and how many leading tokens spell the answer mark."""
    from sweet_rl.methods.critic import candidate_inputs
    from sweet_rl.methods.scorers import PrivilegedScorer
    from sweet_rl.base.train import frozen_reference
    task, history, cands = record['task'], record['history'], [c if isinstance(c, str) else c['content'] for c in record['candidates']]
    tokenizer = critic.tokenizer
    enc, k = candidate_inputs(tokenizer, task, history, cands, True)
    mark = [mark_tokens(tokenizer, enc.input_ids[i][enc.turn_index[i] == k].tolist(), t) for i, t in enumerate(cands)]
    theta = scorer.candidate_logprobs(task, history, cands, True)
    with frozen_reference(critic.model, critic.ref_model) as ref:  # the critic with its adapter off (or its frozen copy): pi_ref
        frozen = PrivilegedScorer(ref, tokenizer)
        ref_c, ref_o = frozen.candidate_logprobs(task, history, cands, True), frozen.candidate_logprobs(task, history, cands, False)
    return [{'theta': a, 'ref_c': b, 'ref_o': c, 'mark': n, 'text': t} for a, b, c, n, t in zip(theta, ref_c, ref_o, mark, cands)]


def scores_of(terms:dict) -> dict:
    "The five scores of one candidate from its token terms (`token_terms`)."
    ratio, n = terms['theta'] - terms['ref_c'], terms['mark']
    pmi = float(terms['ref_c'].mean() - terms['ref_o'].mean())
    sweet = float(ratio.mean())
    return {'sweet': sweet, 'sweet_unmarked': float(ratio[n:].mean()) if len(ratio) > n else sweet, 'pmi': pmi,
            'release': float(terms['theta'].mean() - terms['ref_o'].mean()), 'length': float(len(terms['text'])),
            'mark_share': float(ratio[:n].sum() / ratio.sum()) if n and float(ratio.sum()) != 0 else None}


SCORERS = ('sweet', 'sweet_unmarked', 'pmi', 'release', 'length')


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--train-only', action='store_true', help='train (or find) the critic and stop')
    ap.add_argument('--out', default=str(ROOT / 'results' / 'colbench_shortcut'))
    ap.add_argument('--limit', type=int, default=0, help='score only this many states (a quick check)')
    a = ap.parse_args()
    t0 = time.time()
    crit = critic()
    print(f"critic ready in {time.time() - t0:.0f} s")
    if a.train_only: return
    import torch
    from sweet_rl.base.core import atomic_write_text, read_jsonl, seed_everything, write_manifest
    from sweet_rl.runs.evaluate import answer_scores, ranking_check
    from sweet_rl.methods.scorers import PrivilegedScorer
    from tqdm.auto import tqdm
    seed_everything(0)
    cand_dir = ARCHIVE / 'candidates' / CANDIDATES_ID
    records = [r for _, r in read_jsonl(cand_dir / 'candidates.jsonl')][:a.limit or None]
    rewards = {r['id']: r['rewards'] for _, r in read_jsonl(cand_dir / 'rewards.jsonl')}
    committed = {r['record']: r['scores'] for _, r in read_jsonl(ARCHIVE / 'scores' / STORE_ID / 'scores.jsonl')}
    scorer = PrivilegedScorer(crit.model, crit.tokenizer)  # only its per-token log-probs are used (adapter on or off)
    from sweet_rl.base.core import JsonlStore
    outdir = Path(a.out); outdir.mkdir(parents=True, exist_ok=True)
    store = JsonlStore(outdir / 'scores.jsonl')  # one line per state as it is scored: a rerun resumes
    done, t1 = {r['id']: r for r in store}, time.time()
    with torch.inference_mode():
        for rec in tqdm([r for r in records if r['id'] not in done], desc='states'):
            per = [scores_of(t) for t in token_terms(crit, scorer, rec)]
            row = {'id': rec['id'], 'rewards': rewards[rec['id']], 'committed_sweet': committed.get(rec['id']),
                   **{k: [p[k] for p in per] for k in (*SCORERS, 'mark_share')}}
            store.append(row); done[rec['id']] = row
    rows = [done[r['id']] for r in records]
    score_s = time.time() - t1
    rw = [r['rewards'] for r in rows]
    out = {}
    for name in SCORERS:
        sc = [r[name] for r in rows]
        out[name] = {**answer_scores(records, sc, rw, seed=0),
                     **{k: v for k, v in ranking_check(records, sc, rw, seed=0).items() if k.startswith('continue_preference')}}
    mine = [x for r in rows for x in r['sweet']]
    theirs = [x for r in rows if r['committed_sweet'] for x in r['committed_sweet']]
    import statistics as st
    shares = [s for r in rows for s, w in zip(r['mark_share'], r['rewards']) if w is not None and s is not None]
    summary = {
        'states': len(rows), 'candidates': len(mine), 'critic': CRITIC_ID, 'candidates_store': CANDIDATES_ID,
        'retrained_vs_committed': {'pearson': st.correlation(mine, theirs) if len(theirs) == len(mine) else None,
                                   'max_abs_diff': max(abs(x - y) for x, y in zip(mine, theirs)) if len(theirs) == len(mine) else None},
        'mark_share_of_answer_log_ratio': {'answers': len(shares), 'median': st.median(shares) if shares else None,
                                           'above_half': sum(s > 0.5 for s in shares)},
        'scorers': out, 'train_and_load_s': round(t1 - t0), 'score_s': round(score_s),
    }
    atomic_write_text(outdir / 'shortcut.json', json.dumps(summary, indent=2) + '\n')
    write_manifest(outdir, 0, script='scripts/colbench_shortcut.py')
    print(json.dumps({k: v for k, v in summary.items() if k != 'scorers'}, indent=1))
    for name, m in out.items():
        g = lambda k: 'n/a' if m.get(k) is None else f"{m[k]:.3g}"  # None where a state has too few answers to say
        print(f"{name:15s} answers<0 {m['answers_below_zero']}/{m['answers']} mean {g('answer_score_mean')} max {g('answer_score_max')}"
              f" corr(1/len) {g('answer_inv_length_corr')} agree {g('answer_agreement')} going-on {g('continue_preference')}")


if __name__ == '__main__':
    main()
