"The committed paper tables and figures are exactly what the committed results render to, and docs/results.md shows them."
import re
from pathlib import Path

from sweet_rl.runs.evaluate import pending_runs
from sweet_rl.runs.pipeline import (ARTIFACTS, FIGURES_DIR, PACKED, PAPER_NBS_DIR, RESULTS_DIR, ROOT, notebook_path, RESULTS_PAGE,
                               render_artifacts, results_section)


def test_every_artifact_has_committed_results():
    "The re-rendering checks below need every artifact's results: a missing CSV is a failure, never a silent skip."
    missing = [a for a in ARTIFACTS if not (RESULTS_DIR / f'{a}.csv').is_file()]
    assert not missing, f"no committed results for {missing}: run `make reproduce SCALE=small` (or collect the study) and commit"


def test_rerendering_committed_results_is_byte_identical(tmp_path):
    out = tmp_path / 'figures'
    render_artifacts(RESULTS_DIR, out, runs_dir=tmp_path / 'runs')
    made = sorted(p.name for p in out.iterdir())
    committed = sorted(p.name for p in FIGURES_DIR.iterdir() if p.name != 'README.md')
    assert made == committed, (made, committed)
    different = [n for n in made if (out / n).read_bytes() != (FIGURES_DIR / n).read_bytes()]
    # PDFs embed a font subset that fontTools writes: an unpinned fontTools release changes those bytes (4.69 did), so
    # settings.ini pins it beside matplotlib; a failure on PDFs alone points at those two versions first.
    assert not different, f"re-rendered files differ from the committed ones: {different}"


STILL_PLAIN = ()  # folders a running study is writing: `pipeline pack` them once it has finished


def test_committed_logs_are_compressed():
    "results/ keeps per-episode logs and executed notebooks gzip-compressed (results/README.md), headers without a name or a time."
    plain = [p.relative_to(RESULTS_DIR).as_posix() for p in sorted(RESULTS_DIR.rglob('*')) if p.is_file() and p.suffix in PACKED]
    plain = [p for p in plain if not p.startswith(STILL_PLAIN)]
    assert not plain, f"plain logs under results/: run `python -m sweet_rl.runs.pipeline pack <folder>` and commit: {plain[:5]}"
    packed = sorted(RESULTS_DIR.rglob('*.gz'))
    assert len(packed) > 400, len(packed)  # the committed runs' logs, which the re-rendering above reads
    headers = {p.read_bytes()[:10] for p in packed}  # magic, method, flags (no FNAME), mtime 0, extra flags, OS
    assert all(h[3] & 0x08 == 0 and h[4:8] == bytes(4) for h in headers), headers


def test_results_page_is_current():
    assert results_section() in RESULTS_PAGE.read_text(), "run `python -m sweet_rl.runs.pipeline results-page` and commit"


def test_every_artifact_has_a_notebook_and_a_study():
    for a in ARTIFACTS:
        assert (ROOT / 'nbs' / 'paper' / f'{a}.ipynb').is_file() and (ROOT / 'studies' / f'{a}.yaml').is_file(), a
        assert notebook_path(a) == PAPER_NBS_DIR / f'{a}.ipynb' and not (ROOT / 'nbs' / f'{a}.ipynb').exists(), a


def test_a_relative_figures_dir_is_taken_from_the_working_directory(tmp_path, monkeypatch):
    "The notebooks run in their own folder; a relative `figures_dir` must still mean the caller's folder."
    monkeypatch.chdir(tmp_path)
    files = render_artifacts(RESULTS_DIR, 'figs', ['table4'], runs_dir=tmp_path / 'runs')
    assert files and {f.parent for f in files} == {tmp_path / 'figs'}, files
    assert not (PAPER_NBS_DIR / 'figs').exists()


