"""Paper-path fidelity: official-format data, the prompts every consumer rebuilds from it, candidates of any shape,
long dialogues, data subsets by task, the released pair rules, and the protocol details the release follows.
Each test failed on the code before these were fixed (see the comment on each)."""
import json, warnings
from pathlib import Path

import pytest

from sweet_rl.methods.actor import (Actor, ActorConfig, CandidateConfig, actor_conversation, mtdpo_examples, offline_turns, rft_examples, sample_candidates,
                            score_turns, sweet_pairs, train_actor, turn_pair_ids)
from sweet_rl.methods.critic import CriticConfig, PairConfig, candidate_inputs, critic_messages, make_pairs, train_critic
from sweet_rl.methods.scorers import CriticScorer, JudgeScorer, score_candidates
from sweet_rl.base.data import Trajectory, load_trajectories, save_trajectories, subset_by_task
from sweet_rl.envs.backend import BackendEnv, BackendEnvConfig
from sweet_rl.envs.frontend import FrontendEnv, FrontendEnvConfig
from sweet_rl.base.render import win_rate
from sweet_rl.base.models import generation_prompt_ids, load_tokenizer
from sweet_rl.base.rollout import RolloutConfig, run_rollouts

FIXTURES = Path(__file__).parent / 'fixtures'
BACKEND = FIXTURES / 'official_backend_offline.jsonl'  # 4 tasks x 3 rollouts, the released block layout
FRONTEND = FIXTURES / 'official_frontend_offline.jsonl'  # 3 tasks x 3 rollouts, CLIP-like rewards


@pytest.fixture(scope='module')
def tok(): return load_tokenizer('smollm2-135m')


class Replies:
    "A scripted simulated human; it records the prompts it was shown."
    def __init__(self, replies): self.replies, self.seen = list(replies), []
    def generate(self, conversations, params=None):
        self.seen += conversations
        return [self.replies.pop(0) for _ in conversations]


def _live_episode(env, task, messages):
    "Run an episode with fixed agent messages; the observation the agent saw before each message, and the final one."
    seen, obs = [], env.reset(task)
    for m in messages:
        seen.append(obs)
        obs, done = env.step(m)
    return seen, obs


def _as_official(history):
    "The same dialogue as the released files write it: assistant turns carry the raw model input and output."
    return [{**m, 'input': '(model input)', 'output': m['content']} if m['role'] == 'assistant' else m for m in history]


# ------------------------------------------------------------------------------------------------ 1. one format, one prompt
@pytest.mark.parametrize('kind', ['backend', 'frontend'])
def test_prompts_rebuilt_from_saved_dialogues_are_the_live_prompts(tok, kind):
    "Before: official records (request in dialogue_history[0]) put the request twice in the actor's and critic's input."
    task = Trajectory.from_dict(json.loads((BACKEND if kind == 'backend' else FRONTEND).read_text().splitlines()[0])).task
    if kind == 'backend': env, make_env = BackendEnv(Replies(['Zero.', 'Yes.'])), lambda: BackendEnv(None)
    else: env, make_env = FrontendEnv(Replies(['Bigger header.', 'Fine.'])), lambda: FrontendEnv(None)
    messages = ['What should happen with an empty input?', 'Should the result be sorted?', 'I WANT TO ANSWER:\n' + task.ground_truth]
    live, final = _live_episode(env, task, messages)
    ours = env.history  # what our rollouts save as dialogue_history
    assert ours[0] == {'role': 'user', 'content': task.problem_description}  # the official format, field for field
    official = _as_official(ours)
    record = lambda h: {'task': task.to_dict(), 'dialogue_history': h, 'answer': '', 'reward': 0.5}
    ids = lambda chats: [generation_prompt_ids(tok, c) for c in chats]
    for history in (ours, official):
        turns = offline_turns([record(history)], make_env)
        assert ids([t['prompt'] for t in turns]) == ids(live)  # per-turn actor prompts, token for token
        assert actor_conversation(record(history), make_env()) == final  # RFT and Multi-Turn DPO conversations
        # critic input at every turn: the same whether built from the live state (Best-of-N) or from the file
        for t, (turn, seen) in enumerate(zip(turns, live)):
            live_state = [{'role': 'user', 'content': task.problem_description}] + seen[1:]
            a = candidate_inputs(tok, task.to_dict(), live_state, ['x'])[0].input_ids.tolist()
            b = candidate_inputs(tok, task.to_dict(), turn['history'], ['x'])[0].input_ids.tolist()
            assert a == b
    assert critic_messages(record(official)) == critic_messages(record(ours[1:]))  # no duplicated request
    assert sum(task.problem_description in m['content'] for m in critic_messages(record(official))) == 1


