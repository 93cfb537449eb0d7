# Shared helpers: the library path and the job lists.
from pathlib import Path

LIBRARY = Path(workflow.basedir) / "workflow" / "scripts"

ENV = "../../envs/accel-choice.yaml"
# Shares of the global `timing_slot` resource (2 in profiles/default): a timing job takes
# both and runs alone; any other job takes one.
TIMING_JOB = 2
OTHER_JOB = 1
BATCH_SIZES = config["timing"]["batch_sizes"]
REPEATS = list(range(config["timing"]["repeats"]))
DATASETS = ["benchmark", "northstar"]


def library(*modules):
    """Library modules a rule's results depend on: edits to them re-run the rule."""
    return [str(LIBRARY / "accel_choice" / f"{name}.py") for name in modules]
