"""Does a critic trained again score stored Best-of-N states as the first one did? (Figure 3a's last run, a4baf1576f88.)

    python scripts/rescore_check.py runs/shared/critic/77bed158351a/critic results/runs/best_of_n/a4baf1576f88/sweet_no_info-n4.jsonl 2

Args: the critic folder, the archived records (scored in an earlier sitting), how many states. Prints JSON."""
import json, sys, time
from pathlib import Path
from sweet_rl.core import JsonlStore, artifact_dir
from sweet_rl.rollout import CandidatePool, RolloutConfig, env_factory, rescore_stored, rescore_summary
from sweet_rl.scorers import CriticScorer, load_critic

run = Path('runs/best_of_n/a4baf1576f88'); p = json.loads((run / 'params.json').read_text())
make_env = env_factory('backend', None, max_turns=p['max_turns'], simulator_max_new_tokens=p['simulator_max_new_tokens'])
episodes_what = {'actor': p['actor'], 'simulator': p['simulator'], 'task': 'backend',
                 'protocol': dict(max_turns=p['max_turns'], simulator_max_new_tokens=p['simulator_max_new_tokens'])}
pool = CandidatePool(16, artifact_dir('candidates', {**episodes_what, 'use': 'best_of_n'}) / 'pool.jsonl', tag=p['actor'])
critic = load_critic(sys.argv[1])
scorer = CriticScorer(critic, name='sweet_no_info')
cfg = RolloutConfig(samples_per_task=1, max_new_tokens=p['max_new_tokens'], temperature=p['temperature'], seed=p['seed'], batch_size=8, n_candidates=4)
archived = [json.loads(l) for l in Path(sys.argv[2]).read_text().splitlines()]  # records of earlier sittings (the archive)
t0 = time.time()
checks = rescore_stored(archived, make_env, pool, scorer, cfg, limit=int(sys.argv[3]))
print(json.dumps({'summary': rescore_summary(checks), 'checks': checks, 'seconds': round(time.time() - t0, 1)}, indent=1))
