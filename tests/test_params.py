"""Parameters flow explicitly: each flat parameter of an experiment notebook reaches the stage whose field it names, a name two
stages share is declared or refused, each run records its stages' values, and `help()` of a config lists its fields."""
import json, pydoc
from dataclasses import fields, make_dataclass

import pytest
from sweet_rl.base.core import Config, ConfigError
from sweet_rl.methods.critic import CriticConfig
from sweet_rl.methods.mtgrpo import SETTINGS
from sweet_rl.runs import critic_run, mtgrpo_run, offline
from sweet_rl.runs.pipeline import notebook_parameters

RUNS = {'train_critic': critic_run.CriticRun, 'train_actor': offline.OfflineRun, 'train_mtgrpo': mtgrpo_run.MTGRPORun}

def declared(notebook:str) -> dict: return {k: v['default'] for k, v in notebook_parameters(notebook).items()}

def every_env(run) -> list:
    "The parameter sets whose stages differ: MT-GRPO's setting stage is the config class of the parameters' `env`."
    return [{'env': env} for env in SETTINGS] if run is mtgrpo_run.MTGRPORun else [{}]

def readable_names(run, params:dict) -> dict:
    "Every parameter name some stage of `run` reads (its fields, with the stage's prefix), as parameters."
    return {prefix + n: None for names, prefix in run.stage_fields(params).values() for n in names}

@pytest.mark.parametrize('notebook', RUNS)
def test_no_undeclared_sharing(notebook):
    "No field of one stage has the name of another stage's field, unless the run declares the name shared: checked on every name a stage reads, passed or not."
    run = RUNS[notebook]
    for params in every_env(run):
        routes = run.routes({**readable_names(run, params), **params})
        assert {k: v for k, v in routes.items() if len(v) > 1} == {k: list(v) for k, v in run.shared.items()}

@pytest.mark.parametrize('notebook', RUNS)
def test_shared_names_exist(notebook):
    "Each name a run declares shared is a field of every stage it names, and reaches no other stage."
    run, params = RUNS[notebook], declared(notebook)
    stages = run.stage_fields(params)
    for name, where in run.shared.items():
        for stage in where:
            names, prefix = stages[stage]
            assert name.startswith(prefix) and name[len(prefix):] in names, f"{run.__name__}.shared: {name!r} is no field of stage {stage!r}"
        assert sorted(run.routes({name: None})[name]) == sorted(where)

# a field added to one stage's config with the name of another stage's field (module, config class, new field, the stages it would reach)
COLLISIONS = {'train_critic': (critic_run, 'HeldOutConfig', 'lr', ['critic', 'heldout']),
              'train_actor': (offline, 'ActorEvalConfig', 'lr', ['actor', 'evaluation']),
              'train_mtgrpo': (mtgrpo_run, 'OnlineEvalConfig', 'group_size', ['config', 'evaluation'])}

@pytest.mark.parametrize('notebook', RUNS)
def test_new_colliding_field_refused(notebook, monkeypatch):
    "A stage's config that gains a field another stage has makes the run refuse the notebook's parameters, naming the name and both stages."
    module, cls_name, name, stages = COLLISIONS[notebook]
    base = getattr(module, cls_name)
    monkeypatch.setattr(module, cls_name, make_dataclass(cls_name, [(name, float, 0.5)], bases=(base,)))
    run = RUNS[notebook]
    with pytest.raises(ConfigError) as e: run.from_params(declared(notebook))
    assert f"{name!r} names a field of 2 stages of {run.__name__} ({', '.join(stages)})" in str(e.value)
    assert f"{run.__name__}.shared" in str(e.value) and f"{run.__name__}.prefixes" in str(e.value)  # how to route it

SEEDED = {'train_critic': ('critic_trajectories', ['critic', 'data', 'heldout']),  # (the run's first stage, the stages that take the seed)
          'train_actor': ('offline_data', ['actor', 'candidates', 'critic', 'data', 'evaluation', 'pairs']),  # the critic and pairs by hand
          'train_mtgrpo': ('online_setting', ['config'])}

@pytest.mark.parametrize('notebook', RUNS)
def test_run_records_each_stage(notebook, tmp_path, monkeypatch):
    "Each run writes `run_config.json` before its first stage: every stage's values, so a reader sees where `seed` went."
    module = {'train_critic': critic_run, 'train_actor': offline, 'train_mtgrpo': mtgrpo_run}[notebook]
    first, seeded = SEEDED[notebook]
    class Stop(Exception): pass
    def stop(*args, **kwargs): raise Stop
    monkeypatch.setattr(module, first, stop)  # nothing is computed
    staged, run_dir = RUNS[notebook].from_params({**declared(notebook), 'seed': 7}), tmp_path / 'runs' / notebook / 'x'
    with pytest.raises(Stop): getattr(module, 'run_' + {'train_critic': 'critic', 'train_actor': 'offline', 'train_mtgrpo': 'mtgrpo'}[notebook])(
        staged, run_dir, say=lambda s: None)
    saved = json.loads((run_dir / 'run_config.json').read_text())
    assert saved == json.loads(json.dumps(staged.to_dict()))
    assert sorted(stage for stage, values in saved.items() if isinstance(values, dict) and values.get('seed') == 7) == seeded

def test_help_lists_fields():
    "`help(CriticConfig)` (and `CriticConfig?`) show each field with its type, default and docments comment."
    shown = pydoc.render_doc(CriticConfig, renderer=pydoc.plaintext)
    docs = CriticConfig.field_docs()  # the comments in its source
    assert f"use_hidden_info: bool = True  # {docs['use_hidden_info']}" in shown
    assert f"seed: int = 0  # {docs['seed']}" in shown  # a field of its base, `TrainConfig`
    assert all(docs.values())
    assert CriticConfig.__doc__.splitlines()[0] == vars(CriticConfig)['__doc__']  # its own line first

def all_configs(cls=Config):
    for sub in cls.__subclasses__(): yield sub; yield from all_configs(sub)

def test_every_config_lists_its_fields():
    "Every `Config` subclass of the package documents each of its fields in its docstring."
    import sweet_rl.runs.launch, sweet_rl.runs.evaluate, sweet_rl.methods.reflect  # noqa: F401 (more configs)
    found = [c for c in all_configs() if c.__module__.startswith('sweet_rl.')]
    assert len(found) > 20
    for c in (c for c in found if fields(c)):
        lines = c.__doc__.splitlines()
        assert [l.split(':')[0].strip() for l in lines[lines.index('Fields (name: type = default  # what it is):') + 1:]] == \
               [f.name for f in fields(c)], c
