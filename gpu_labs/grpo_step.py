"""One GRPO update step, the same in every lab: the katas' loss on a real model, and what it measured.

    new      = token_log_probs(policy, batch)                       (B, T), with gradient
    old      = the sampling policy's log-probs (detached)           (B, T); None: this pass is the old policy
    L, A     = compute_grpo_loss(new, old, r, group_ids, mask,      reference.grpo_loss (ratio, clip, k3,
                                 clip_range, eps, ref, beta)        aggregation "grpo")
    clipped  = #{valid tokens with |exp(new - old) - 1| > clip_range}
    kl       = masked_mean(k3_kl(new, ref), mask)                   reference.kl_estimators (only with a ref)
    grad_norm = L2 over the trainable parameters' gradients, clipped at grad_clip when one is given

`Objective(ratio_level="sequence")` feeds the length-normalised log-probs as (B, 1): one ratio per
response (lesson 000's notebook) instead of one per token. `update` is zero_grad, forward,
backward and `finish` (norm, clip, optimizer step); a lab that accumulates micro-batches calls
`forward` per micro-batch and `finish` once.
"""

from dataclasses import dataclass

RATIO_LEVELS = ("token", "sequence")


@dataclass(frozen=True)
class Objective:
    """The loss's settings: clip range, std floor, KL weight (0: none) and the ratio level."""

    clip_range: float
    eps: float = 1e-6
    beta: float = 0.0
    ratio_level: str = "token"


@dataclass
class Step:
    """One forward pass through the objective: the loss and its measurements (log-probs detached)."""

    loss: object  # scalar tensor, with gradient until backward
    advantages: object  # (B,)
    new: object  # (B, T) token log-probs of this pass, detached
    old: object  # (B, T) the sampling policy's
    mask: object  # (B, T) bool, the response tokens
    tokens: float  # valid positions the ratio covers (tokens, or responses at the sequence level)
    clipped: float  # of them, those whose ratio left [1 - clip, 1 + clip]
    kl: float | None  # k3 token mean to the reference; None without one
    grad_norm: float | None = None

    @property
    def clip_fraction(self) -> float:
        return self.clipped / self.tokens


def sequence_mean(log_probs, mask):
    """(B,) length-normalised response log-prob: the mean over each response's tokens."""
    return log_probs.sum(dim=1) / mask.sum(dim=1).to(log_probs.dtype).clamp_min(1.0)  # (B,)


def objective(new, old, rewards, group_ids, mask, settings: Objective, ref=None) -> Step:
    """The kata's loss at the chosen ratio level, its clip count and its k3 KL (see the module docstring)."""
    import torch

    from reference.grpo_loss import compute_grpo_loss
    from reference.kl_estimators import k3_kl, masked_mean

    mask = mask.bool()  # (B, T)
    if settings.ratio_level == "token":
        ratio_new, ratio_old, valid = new, old, mask  # (B, T) each
    else:
        ratio_new, ratio_old = sequence_mean(new, mask).unsqueeze(-1), sequence_mean(old, mask).unsqueeze(-1)  # (B, 1)
        valid = torch.ones_like(ratio_new, dtype=torch.bool)  # (B, 1)
    loss, advantages = compute_grpo_loss(
        ratio_new,
        ratio_old,
        rewards,
        group_ids,
        valid,
        clip_range=settings.clip_range,
        eps=settings.eps,
        log_probs_ref=ref if settings.ratio_level == "token" else None,
        beta=settings.beta,
    )
    with torch.no_grad():
        ratio = torch.exp(ratio_new - ratio_old)  # (B, T) or (B, 1)
        outside = (ratio - 1.0).abs() > settings.clip_range
        kl = float(masked_mean(k3_kl(new, ref), mask)) if ref is not None else None
        clipped = float((outside & valid).sum())
    return Step(loss, advantages, new.detach(), old, mask, float(valid.sum()), clipped, kl)


def forward(policy, batch: dict, old, rewards, group_ids, settings: Objective, ref=None) -> Step:
    """Token log-probs of `batch` under `policy` (with gradient), through the objective; old=None: this pass."""
    from gpu_labs.sequences import token_log_probs

    new, mask = token_log_probs(policy, batch)  # (B, T) each
    return objective(new, new.detach() if old is None else old, rewards, group_ids, mask, settings, ref)


def finish(optimizer, parameters, grad_clip: float | None = None) -> float:
    """The gradient's L2 norm (clipped at grad_clip when given), then the optimizer's step."""
    import torch

    if grad_clip is None:
        norm = gradient_norm(parameters)
    else:
        norm = float(torch.nn.utils.clip_grad_norm_(parameters, grad_clip))
    optimizer.step()
    return norm


def update(
    policy, batch: dict, old, rewards, group_ids, settings: Objective, optimizer, parameters, ref=None, grad_clip=None
) -> Step:
    """One whole update: zero_grad, forward, backward, norm (and clip), optimizer step."""
    optimizer.zero_grad(set_to_none=True)
    step = forward(policy, batch, old, rewards, group_ids, settings, ref)
    step.loss.backward()
    step.grad_norm = finish(optimizer, parameters, grad_clip)
    step.loss = step.loss.detach()
    return step


def gradient_norm(parameters) -> float:
    """L2 norm over every parameter's gradient (float32), without clipping."""
    import torch

    norms = [parameter.grad.detach().float().norm() for parameter in parameters if parameter.grad is not None]
    return float(torch.linalg.vector_norm(torch.stack(norms)))
