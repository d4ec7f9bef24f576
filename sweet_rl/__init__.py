__version__ = "0.1.0"
env_plugins = ['sweet_rl.envs']  # packages whose modules register environments: imported on the first lookup of an unknown kind
