"""DangerousTaxi (`sweet_rl.envs.taxi`): hand-worked episodes of each curriculum with exact rewards and ends, the danger
rule against gymnasium's own action mask, the oracle's success from every start, seeding, the task split, the
oracle-mixed-with-random helper, and the errors."""
import pytest

from sweet_rl.base.core import ConfigError
from sweet_rl.base.protocol import ChoiceEnv, ChoiceStep
from sweet_rl.envs.taxi import (ACTIONS, IN_TAXI, CURRICULUM_HORIZONS, DangerousTaxiEnv, MixedStep, TaxiConfig, decode_state,
                                describe_state, goal_distances, gym_taxi, mixed_oracle_rollout, oracle_move, start_states,
                                taxi_outcome, taxi_seeds, taxi_transitions)

SEED0_START = 314  # gymnasium's start for seed 0: taxi at row 3 column 0, passenger at B, destination Y
SEED0_PICKUP = ['move north', 'move east', 'move east', 'move east', 'move south', 'move south', 'pick up the passenger']
SEED0_DELIVERY = ['move north', 'move north', 'move west', 'move west', 'move west', 'move south', 'move south',
                  'drop off the passenger']


def play(env, actions):
    "Step `actions` in order; return the `ChoiceStep`s."
    return [env.step(a) for a in actions]


def oracle_episode(config, seed):
    "Let the oracle play one episode; return its steps."
    env, out = DangerousTaxiEnv(config), []
    env.reset(seed)
    while not env.done: out.append(env.step(env.oracle_action()))
    return out


def test_protocol_and_actions():
    env = DangerousTaxiEnv()
    assert isinstance(env, ChoiceEnv)
    assert env.valid_actions() == ['move south', 'move north', 'move east', 'move west', 'pick up the passenger',
                                   'drop off the passenger']
    assert (env.horizon, DangerousTaxiEnv(TaxiConfig(curriculum='pickup')).horizon,
            DangerousTaxiEnv(TaxiConfig(curriculum='dropoff')).horizon, DangerousTaxiEnv(TaxiConfig(horizon=7)).horizon) == (30, 15, 30, 7)
    assert 'pick the passenger up' in DangerousTaxiEnv(TaxiConfig(curriculum='pickup')).instruction
    assert 'already in your taxi' in DangerousTaxiEnv(TaxiConfig(curriculum='dropoff')).instruction


def test_rendered_state():
    text = DangerousTaxiEnv().reset(seed=0)
    assert text == '\n'.join(['+---------+', '|R: | : :G|', '| : | : : |', '| : : : : |', '|T| : | : |', '|Y| : |B: |',
                              '+---------+', 'The taxi (T) is at row 3, column 0.',
                              'The passenger is waiting at stop B (row 4, column 3).',
                              'The passenger wants to go to stop Y (row 4, column 0).',
                              'Blocked moves (a wall or the edge of the map): east, west.'])
    assert describe_state(gym_taxi().encode(2, 2, IN_TAXI, 1)).splitlines()[7:] == [
        'The taxi (T) is at row 2, column 2.', 'The passenger is in the taxi.',
        'The passenger wants to go to stop G (row 0, column 4).', 'Blocked moves (a wall or the edge of the map): none.']


def test_pickup_episode_by_hand():
    env = DangerousTaxiEnv(TaxiConfig(curriculum='pickup'))
    env.reset(seed=0)
    assert env.state == SEED0_START
    steps = play(env, SEED0_PICKUP)
    assert [s.reward for s in steps] == [-0.05] * 6 + [1.0]
    assert [s.done for s in steps] == [False] * 6 + [True]
    assert steps[-1].info == {'success': True, 'ended_by': 'pickup', 'steps': 7, 'state': gym_taxi().encode(4, 3, IN_TAXI, 2)}
    assert 'The passenger is in the taxi.' in steps[-1].observation
    with pytest.raises(RuntimeError, match='the episode is over'): env.step('move north')