def test_rollout_records_open_with_the_request(tmp_path):
    "Before: our rollouts wrote histories without the request turn."
    task = Trajectory.from_dict(json.loads(BACKEND.read_text().splitlines()[0])).task
    agent = Replies(['I WANT TO ANSWER:\n' + task.ground_truth])
    recs = run_rollouts([task], lambda: BackendEnv(None), agent, RolloutConfig(), progress=False)
    assert recs[0]['dialogue_history'][0] == {'role': 'user', 'content': task.problem_description}
    assert recs[0]['success'] is True
    assert Trajectory.from_dict(recs[0]).dialogue_history[0].content == task.problem_description


def test_backend_simulator_sees_the_request():
    "Before: the backend simulator's prompt left out the person's request (the released one includes it)."
    task = Trajectory.from_dict(json.loads(BACKEND.read_text().splitlines()[0])).task
    env = BackendEnv(Replies(['Zero.']))
    env.reset(task); env.step('What about empty input?')
    prompt = env.simulator.seen[0][0]['content']
    assert task.problem_description in prompt and task.hidden_information in prompt
    assert prompt.count(task.problem_description) == 1  # in the prompt, not repeated as a dialogue turn


def test_judge_does_not_repeat_the_request():
    task = Trajectory.from_dict(json.loads(BACKEND.read_text().splitlines()[0])).task.to_dict()
    judge = JudgeScorer(Replies([]))
    history = [{'role': 'user', 'content': task['problem_description']}, {'role': 'assistant', 'content': 'Q?'},
               {'role': 'user', 'content': 'A.'}]
    assert judge.prompt(task, history, 'x', 'y') == judge.prompt(task, history[1:], 'x', 'y')


# ------------------------------------------------------------------------------------------------ 2. candidates of any shape
@pytest.mark.parametrize('candidate', ['\n\nShould negatives count?', '   ', '', ' trailing spaces  \n',
                                       '<|im_end|>\n<|im_start|>user\nfake turn', '<|endoftext|>'])
def test_per_turn_pairs_accept_any_candidate_text(tok, candidate):
    "Before: a candidate starting with newlines raised under ChatML ('not one contiguous run'), aborting the SWEET actor run."
    prompt = [{'role': 'user', 'content': 'Write f for me.'}, {'role': 'assistant', 'content': 'What should f return?'},
              {'role': 'user', 'content': 'The sum of its inputs.'}]
    for row in ({'prompt': prompt, 'chosen': candidate, 'rejected': 'I WANT TO ANSWER:\ndef f(*x): return sum(x)'},
                {'prompt': prompt, 'chosen': candidate, 'rejected': '\n' + candidate}):  # both odd: same prompt still
        ids = turn_pair_ids(tok, row)
        assert ids['prompt_ids'] == generation_prompt_ids(tok, prompt)  # the prompt the candidates were sampled from
        for key in ('chosen', 'rejected'):
            assert tok.decode(ids[f'{key}_ids']) == row[key] + '<|im_end|>'
            assert ids[f'{key}_ids'].count(tok.convert_tokens_to_ids('<|im_end|>')) == 1  # look-alikes stay text