def test_an_unfinished_run_shows_its_critic_check(tmp_path):
    "Table 3 fills a run's critic columns from its critic check while its actor still trains (collect --partial keeps it)."
    import pandas as pd
    results, out = tmp_path / 'results', tmp_path / 'figures'
    results.mkdir()
    table, tasks = pd.read_csv(RESULTS_DIR / 'table3.csv'), pd.read_csv(RESULTS_DIR / 'table3_tasks.csv')
    sweet = table[(table['param.method'] == 'sweet') & (table['param.critic_head'] == 'sweet') & table['param.critic_use_hidden_info']
                  & (table['param.critic_normalization'] == 'paper')]
    assert sweet['run'].nunique() == 1, sweet['run'].tolist()
    run = sweet['run'].iloc[0]
    check = {'answer_agreement': 0.625, 'answer_agreement_lo': 0.5, 'answer_agreement_hi': 0.75, 'continue_preference': 0.25,
             'continue_preference_lo': 0.125, 'continue_preference_hi': 0.375, 'states': 9, 'answer_candidates': 30,
             'answers_passing_any': 4, 'taught_pairs': 11, 'taught_continue_over_answer': 1, 'taught_answer_over_continue': 2,
             'taught_continue_over_continue': 3, 'taught_answer_over_answer': 5, 'taught_better_answer': 4, 'taught_worse_answer': 1}
    row = {**sweet.iloc[0][['study', 'scale', 'run', 'notebook']].to_dict(),
           **sweet.iloc[0][[c for c in sweet if c.startswith('param.')]].to_dict(), **{f'metric.critic_{k}': v for k, v in check.items()}}
    others = pending_runs(RESULTS_DIR, 'table3')
    pd.concat([others, pd.DataFrame([row])], ignore_index=True).to_csv(results / 'table3_pending.csv', index=False)
    table[table['run'] != run].to_csv(results / 'table3.csv', index=False)
    tasks[tasks['run'] != run].to_csv(results / 'table3_tasks.csv', index=False)
    render_artifacts(results, out, ['table3'], runs_dir=tmp_path / 'runs')
    md = (out / 'table3.md').read_text()
    line = next(l for l in md.splitlines() if l.startswith('| SWEET-RL |'))
    assert line.count('pending') == 3 and '62.5 [50.0, 75.0]' in line and '25.0 [12.5, 37.5]' in line, line
    assert "SWEET-RL's critic on its 9 training states: 30 of the candidates are final answers, 4 of them pass a test" in md
    early = re.search(r'the critic columns of (.+?) come from their critic checks', md)
    assert early and 'SWEET-RL' in early.group(1).split(', '), md


def test_figure3b_shows_pending_sizes_and_the_trend_with_data(tmp_path):
    "Figure 3b says 'pending' for a data size still training, and compares a method's largest amount of data with its smallest."
    import pandas as pd
    results, out = tmp_path / 'results', tmp_path / 'figures'
    results.mkdir()
    table, tasks = pd.read_csv(RESULTS_DIR / 'figure3b.csv'), pd.read_csv(RESULTS_DIR / 'figure3b_tasks.csv')
    trained = table[(table['notebook'] == 'train_actor') & (table['label'] == 'trained')]
    mtdpo = trained[trained['param.method'] == 'mtdpo'].sort_values('metric.n_offline_trajectories').iloc[-1]
    sweet = trained[trained['param.method'] == 'sweet'].sort_values('metric.n_offline_trajectories').iloc[-1]
    small = int(trained['metric.n_offline_trajectories'].min()) // 4  # a size below every committed one
    fake = mtdpo.copy()  # Multi-Turn DPO on less data that passes every test
    fake[['run', 'param.n_trajectories', 'metric.n_offline_trajectories']] = ['fake', small, small]
    fake[['tests_passed_pct', 'tests_passed_pct_lo', 'tests_passed_pct_hi']] = [100.0, 100.0, 100.0]
    fake_tasks = tasks[tasks['run'] == mtdpo['run']].assign(run='fake', tests_passed=1.0)
    pd.concat([table, fake.to_frame().T], ignore_index=True).to_csv(results / 'figure3b.csv', index=False)
    pd.concat([tasks, fake_tasks], ignore_index=True).to_csv(results / 'figure3b_tasks.csv', index=False)
    waiting = {**sweet[['study', 'scale', 'notebook']].to_dict(), 'run': 'waiting',
               **sweet[[c for c in sweet.index if c.startswith('param.')]].to_dict(), 'param.n_trajectories': small}
    pd.DataFrame([waiting]).to_csv(results / 'figure3b_pending.csv', index=False)
    render_artifacts(results, out, ['figure3b'], runs_dir=tmp_path / 'runs')
    md = (out / 'figure3b.md').read_text()
    head = next(l for l in md.splitlines() if l.startswith('| method |'))
    assert head.split(' | ')[1].startswith(f'{small} traj.'), head
    line = next(l for l in md.splitlines() if l.startswith('| SWEET-RL |'))
    assert line.split(' | ')[1] == 'pending', line
    pct = re.escape(f"{mtdpo['tests_passed_pct']:.1f}")
    large = int(mtdpo['metric.n_offline_trajectories'])
    assert re.search(rf"Multi-Turn DPO passes 100\.0% of tests with {small} \([\d.]+ agent turns\), (.+, )?{pct}% of tests with {large} \(", md), md
    assert 'with the most data it is below itself with the least' in md, md
    assert 'run pending (waiting)' in md, md


