"""The decisions a lab run ends in: one vocabulary for the labs, the evidence and the summary.

    not_measured        a dry run: nothing was measured (the runner's)
    reject_until_fixed  the run failed, or a metric says it is broken (the runner's, train_grpo's)
    reject              the candidate is not delivered (grpo_rlvr, reference.delivery_decisions)
    tune                the mechanism works but a setting needs changing (every lab)
    accept_mechanism    the update mechanism moves the policy as the advantages say (grpo_mechanism)
    accept              the candidate is delivered (grpo_rlvr)
    continue            keep training from the last checkpoint, or scale up (train_grpo)

Each lab's `decide` returns one of these; the runner refuses anything else. `kata lab run` exits 1
for reject_until_fixed and 0 for the others.
"""

from gpu_labs.phrases import listing, text

NOT_MEASURED = "not_measured"
REJECT_UNTIL_FIXED = "reject_until_fixed"
REJECT = "reject"
TUNE = "tune"
ACCEPT_MECHANISM = "accept_mechanism"
ACCEPT = "accept"
CONTINUE = "continue"

STYLES = {  # the summary's style (grader.report.styles) of each decision
    NOT_MEASURED: "muted",
    REJECT_UNTIL_FIXED: "failed",
    REJECT: "failed",
    TUNE: "warning",
    ACCEPT_MECHANISM: "passed",
    ACCEPT: "passed",
    CONTINUE: "passed",
}
DECISIONS = tuple(STYLES)
FAILED = (REJECT_UNTIL_FIXED,)  # decisions `kata lab run` exits 1 for


def check(decision: str, lab: str) -> str:
    """`decision` if it is in the vocabulary; ValueError naming the lab otherwise."""
    if decision not in DECISIONS:
        raise ValueError(text("bad_decision", lab=lab, decision=decision, decisions=listing(DECISIONS)))
    return decision