def test_full_episode_by_hand():
    "By default (the paper's rule) the pick-up pays +20/20 and the episode goes on; delivery pays +20/20; a wrong-stop drop-off is a legal step."
    env = DangerousTaxiEnv(TaxiConfig(curriculum='full'))
    env.reset(seed=0)
    steps = play(env, SEED0_PICKUP + SEED0_DELIVERY)
    assert [s.reward for s in steps] == [-0.05] * 6 + [1.0] + [-0.05] * 7 + [1.0]
    assert [s.done for s in steps] == [False] * 14 + [True]
    assert steps[-1].info == {'success': True, 'ended_by': 'delivery', 'steps': 15, 'state': gym_taxi().encode(4, 0, 2, 2)}
    assert sum(s.reward for s in steps) == pytest.approx(1.35, abs=1e-12)
    off = DangerousTaxiEnv(TaxiConfig(curriculum='full', pickup_bonus=False))  # the option: only the delivery pays
    off.reset(seed=0)
    steps = play(off, SEED0_PICKUP + SEED0_DELIVERY)
    assert [s.reward for s in steps] == [-0.05] * 14 + [1.0]
    assert sum(s.reward for s in steps) == pytest.approx(0.3, abs=1e-12)
    env.reset(seed=0)  # a drop-off on a stop that is not the destination: the passenger waits there again
    again = play(env, SEED0_PICKUP + ['drop off the passenger'])
    assert (again[-1].reward, again[-1].done, decode_state(env.state)) == (-0.05, False, (4, 3, 3, 2))


def test_pickup_bonus_is_paid_once():
    env = DangerousTaxiEnv(TaxiConfig(curriculum='full'))
    env.reset(seed=0)
    steps = play(env, SEED0_PICKUP + ['drop off the passenger', 'pick up the passenger'] + SEED0_DELIVERY)
    assert [s.reward for s in steps] == [-0.05] * 6 + [1.0] + [-0.05] * 2 + [-0.05] * 7 + [1.0]  # the bonus is paid once


def test_dropoff_episode_starts_with_the_passenger_aboard():
    env = DangerousTaxiEnv(TaxiConfig(curriculum='dropoff'))
    text = env.reset(seed=0)
    assert (decode_state(env.state), env.steps, env.done) == ((4, 3, IN_TAXI, 2), 0, False)
    assert 'The passenger is in the taxi.' in text and 'on stop B' in text
    steps = play(env, SEED0_DELIVERY)
    assert [s.reward for s in steps] == [-0.05] * 7 + [1.0]
    assert steps[-1].info['ended_by'] == 'delivery' and steps[-1].info['success'] is True


DANGERS = [  # (curriculum, safe moves first, the dangerous action): seed 0 starts at row 3 column 0 (dropoff: on stop B, aboard)
    ('full', [], 'move east'),  # the wall
    ('full', [], 'move west'),  # the edge of the map
    ('full', [], 'pick up the passenger'),  # nobody waits here
    ('full', [], 'drop off the passenger'),  # nobody aboard
    ('pickup', ['move north'], 'move west'),
    ('pickup', [], 'drop off the passenger'),
    ('dropoff', [], 'move south'),
    ('dropoff', [], 'pick up the passenger'),  # already aboard
    ('dropoff', ['move north', 'move north'], 'drop off the passenger'),  # row 2, column 3: not a stop
]


@pytest.mark.parametrize('curriculum, moves, action', DANGERS)
def test_danger_ends_the_episode(curriculum, moves, action):
    env = DangerousTaxiEnv(TaxiConfig(curriculum=curriculum))
    env.reset(seed=0)
    assert [s.reward for s in play(env, moves)] == [-0.05] * len(moves)
    before = env.state
    step = env.step(action)
    assert (step.reward, step.done, step.info['ended_by'], step.info['success'], env.state) == (-0.5, True, 'danger', False, before)


def test_danger_rule_matches_gymnasiums_action_mask():
    "Over every state and action: dangerous (state unchanged, -10) exactly where gymnasium's mask says the action changes nothing."
    table = taxi_transitions()
    for s in range(500):
        mask = gym_taxi().action_mask(s)
        for a in range(6):
            nxt, r, delivered = table[s][a]
            reward, ended = taxi_outcome('full', s, nxt, r, delivered)
            assert (ended == 'danger') == (not mask[a]) == (reward == -10.0), (s, a)


def test_horizon_truncates():
    steps = oracle_episode(TaxiConfig(curriculum='full', horizon=3), 0)
    assert [s.reward for s in steps] == [-0.05] * 3
    assert steps[-1].info == {'success': False, 'ended_by': 'horizon', 'steps': 3, 'state': gym_taxi().encode(2, 2, 3, 2)}


def test_reward_scale():
    env = DangerousTaxiEnv(TaxiConfig(curriculum='pickup', reward_scale=1.0))
    env.reset(seed=0)
    assert [s.reward for s in play(env, SEED0_PICKUP)] == [-1.0] * 6 + [20.0]
    env.reset(seed=0)
    assert env.step('move east').reward == -10.0


@pytest.mark.parametrize('curriculum, longest', [('pickup', 9), ('dropoff', 9), ('full', 18)])
def test_oracle_always_succeeds_within_the_horizon(curriculum, longest):
    lengths = []
    for seed in range(60):
        steps = oracle_episode(TaxiConfig(curriculum=curriculum), seed)
        assert steps[-1].info['success'] and all(s.reward > -0.5 for s in steps), (curriculum, seed)
        lengths.append(len(steps))
    assert max(lengths) <= longest <= CURRICULUM_HORIZONS[curriculum]