def test_figure3a_joins_one_run_per_scorer_and_shows_the_pending_ones(tmp_path):
    "Figure 3a from one run per scorer (the small scale): finished scorers plotted with a verdict on N, the others 'pending'."
    import pandas as pd
    results, out = tmp_path / 'results', tmp_path / 'figures'
    results.mkdir()
    table, tasks = pd.read_csv(RESULTS_DIR / 'figure3a.csv'), pd.read_csv(RESULTS_DIR / 'figure3a_tasks.csv')
    # two finished scorers made from the committed rows of one scorer (whichever has finished), relabelled: the
    # rendering is under test here, not the numbers
    first = table['label'].str.split('@').str[0].iloc[0]
    mine, mine_tasks = table[table['label'].str.startswith(f'{first}@')], tasks[tasks['label'].str.startswith(f'{first}@')]
    relabel = lambda df, n: df.assign(run=f'run-{n}', label=df['label'].str.replace(f'{first}@', f'{n}@', regex=False))
    split = pd.concat([relabel(mine, n).assign(**{'param.scorers': n}) for n in ['sweet', 'judge']], ignore_index=True)
    split_tasks = pd.concat([relabel(mine_tasks, n) for n in ['sweet', 'judge']], ignore_index=True)
    split.to_csv(results / 'figure3a.csv', index=False); split_tasks.to_csv(results / 'figure3a_tasks.csv', index=False)
    one = table.iloc[0]
    waiting = [{**one[['study', 'scale', 'notebook']].to_dict(), **one[[c for c in one.index if c.startswith('param.')]].to_dict(),
                'run': f'run-{n}', 'param.scorers': n} for n in ['value', 'sweet_no_info']]
    pd.DataFrame(waiting).to_csv(results / 'figure3a_pending.csv', index=False)
    render_artifacts(results, out, ['figure3a'], runs_dir=tmp_path / 'runs')
    md = (out / 'figure3a.md').read_text()
    rows = {l.split(' | ')[0].strip('| '): l for l in md.splitlines() if l.startswith('| ') and not l.startswith('| scorer') and '---' not in l}
    assert sorted(rows) == ['LLM-as-a-judge', 'SWEET-RL', 'SWEET-RL w/o train-time info', 'value function'], rows
    assert rows['value function'].split(' | ')[1] == 'pending' and rows['SWEET-RL'].split(' | ')[1] != 'pending', rows
    assert re.search(r'SWEET-RL at N = \d+ is (above|below|not separable from) N = 1 in tests passed \([+-][\d.]+ \[', md), md
    # the two relabelled scorers made the same choices, so the scorers' comparison at the largest N is a tie
    assert re.search(r'at N = \d+ SWEET-RL is not separable from LLM-as-a-judge \(\+0\.0 \[0\.0, 0\.0\] points over \d+ tasks\)', md), md
    turns = ', '.join(f'{v:.2f}' for v in mine.assign(n=mine['label'].str.split('@').str[1].astype(int)).sort_values('n')['agent_turns'])
    assert f'LLM-as-a-judge {turns} (' in md and f'; SWEET-RL {turns} (' in md, md
    assert 'Still running: value function, SWEET-RL w/o train-time info' in md or 'Still running: SWEET-RL w/o train-time info, value function' in md, md
    assert 'runs pending' in md, md
    assert (out / 'figure3a.png').is_file()


