"""The oracle-path check: each trained model's advice (reflection models) or greedy action (policies) at the states of
held-out episodes that follow the oracle throughout, so the memory holds only right moves: the states an obeying
policy must get right, one after the other, to succeed. Run from the repository root:
    python results/reflect/oracle-path/oracle_path.py RUNS_ROOT OUT_DIR
RUNS_ROOT holds the run folders named in CHECKS, with their weights. Checks already in OUT_DIR/oracle_path.json are skipped."""
import json, sys, time
from dataclasses import replace
from pathlib import Path
from sweet_rl.base.core import write_jsonl, atomic_write_text, read_jsonl
from sweet_rl.methods.reflect import (ReflectConfig, ReflectionModel, ReflectPolicy, Reflector, advice_check, action_check,
                                      heldout_states)

root, out = Path(sys.argv[1]), Path(sys.argv[2]); out.mkdir(parents=True, exist_ok=True)
N = 128
CHECKS = [('reflection', 'reflect-advice-gonogo'), ('reflection', 'reflect-refl-qwen05'),
          ('policy', 'reflect-map-smollm'), ('policy', 'reflect-map-qwen05'), ('policy', 'reflect-map-qwen05-mem0'),
          ('policy', 'reflect-map-qwen05-p05'), ('policy', 'reflect-map-qwen05-p00'),
          ('policy', 'reflect-map-qwen05-p00-300'), ('policy', 'reflect-map-qwen05-p02-300')]
done = out / 'oracle_path.json'
summary = json.loads(done.read_text()) if done.is_file() else {}
for kind, name in CHECKS:
    if name in summary: continue
    t0, run = time.perf_counter(), root / name
    config = ReflectConfig.load(run / 'reflect_config.json')
    oracle = replace(config, p_random=0.0)  # the same test seeds, every action the oracle's
    states, seen = heldout_states(oracle, N), {e['state'] for _, e in read_jsonl(run / 'reflection_data.jsonl')}
    if kind == 'reflection':
        rm = ReflectionModel.load(run / 'reflection', 'cpu')
        s, rows = advice_check(Reflector(rm.model.requires_grad_(False), rm.tokenizer, config.reflection_tokens, cache=False), config, states, seen)
        key = 'advice'
    else:
        p = ReflectPolicy.load(run / 'policy_sft', 'cpu')
        s, rows = action_check(p.model, p.tokenizer, config, states, None, seen); key = 'action'
    episodes = {}
    for r in rows: episodes.setdefault(r['seed'], []).append(r[key] == r['oracle'])
    first = [r for r, e in zip(rows, states) if not e['memory']]
    later = [r for r, e in zip(rows, states) if e['memory']]
    s.update(first_states=len(first), right_first=round(sum(r[key] == r['oracle'] for r in first) / len(first), 4),
             later_states=len(later), right_after_a_right_move=round(sum(r[key] == r['oracle'] for r in later) / len(later), 4),
             episodes=len(episodes), episodes_all_right=sum(all(v) for v in episodes.values()), seconds=round(time.perf_counter() - t0, 1),
             model=getattr(config, 'reflection_model' if kind == 'reflection' else 'model'), kind=kind, run=name)
    summary[name] = s
    write_jsonl(out / f'{name.removeprefix("reflect-")}.jsonl', rows)
    print(json.dumps(s), flush=True)
    atomic_write_text(done, json.dumps(summary, indent=1) + '\n')  # after each check: an interrupted run resumes