def test_oracle_is_shortest_from_every_start():
    "Every start state: the oracle's path has exactly `goal_distances` steps, and the worst starts need 9 and 18."
    aboard, delivered = goal_distances('aboard'), goal_distances('delivered')
    starts = start_states()
    assert len(starts) == 300 and (max(aboard[s] for s in starts), max(delivered[s] for s in starts)) == (9, 18)
    for s in starts:
        state, n = s, 0
        while True:
            nxt, _, done = taxi_transitions()[state][oracle_move(state, 'delivered')]
            n += 1
            if done: break
            assert nxt != state
            state = nxt
        assert n == delivered[s]
    assert oracle_move(SEED0_START, 'aboard') == ACTIONS.index('move north')
    with pytest.raises(ValueError, match='goal must be one of'): goal_distances('home')


def test_seeded_reset_is_deterministic():
    a, b = DangerousTaxiEnv(), DangerousTaxiEnv(TaxiConfig(curriculum='pickup'))
    assert [a.reset(seed=s) for s in range(20)] == [b.reset(seed=s) for s in range(20)]
    assert a.reset(seed=1) != a.reset(seed=0)
    assert [a.reset(seed=s) and a.state for s in (0, 1, 2, 3)] == [314, 252, 128, 42]  # gymnasium 1.4's starts


def test_task_seeds_split():
    train, test = taxi_seeds('train', n_seeds=400), taxi_seeds('test', n_seeds=400)
    assert sorted(train + test) == list(range(400)) and taxi_seeds('all', n_seeds=400) == list(range(400))
    assert taxi_seeds('test', n_seeds=400) == test and test[:5] == [5, 7, 12, 14, 21]
    env = DangerousTaxiEnv()
    starts = lambda seeds: {env.reset(seed=s) and env.state for s in seeds}
    assert starts(train).isdisjoint(starts(test))
    assert len(starts(train) | starts(test)) <= 300
    with pytest.raises(ValueError, match="split must be 'train', 'test' or 'all'"): taxi_seeds('val')


def test_mixed_oracle_rollout():
    env = DangerousTaxiEnv(TaxiConfig(curriculum='pickup'))
    oracle = mixed_oracle_rollout(env, 0, p_random=0.0)
    assert [s.action for s in oracle] == SEED0_PICKUP and all(s.action == s.oracle_action for s in oracle)
    assert oracle[0] == MixedStep(DangerousTaxiEnv().reset(seed=0), list(ACTIONS), 'move north', 'move north', -0.05, False)
    assert [s.done for s in oracle] == [False] * 6 + [True]
    mixed = mixed_oracle_rollout(env, 0, rng_seed=2)
    assert [(s.action, s.oracle_action, s.reward) for s in mixed] == [
        ('move north', 'move north', -0.05), ('move east', 'move east', -0.05), ('move south', 'move east', -0.05),
        ('move north', 'move north', -0.05), ('drop off the passenger', 'move east', -0.5)]  # strays to row 3, comes back
    assert mixed_oracle_rollout(env, 0, rng_seed=2) == mixed
    with pytest.raises(ValueError, match=r'p_random must be within \[0, 1\]'): mixed_oracle_rollout(env, 0, p_random=-0.1)


def test_errors():
    env = DangerousTaxiEnv()
    with pytest.raises(RuntimeError, match=r'call reset\(seed\) first'): env.step('move north')
    env.reset(seed=0)
    with pytest.raises(ValueError, match=r"unknown action 'go north'; valid actions: \['move south', 'move north'"): env.step('go north')
    assert env.steps == 0 and not env.done  # a refused action changes nothing
    env.step('move east')
    with pytest.raises(RuntimeError, match='the episode is over'): env.step('move north')
    with pytest.raises(RuntimeError, match='the episode is over'): env.oracle_action()
    with pytest.raises(ValueError, match='curriculum must be one of'): TaxiConfig(curriculum='drop')
    with pytest.raises(ValueError, match='horizon must be at least 1'): TaxiConfig(horizon=0)
    with pytest.raises(ConfigError, match="did you mean 'horizon'"): TaxiConfig.from_dict({'horizn': 3})
    assert TaxiConfig.from_dict({'curriculum': 'dropoff', 'horizon': None}) == TaxiConfig(curriculum='dropoff')
    assert isinstance(DangerousTaxiEnv().reset(seed=0), str) and ChoiceStep._fields == ('observation', 'reward', 'done', 'info')