def test_mtgrpo_renders_while_runs_are_pending(tmp_path):
    """Collected part-way (`collect --partial`): the search table lists each seed, 'pending' for runs still to come, and counts
    the paper's finding over the seeds where both modes finished; the ColBench table shows MT-GRPO as 'pending'."""
    import shutil
    import pandas as pd
    results, out = tmp_path / 'results', tmp_path / 'figures'
    shutil.copytree(RESULTS_DIR, results, ignore=shutil.ignore_patterns('runs'))
    # search: GRPO-OR with seeds 0 and 1 and MT-GRPO seed 0 (the committed GRPO-OR seed 0 run, copied), exact match set to
    # 10 [5, 15] for GRPO-OR and 50 [40, 60] for MT-GRPO; GRPO-MR pending
    search, curves = pd.read_csv(RESULTS_DIR / 'mtgrpo.csv'), pd.read_csv(RESULTS_DIR / 'mtgrpo_curves.csv')
    or_run = search.loc[(search['param.mode'] == 'or') & (search['param.seed'] == 0), 'run'].iloc[0]
    cols = ['exact_match_pct', 'exact_match_pct_lo', 'exact_match_pct_hi']
    first = search[search['run'] == or_run].astype({c: float for c in cols})
    first.loc[first['label'] == 'trained', cols] = [10.0, 5.0, 15.0]
    mt = first.assign(run='mt-seed0', **{'param.mode': 'mt'})
    mt.loc[mt['label'] == 'trained', cols] = [50.0, 40.0, 60.0]
    second = first.assign(run='or-seed1', **{'param.seed': 1})
    pd.concat([first, second, mt]).to_csv(results / 'mtgrpo.csv', index=False)
    copies = [curves[curves['run'] == or_run].assign(run=r) for r in ('or-seed1', 'mt-seed0')]
    pd.concat([curves[curves['run'] == or_run], *copies]).to_csv(results / 'mtgrpo_curves.csv', index=False)
    steps = int(first['metric.train_steps'].iloc[0])
    pd.DataFrame([{'study': 'mtgrpo', 'scale': 'small', 'run': f'{m}-{s}', 'notebook': 'train_mtgrpo', 'param.env': 'search',
                   'param.mode': m, 'param.seed': s} for m, s in [('mr', 0), ('mr', 1), ('mt', 1)]]).to_csv(results / 'mtgrpo_pending.csv', index=False)
    base = {'study': 'mtgrpo_colbench', 'scale': 'small', 'run': 'or-run', 'notebook': 'train_mtgrpo', 'commit': 'abc1234567',
            'dirty': False, 'param.env': 'backend', 'param.mode': 'or', 'param.model': 'qwen2.5-coder-0.5b', 'param.steps': 10,
            'param.batch_size': 2, 'param.group_size': 4, 'param.lr': 1e-5, 'param.max_turns': 5, 'metric.train_steps': 10,
            'n_tasks': 2, 'n_episodes': 2}
    def row(label, passed): return {**base, 'label': label, **{f'{m}{s}': v for m, v in [('tests_passed_pct', passed), ('success_pct', 0.0),
                                                                                        ('agent_turns', 1.5)] for s, v in [('', v), ('_lo', v), ('_hi', v)]}}
    pd.DataFrame([row('zero_shot', 10.0), row('trained', 20.0)]).to_csv(results / 'mtgrpo_colbench.csv', index=False)
    pd.DataFrame([{'run': 'or-run', 'label': l, 'task_id': f't{t}', 'tests_passed': x} for l, xs in [('zero_shot', [0.1, 0.1]), ('trained', [0.2, 0.2])]
                  for t, x in enumerate(xs)]).to_csv(results / 'mtgrpo_colbench_tasks.csv', index=False)
    pd.DataFrame({'run': 'or-run', 'step': [1, 2, 3, 4], 'reward_tests_passed': [0.0, 0.125, 0.0, 0.25],
                  'advantage_abs': [0.0, 0.4, 0.0, 0.3]}).to_csv(results / 'mtgrpo_colbench_curves.csv', index=False)
    pd.DataFrame([{**{k: base[k] for k in ('study', 'scale', 'notebook', 'param.env', 'param.model')}, 'run': 'mt-run',
                   'param.mode': 'mt'}]).to_csv(results / 'mtgrpo_colbench_pending.csv', index=False)
    render_artifacts(results, out, ['mtgrpo'], runs_dir=tmp_path / 'runs')
    md = (out / 'mtgrpo.md').read_text()
    rows = {l.split(' | ')[0].lstrip('| '): l.split(' | ')[1:] for l in md.splitlines() if l.startswith('| ') and ', seed ' in l.split(' | ')[0]}
    assert [k for k in rows] == ['GRPO-OR, seed 0', 'GRPO-OR, seed 1', 'GRPO-MR, seed 0', 'GRPO-MR, seed 1', 'MT-GRPO, seed 0', 'MT-GRPO, seed 1'], rows
    assert rows['GRPO-MR, seed 0'][0] == 'pending' and rows['MT-GRPO, seed 0'][3] == '50.0 [40.0, 60.0]', rows
    assert 'seeds 0, 1' in md and f'- GRPO-OR, seed 1, by quarter of its {steps} steps: tool execution ' in md, md
    assert "MT-GRPO above GRPO-OR on held-out exact match in 1 of 1 seeds" in md, md
    assert 'Still running: GRPO-MR (seeds 0, 1); MT-GRPO (seed 1)' in md and '3 runs pending (mr-0, mr-1, mt-1)' in md, md
    line = next(l for l in md.splitlines() if l.startswith('| MT-GRPO (+ SWEET critic turn reward)'))
    assert line.split(' | ')[1] == 'pending', line
    assert next(l for l in md.splitlines() if l.startswith('| GRPO-OR (tests passed only)')).split(' | ')[1].startswith('20.0'), md
    assert 'Still running: MT-GRPO (+ SWEET critic turn reward)' in md and 'run pending (mt-run)' in md, md
    assert ('Training, GRPO-OR (tests passed only): the sampled episodes passed 0.0% of tests at the first step and 12.5% over the '
            'last 3; in 2 of 4 steps every advantage was zero (each group\'s episodes earned the same reward): a zero gradient') in md, md
    assert '- Tests passed: GRPO-OR 20.0 [20.0, 20.0] is above zero-shot (before training) 10.0 [10.0, 10.0] (+10.0 [10.0, 10.0] points over 2 tasks).' in md, md


