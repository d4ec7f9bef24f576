# Thin wrappers over scripts/: `make test` is the README's test command.
.PHONY: setup test smoke export clean reproduce dry-run render
SCALE ?= small
# Studies for reproduce and dry-run, comma-separated; empty: every study but the scale's opt-in ones (at paper, Table 4
# runs only when named: STUDIES=table4)
STUDIES ?=
# The Python that runs the pipeline; on a GPU node, the environment docs/gpu-nodes.md installs into (e.g. PYTHON=python)
PYTHON ?= .venv/bin/python
PIPELINE = $(PYTHON) -m sweet_rl.runs.pipeline
REPRODUCE = $(PIPELINE) reproduce --scale $(SCALE)$(if $(STUDIES), --studies $(STUDIES))
setup:
	bash scripts/setup.sh
test:
	bash scripts/test.sh
smoke:
	bash scripts/smoke.sh
export:
	.venv/bin/nbdev_export
clean:
	.venv/bin/nbdev_clean
# The studies at $(SCALE) (smoke, small or paper), then the paper's tables and figures and docs/results.md; the setup is
# checked first (as dry-run does) and nothing runs while a piece is missing. At paper nothing is installed: a GPU node
# installs by docs/gpu-nodes.md; scripts/setup.sh would install the CPU pins (torch 2.14.1) into .venv, and vLLM needs 2.11.0.
reproduce:
	$(if $(filter paper,$(SCALE)),,bash scripts/setup.sh)
	$(REPRODUCE)
# Every check of reproduce, nothing run: the missing settings in one list, the training plans, the hours per study (fails
# on any problem)
dry-run:
	$(REPRODUCE) --dry-run
render:  # tables and figures from results/ only, then docs/results.md
	$(PIPELINE) render
	$(PIPELINE) results-page
