# Thin wrappers over scripts/: `make test` is the README's test command.
.PHONY: setup test smoke export clean reproduce render
SCALE ?= small
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
reproduce:  # every study at $(SCALE) (smoke, small or paper), then the paper's tables and figures and docs/results.md
	bash scripts/setup.sh
	.venv/bin/python -m sweet_rl.runs.pipeline reproduce --scale $(SCALE)
render:  # tables and figures from results/ only, then docs/results.md
	.venv/bin/python -m sweet_rl.runs.pipeline render
	.venv/bin/python -m sweet_rl.runs.pipeline results-page