def _jsonl_gz(path):
    "The records of a committed `.jsonl.gz` log, read with gzip and json alone (no `sweet_rl` reader)."
    import gzip, json
    with gzip.open(path, 'rt') as f: return [json.loads(l) for l in f if l.strip()]


def _state_share_ci(per_state, n_boot=2000, seed=1):
    "Mean over states of each state's share, and a 95% percentile bootstrap over states (our own resampling, not the renderer's)."
    import random, statistics
    rng = random.Random(seed)
    means = sorted(statistics.fmean(rng.choices(per_state, k=len(per_state))) for _ in range(n_boot))
    return statistics.fmean(per_state), means[int(0.025 * n_boot)], means[int(0.975 * n_boot) - 1]


def _sweet_critic_answers(results):
    """Table 3's SWEET-RL critic, recomputed from its committed per-state scores and the candidates' test rewards: its scores
    on the final answers, and how it and a longer-answer rule order answer pairs the tests tell apart (per state, ties half)."""
    import csv, json, statistics
    row = next(r for r in csv.DictReader((results / 'table3.csv').open()) if r['param.method'] == 'sweet' and r['param.critic_head'] == 'sweet'
               and r['param.critic_use_hidden_info'] == 'True' and r['param.critic_normalization'] == 'paper' and r['label'] == 'trained')
    shared, found = results / 'runs' / 'shared', []
    for p in sorted((shared / 'scores').glob('*/params.json')):
        store = json.loads(p.read_text())
        critic = json.loads((shared / 'critic' / store['critic'] / 'params.json').read_text())
        cands = shared / 'candidates' / store['candidates']
        if ((critic['config']['head'], critic['config']['normalization'], critic['config']['use_hidden_info'], critic['n_trajectories'])
                == ('sweet', 'paper', True, int(float(row['metric.n_offline_trajectories'])))
                and json.loads((cands / 'params.json').read_text())['policy'] == row['param.model']): found.append((p.parent, cands))
    assert len(found) == 1, found
    store, cands = found[0]
    scores = {r['record']: r['scores'] for r in _jsonl_gz(store / 'scores.jsonl.gz')}
    rewards = {r['id']: r['rewards'] for r in _jsonl_gz(cands / 'rewards.jsonl.gz')}
    lengths = {r['id']: [len(c if isinstance(c, str) else c['content']) for c in r['candidates']] for r in _jsonl_gz(cands / 'candidates.jsonl.gz')}
    ids = [i for i in scores if i in rewards]
    answers = [(x, n, r) for i in ids for x, n, r in zip(scores[i], lengths[i], rewards[i]) if r is not None]
    xs = [x for x, _, _ in answers]
    def agreement(value):  # per state: the share of answer pairs with different rewards that `value` orders as the tests do
        per_state = []
        for i in ids:
            a = [(value[i][k], r) for k, r in enumerate(rewards[i]) if r is not None]
            hits = [1.0 if (x1 - x2) * (r1 - r2) > 0 else 0.5 if x1 == x2 else 0.0 for k, (x1, r1) in enumerate(a) for x2, r2 in a[k + 1:] if r1 != r2]
            if hits: per_state.append((statistics.fmean(hits), len(hits)))
        return _state_share_ci([s for s, _ in per_state]) + (sum(n for _, n in per_state), len(per_state))
    return {'answers': len(xs), 'below_zero': sum(x < 0 for x in xs), 'passing': sum(r > 0 for _, _, r in answers),
            'passing_below_zero': sum(x < 0 and r > 0 for x, _, r in answers), 'mean': statistics.fmean(xs), 'max': max(xs),
            'inv_length_corr': statistics.correlation(xs, [1 / max(n, 1) for _, n, _ in answers]),
            'critic_agreement': agreement(scores), 'length_agreement': agreement(lengths)}