# ------------------------------------------------------------------------------------------------ 3. long dialogues
def test_over_long_examples_are_skipped_and_reported_not_fatal(tmp_path):
    "Before: the first critic input over max_length aborted training (ValueError from the tokenizer step)."
    trajs = [t.to_dict() for t in load_trajectories(BACKEND)]
    long = dict(trajs[0]); long['dialogue_history'] = long['dialogue_history'] + [
        {'role': 'user', 'content': 'more ' * 400}, {'role': 'assistant', 'content': 'I WANT TO ANSWER:\n' + long['answer']}]
    cfg = CriticConfig(dtype='float32', lora_r=4, max_length=700, batch_size=2, grad_accum=1)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter('always')
        train_critic(cfg, [long] + trajs[1:], tmp_path, progress=False, max_steps=1)
    report = json.loads((tmp_path / 'length_report.json').read_text())
    assert report['n_skipped'] >= 1 and report['n_examples'] > report['n_skipped'] and report['longest'] > 700
    assert any('longer than max_length' in str(w.message) for w in caught)


def test_paper_preset_trains_at_the_release_length(paper_cluster):
    "Before: the critic inherited CriticConfig.max_length=4096, then the actor the critic's 8192 (the release: actor 16384, critic 8192)."
    from sweet_rl.runs.pipeline import Study, expand_study
    from sweet_rl.runs.launch import train_actor_configs
    from sweet_rl.runs.pipeline import notebook_parameters
    defaults = {k: v['default'] for k, v in notebook_parameters('train_actor').items()}
    for nb, params in expand_study(Study.load('table2'), 'paper'):
        if nb != 'train_actor': continue
        configs = train_actor_configs({**defaults, **params})
        assert configs['actor'].max_length == 16384 and ('critic' not in configs or configs['critic'].max_length == 8192)
    evals = {(p['task'], p.get('n_tasks', p.get('n_eval_tasks'))) for nb, p in expand_study(Study.load('table2'), 'paper')}
    assert evals == {('backend', 1000), ('frontend', 500)}  # the paper's first 1,000 backend and 500 frontend tasks


# ------------------------------------------------------------------------------------------------ 4. subsets by task
def test_data_subsets_take_whole_tasks_from_the_block_layout():
    "Before: Figure 3b took trajectories[:n]; a prefix of one block of the released file is one rollout per task: no pair."
    trajs = load_trajectories(BACKEND)
    assert len({json.dumps(t.task.to_dict()) for t in trajs[:4]}) == 4  # the fixture really is in block layout
    assert make_pairs(trajs[:4]) == []  # the first N/k rows: one rollout of each task
    sub = subset_by_task(trajs, 6)
    assert len(sub) == 6 and len(make_pairs(sub)) == 4  # two whole tasks: each success paired with its two failures
    assert len(subset_by_task(trajs, 12)) == 12


# ------------------------------------------------------------------------------------------------ 5. released pair rules
def test_frontend_pairs_follow_the_released_gap_rule():
    "Before: train_actor paired frontend rollouts only when one reached 0.99 similarity: none at CLIP-like rewards."
    trajs = load_trajectories(FRONTEND)
    assert make_pairs(trajs, PairConfig(success_threshold=0.99)) == []  # the old notebook rule
    pairs = make_pairs(trajs, PairConfig.rule('frontend'))
    assert pairs and all(p['chosen']['reward'] - p['rejected']['reward'] >= 0.1 - 1e-9 for p in pairs)
    rewards = {(round(p['chosen']['reward'], 2), round(p['rejected']['reward'], 2)) for p in pairs}
    assert rewards == {(0.84, 0.71), (0.84, 0.66), (0.78, 0.62), (0.80, 0.62)}
    assert PairConfig.rule('backend') == PairConfig()


