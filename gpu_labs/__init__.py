"""Labs on a real model: the katas' math applied to SmolLM2 (or any causal LM) with LoRA.

`kata lab list` shows them; `kata lab run NAME --run-mode dry_run|cpu_smoke|real_gpu` runs one
and writes runs/<lab>/<label>/evidence.json. See gpu_labs/runner.py for what a lab module holds.

LABS is the one list of labs, in learning order: `kata lab list`, `nox -s gpu` (which runs each
one) and the tests read it. A lab is a module, or a package when it outgrows one (grpo_rlvr,
train_grpo); the shared parts are grpo_step (one GRPO update), sequences (batches, log-probs,
sampling), decisions (the decision vocabulary), runner, evidence and summary.
"""

LABS = {  # name -> the module `kata lab run NAME` imports
    "grpo_mechanism": "gpu_labs.grpo_mechanism",
    "grpo_rlvr": "gpu_labs.grpo_rlvr",
    "train_grpo": "gpu_labs.train_grpo",
}
RUN_MODES = ("dry_run", "cpu_smoke", "real_gpu")  # see gpu_labs/runner.py