def _shortcut_from_scores(results):
    "The answer-mark measurement recomputed from `colbench_shortcut/scores.jsonl.gz`: the mark's share of each answer, answers below zero without it."
    import statistics
    rows = _jsonl_gz(results / 'colbench_shortcut' / 'scores.jsonl.gz')
    shares = [s for r in rows for s, x in zip(r['mark_share'], r['rewards']) if x is not None and s is not None]
    unmarked = [s for r in rows for s, x in zip(r['sweet_unmarked'], r['rewards']) if x is not None]
    return {'states': len(rows), 'median_share': statistics.median(shares), 'above_half': sum(s > 0.5 for s in shares), 'shares': len(shares),
            'unmarked_below_zero': sum(s < 0 for s in unmarked), 'answers': len(unmarked)}


def _value_first_turns(results):
    "Figure 3a's value function: its first-turn scores in the committed Best-of-N logs (lowest, highest, largest spread within a state)."
    import csv
    run = {r['label']: r['run'] for r in csv.DictReader((results / 'figure3a.csv').open())}['value@16']
    logs = sorted((results / 'runs' / 'best_of_n' / run).glob('value-n*.jsonl.gz'))
    firsts = [next(b['scores'] for b in r['bon'] if b['turn'] == 0) for p in logs for r in _jsonl_gz(p)]
    assert logs and firsts, run
    return min(map(min, firsts)), max(map(max, firsts)), max(max(s) - min(s) for s in firsts)