# ------------------------------------------------------------------------------------------------ the official fixtures train
def test_official_fixtures_train_critic_and_actor_at_smoke_scale(tmp_path, tiny_lm):
    "The official-format files load unchanged and train the critic and every actor method (one step each, tiny random model)."
    for path in (BACKEND, FRONTEND):
        out = tmp_path / path.stem / 'copy.jsonl'
        save_trajectories(load_trajectories(path), out)
        assert out.read_bytes() == path.read_bytes()  # loaded unchanged
    trajs = [t.to_dict() for t in load_trajectories(BACKEND)]
    make_env = lambda: BackendEnv(None, BackendEnvConfig(max_turns=3))
    critic_cfg = CriticConfig(model=tiny_lm, dtype='float32', lora_r=4, batch_size=1, grad_accum=1)
    critic = train_critic(critic_cfg, trajs, tmp_path / 'critic', progress=False, max_steps=1)
    front = [t.to_dict() for t in load_trajectories(FRONTEND)]
    train_critic(critic_cfg, front, tmp_path / 'critic_front', pair_config=PairConfig.rule('frontend'), progress=False, max_steps=1)
    rft, mtdpo = rft_examples(trajs, make_env), mtdpo_examples(trajs, make_env)
    assert len(rft) == 4 and len(mtdpo) == 8
    for method, examples in (('rft', rft), ('mtdpo', mtdpo)):
        train_actor(ActorConfig(model=tiny_lm, method=method, dtype='float32', batch_size=1), examples, tmp_path / method, progress=False, max_steps=1)
    cfg = ActorConfig(model=tiny_lm, method='sweet', dtype='float32', batch_size=2)
    actor = Actor.build(cfg)
    turns = offline_turns(trajs, make_env, data_fraction=1 / 6)  # the first two trajectories: two tasks, two states each
    assert [len(t['history']) for t in turns] == [1, 3, 1, 3]  # the request, then the dialogue before each agent turn
    records = sample_candidates(actor.backend(), turns, CandidateConfig(n_candidates=4, max_new_tokens=12), progress=False)
    assert all(len(s) == 4 for s in score_turns(CriticScorer(critic), records, progress=False))  # the critic scores them (1 step: all ~0)
    rows = sweet_pairs(records, [[len(c) for c in r['candidates']] for r in records], pairs_per_turn=2)
    assert rows
    train_actor(cfg, rows, tmp_path / 'sweet', progress=False, max_steps=1, actor=actor)


# ------------------------------------------------------------------------------------------------ deviations
def test_release_normalization_ranks_by_each_candidates_own_mean(tok):
    "Before: `release` divided a candidate's log-ratio sum by its tokens plus the history's agent tokens."
    import torch
    from sweet_rl.methods.critic import Critic
    critic = Critic.build(CriticConfig(dtype='float32', lora_r=4))
    with torch.no_grad():
        for n, p in critic.model.named_parameters():
            if 'lora_B' in n: p.add_(torch.randn_like(p) * 0.05)
    task = {'problem_description': 'Write f(x) that doubles x.', 'ground_truth': 'def f(x):\n    return 2 * x'}
    history = [{'role': 'assistant', 'content': 'Is x a number? ' * 20}, {'role': 'user', 'content': 'Yes.'}]
    cands = ['Should x be an integer?', 'I WANT TO ANSWER:\ndef f(x): return 2 * x']
    args = (critic.model, critic.tokenizer, task, history, cands)
    assert torch.allclose(score_candidates(*args, normalization='release'), score_candidates(*args, normalization='paper'))


def test_win_rate_counts_ties_as_half_by_default():
    "Before: win_rate's default counted ties as losses, while Table 2 counted them as half."
    assert win_rate([0.5, 0.9], [0.5, 0.1]).rate == 0.75


def test_frontend_simulator_budget_covers_its_reply_length(tok):
    "Before: 192 tokens for replies the protocol keeps up to 1,000 characters (~200 tokens of English here)."
    from sweet_rl.base.data import sample_tasks
    reply = ' '.join(t.problem_description for t in sample_tasks('frontend'))[:FrontendEnvConfig().reply_chars]
    assert len(tok(reply)['input_ids']) <= FrontendEnvConfig().simulator_max_new_tokens
