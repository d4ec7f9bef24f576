"The library's environments: importing this package registers every one (each module calls `register_env` as it loads)."
from . import backend, clarify, explore, frontend, search, taxi, testbed