def _paired_points(results, study, better, worse):
    "Per-task tests passed of `better` less `worse` (points) from `<study>_tasks.csv`, its mean and our own 95% bootstrap interval over tasks."
    import csv
    passed = {}
    for r in csv.DictReader((results / f'{study}_tasks.csv').open()): passed.setdefault(r['label'], {})[r['task_id']] = 100 * float(r['tests_passed'])
    return _state_share_ci([passed[better][t] - passed[worse][t] for t in passed[better]]), len(passed[better])


def critic_verdicts(results, table3:str, figure3a:str) -> list:
    "What Table 3 and Figure 3a must say of the critics, derived from the committed scores; the sentences the text lacks."
    a, s = _sweet_critic_answers(results), _shortcut_from_scores(results)
    (crit, crit_lo, _, pairs, states), (length, _, length_hi, *_) = a['critic_agreement'], a['length_agreement']
    must = [(table3, f"SWEET-RL {a['below_zero']} of {a['answers']} below zero ({a['passing_below_zero']} of the {a['passing']} that pass a test), "
                     f"mean {a['mean']:.1f}, highest {a['max']:.2f}, {a['inv_length_corr']:.2f}"),
            (table3, f"A rule that prefers the longer answer orders the same answer pairs as the tests do in {100 * length:.1f}% "),
            (table3, f"of them ({pairs} pairs at {states} states), SWEET-RL's critic in {100 * crit:.1f}% "),
            (table3, f"puts a median {100 * s['median_share']:.0f}% of an answer's summed log-ratio on the answer mark's tokens "
                     f"({s['above_half']} of {s['shares']} answers above half)"),
            (table3, f"with the mark's tokens left out of the mean: {s['unmarked_below_zero']} of {s['answers']} answers below zero")]
    # the verdicts: each sentence is said exactly when the numbers bear it out
    said = [(crit_lo <= length_hi, table3, "ordering answers as the tests do is not above what length alone gives"),
            (a['below_zero'] == a['answers'], table3, "every answer scores below zero, the ones that pass a test included"),
            (a['inv_length_corr'] <= -0.5, table3, "a penalty on answering that shrinks as the answer grows longer"),
            (s['median_share'] < 0.5 and s['unmarked_below_zero'] == s['answers'], table3, "So the penalty is spread over the answers' text, not carried by the mark")]
    low, high, spread = _value_first_turns(results)
    (diff, lo, hi), n = _paired_points(results, 'figure3a', 'sweet@16', 'value@16')
    word = 'above' if lo > 0 else 'below' if hi < 0 else 'not separable from'
    must.append((figure3a, f"at N = 16 SWEET-RL is {word} value function ({diff:+.1f} ["))
    must.append((figure3a, f"points over {n} tasks; value function's first-turn scores all lie in {low:.5f}-{high:.5f} and differ by at most {spread:.1e} within a state"))
    said.append((high <= 1 and spread < 0.01, figure3a, "this compares SWEET-RL with what is in effect a random pick"))
    return ([f"missing: {t!r}" for text, t in must if t not in text]
            + [f"{'missing' if expected else 'unwarranted'}: {t!r}" for expected, text, t in said if (t in text) != expected])


def test_critic_texts_say_what_the_committed_scores_show():
    """Table 3's and Figure 3a's sentences on the critics state what their committed per-state scores show: the numbers and
    verdicts are recomputed here from the logs (gzip and json, our own bootstrap), not read from the renderer's summaries."""
    t3, f3 = (FIGURES_DIR / 'table3.md').read_text(), (FIGURES_DIR / 'figure3a.md').read_text()
    wrong = critic_verdicts(RESULTS_DIR, t3, f3)
    assert not wrong, wrong
    assert 'of its 52 training pairs' not in t3, t3  # an earlier wording that misnamed the taught pairs


