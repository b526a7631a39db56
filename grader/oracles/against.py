"""`kata check SLUG --against trl`: which katas TRL can grade, and whether the pinned TRL is there.

Light on purpose (no torch, no trl import): the `kata` process asks it before spawning the grader.
The TRL-backed functions themselves are in grader.oracles.trl_oracle.
"""

from importlib import metadata

from grader.content.i18n import say

TRL_VERSION = "1.16.0"
TRL_PIP = f'pip install "trl=={TRL_VERSION}"'
ORACLES = ("trl",)

# kata -> the functions whose expected values TRL computes (the kata's other functions, and every
# input-contract check, stay with the reference)
TRL_FUNCTIONS = {
    "grpo_loss": ("compute_grpo_loss",),
    "dpo_loss": ("dpo_loss",),
    "verifier_reward": ("combine_rewards",),
    "token_logprobs": ("response_log_probs", "token_entropy"),
    "dapo_gspo": ("dapo_loss", "gspo_loss"),
    "kto_loss": ("kto_loss",),
    "preference_free": ("simpo_loss", "orpo_loss"),  # log1mexp stays the reference's: TRL's has NaN gradients near 0
    "sft_data": ("collate", "pack_bfd"),  # sft_example stays the reference's: TRL builds it inline, from text
    "distillation": ("generalized_jsd_loss",),  # the advantages: conformance/test_trl_distillation.py
}


class TrlUnavailable(RuntimeError):
    """The pinned TRL is missing, another version, or its internals changed (one-line message)."""


class AgainstError(ValueError):
    """`--against` cannot be honoured; `status` is the exit status the CLI should use."""

    def __init__(self, message: str, status: int):
        super().__init__(message)
        self.status = status


def require(oracle: str, slug: str) -> None:
    """Raise AgainstError unless `oracle` can grade kata `slug` here (usage: 2; trl missing: 1)."""
    if oracle not in ORACLES:
        choices = ", ".join(ORACLES)
        raise AgainstError(
            say(
                f"--against must be one of {choices}, not {oracle!r}",
                f"--against 只能是 {choices} 之一，不能是 {oracle!r}",
            ),
            2,
        )
    if slug not in TRL_FUNCTIONS:
        supported = ", ".join(TRL_FUNCTIONS)
        raise AgainstError(
            say(
                f"--against trl grades only the katas with a TRL counterpart: {supported}",
                f"`--against trl` 只能评分在 TRL 中有对应实现的 kata：{supported}",
            ),
            2,
        )
    problem = trl_problem()
    if problem:
        raise AgainstError(f"--against trl: {problem}", 1)


def trl_problem() -> str | None:
    """Why the pinned TRL cannot be used here (one line with the command that fixes it), or None."""
    try:
        installed = metadata.version("trl")
    except metadata.PackageNotFoundError:
        return say(f"TRL is not installed: {TRL_PIP}", f"未安装 TRL：{TRL_PIP}")
    if installed != TRL_VERSION:
        return say(
            f"this is pinned to trl {TRL_VERSION}, found {installed}: {TRL_PIP}",
            f"这里固定使用 TRL {TRL_VERSION}，但找到的是 {installed}：{TRL_PIP}",
        )
    return None