def test_critic_verdicts_notice_a_wrong_text_or_wrong_numbers(tmp_path):
    "The check above fails when the text states another verdict, or when the scores it was rendered from say otherwise."
    import gzip, json, shutil
    t3, f3 = (FIGURES_DIR / 'table3.md').read_text(), (FIGURES_DIR / 'figure3a.md').read_text()
    assert critic_verdicts(RESULTS_DIR, t3.replace('109 of 109 below zero', '108 of 109 below zero', 1), f3)
    assert critic_verdicts(RESULTS_DIR, t3, f3.replace('SWEET-RL is not separable from value function', 'SWEET-RL is above value function'))
    assert critic_verdicts(RESULTS_DIR, t3.replace('every answer scores below zero', 'most answers score below zero'), f3)
    # the numbers: in every scores store, one answer scored above zero
    results = tmp_path / 'results'
    shutil.copytree(RESULTS_DIR / 'runs' / 'shared', results / 'runs' / 'shared')
    for name in ('table3.csv', 'figure3a.csv', 'figure3a_tasks.csv', 'colbench_shortcut', 'runs/best_of_n'): (results / name).symlink_to(RESULTS_DIR / name)
    for p in (results / 'runs' / 'shared' / 'scores').glob('*/params.json'):
        cands = results / 'runs' / 'shared' / 'candidates' / json.loads(p.read_text())['candidates']
        rewards = {r['id']: r['rewards'] for r in _jsonl_gz(cands / 'rewards.jsonl.gz')}
        rows = _jsonl_gz(p.parent / 'scores.jsonl.gz')
        answer = next(((r, k) for r in rows for k, x in enumerate(rewards.get(r['record'], ())) if x is not None), None)
        if answer is None: continue  # a store of states where no candidate answers
        answer[0]['scores'][answer[1]] = 5.0
        with gzip.open(p.parent / 'scores.jsonl.gz', 'wt') as f: f.writelines(json.dumps(r) + '\n' for r in rows)
    wrong = critic_verdicts(results, t3, f3)
    assert any(w.startswith('unwarranted') and 'every answer scores below zero' in w for w in wrong), wrong


def test_actor_arm_text_says_what_the_committed_runs_show():
    "The credit artifact's actor arm compares with the cue rule task by task and lists every run still to come."
    md = (FIGURES_DIR / 'credit_assignment.md').read_text()
    assert re.search(r'- Room to learn: the cue rule is above the zero-shot policy \(\+\d+\.\d \[\d+\.\d, \d+\.\d\] points over 120 tasks\)', md), md
    rows = {l.split(' | ')[0].lstrip('| ') for l in md.splitlines() if l.startswith('| ') and ' | ' in l}
    assert {'per-turn DPO, SWEET critic', 'Multi-Turn DPO', 'RFT', 'cue rule (no training, reads the cue)'} <= rows, rows
    waiting = pending_runs(RESULTS_DIR, 'ask_actor')
    assert ('Still running:' in md) == (not waiting.empty), md


def test_committed_figures_name_the_runs_their_study_no_longer_makes():
    "A table of runs made under an earlier definition of its study (its YAML, a scale preset or a notebook changed since) says so."
    import pandas as pd
    from sweet_rl.runs.pipeline import STUDIES, outdated_runs
    shown = '\n'.join(p.read_text() for p in sorted(FIGURES_DIR.glob('*.md')))
    for name in STUDIES:
        for o in outdated_runs(pd.read_csv(RESULTS_DIR / f'{name}.csv')):
            said = [l for l in shown.splitlines() if l.startswith(f"**Outdated**: the study `{name}` ") and o['run'] in l]
            assert said, f"{name}: run {o['run']} is not one the study makes now ({o['changed']}), and no figure says so: render and commit"
