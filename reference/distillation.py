"""Distillation: a student trained towards a teacher's next-token distributions, or its log-probs.

Knowledge distillation compares two distributions over the vocabulary at every position, the
student's p_S and the teacher's p_T, both softened by one temperature tau (TODO 1):

    p_S = softmax(z_S / tau),  p_T = softmax(z_T / tau)

GKD (Agarwal et al. 2024, "On-Policy Distillation of Language Models", eq. 1) uses the
generalized Jensen-Shannon divergence, with the mixture m = beta * p_T + (1 - beta) * p_S:

    beta = 0:      KL(p_T || p_S)  the forward KL (mode covering)                TODO 2
    beta = 1:      KL(p_S || p_T)  the reverse KL (mode seeking)                 TODO 3
    0 < beta < 1:  beta * KL(p_T || m) + (1 - beta) * KL(p_S || m)               TODO 4

and the loss is its sum over the vocabulary and the kept positions, divided as `reduction`
says (TODO 5). On-policy distillation with a sampled-token reward scores the student's own
sampled tokens y_t by the teacher (TODO 6):

    A_t = log pi_T(y_t) - log pi_S(y_t)      a constant advantage, 0 on padding

whose policy-gradient loss -A_t * log pi_S(y_t) has, for its gradient, the gradient of the
reverse KL estimated on the sampled tokens.

Conventions (TRL 1.16.0's GKDTrainer.generalized_jsd_loss, trl.experimental.gkd):
- `F.kl_div(a, b, log_target=True)` is KL(b || a), the second argument first:
  `F.kl_div(log p_S, log p_T)` is the forward KL(p_T || p_S).
- beta = 0 and beta = 1 are special cases: the generalized JSD itself goes to 0 at both ends
  (it is about beta * KL(p_T || p_S) near 0), so at the ends TRL takes the KL, not the JSD.
- log m = logsumexp(log p_S + log(1 - beta), log p_T + log(beta)): the log of the mixture,
  without leaving log space (TRL: `torch.log1p(-beta)` and `torch.log(beta)`).
- The divergence is kept per vocabulary entry, p * (log p - log q), until the reduction:
  "batchmean" divides the sum by the number of positions whose label is not -100 (at least 1),
  or by B without labels; "sum" is the sum; "mean" divides it by every kept entry (positions
  times V); "none" returns the entries, (B, T, V), or (N, V) for the N kept positions.
- The teacher's logits are not detached here (TRL's trainer computes them under no_grad).

Shapes: student_logits, teacher_logits (B, T, V); labels (B, T); student_logprobs,
teacher_logprobs, response_mask (bool) and the advantages (B, T).
"""

import math

import torch
import torch.nn.functional as F

REDUCTIONS = ("batchmean", "sum", "mean", "none")


def _check_logits(student_logits, teacher_logits, labels, beta, temperature, reduction):
    """Raise ValueError unless the logits, labels, beta, temperature and reduction are valid."""
    for name, logits in (("student_logits", student_logits), ("teacher_logits", teacher_logits)):
        if not isinstance(logits, torch.Tensor) or not logits.is_floating_point():
            raise ValueError(f"{name} must be a floating-point tensor")
        if logits.ndim != 3 or logits.numel() == 0:
            raise ValueError(f"{name} must be a non-empty (B, T, V) tensor, got shape {tuple(logits.shape)}")
        if not bool(logits.isfinite().all()):
            raise ValueError(f"{name} must be finite")
    if student_logits.shape != teacher_logits.shape:
        raise ValueError("student_logits and teacher_logits must have the same shape")
    integers = isinstance(labels, torch.Tensor) and not (labels.is_floating_point() or labels.dtype == torch.bool)
    if not (labels is None or integers):
        raise ValueError("labels must be None or an integer tensor")
    if integers and labels.shape != student_logits.shape[:2]:
        raise ValueError("labels must have the shape (B, T) of the logits")
    if not (isinstance(beta, int | float) and 0 <= beta <= 1):  # NaN fails too
        raise ValueError("beta must be a number in [0, 1]")
    if not (isinstance(temperature, int | float) and math.isfinite(temperature) and temperature > 0):
        raise ValueError("temperature must be a positive finite number")
    if reduction not in REDUCTIONS:
        raise ValueError(f"reduction must be one of {', '.join(REDUCTIONS)}")


def generalized_jsd_loss(student_logits, teacher_logits, labels=None, beta=0.5, temperature=1.0, reduction="batchmean"):
    """The generalized Jensen-Shannon divergence of the student from the teacher, as TRL's GKD.

    Args:
        student_logits: (B, T, V) finite float logits of the student.
        teacher_logits: (B, T, V) finite float logits of the teacher, same dtype.
        labels: None, or (B, T) integer labels; positions labelled -100 do not count.
        beta: in [0, 1]: 0 the forward KL(p_T || p_S), 1 the reverse KL(p_S || p_T), in
            between the generalized JSD with the mixture beta * p_T + (1 - beta) * p_S.
        temperature: positive finite; both models' logits are divided by it.
        reduction: "batchmean" (the sum over kept positions / their count, at least 1, or / B
            without labels), "sum", "mean" (over every kept entry) or "none".

    Returns:
        A scalar loss, or with "none" the per-entry divergence: (B, T, V), or (N, V) for the
        N positions kept by the labels. In the logits' dtype.

    Raises:
        ValueError: on logits that are not finite non-empty (B, T, V) float tensors of one
            shape, labels that are not integers of shape (B, T), beta outside [0, 1], a
            temperature that is not positive and finite, or an unknown reduction.
    """
    _check_logits(student_logits, teacher_logits, labels, beta, temperature, reduction)

    # TODO 1: both models' log-probs, softened by the same temperature
    student_log_probs = F.log_softmax(student_logits / temperature, dim=-1)  # (B, T, V) log p_S
    teacher_log_probs = F.log_softmax(teacher_logits / temperature, dim=-1)  # (B, T, V) log p_T
    # END TODO 1

    if beta == 0:
        # TODO 2: beta = 0, the forward KL(p_T || p_S) per vocabulary entry
        jsd = F.kl_div(student_log_probs, teacher_log_probs, reduction="none", log_target=True)  # (B, T, V) forward KL
        # END TODO 2
    elif beta == 1:
        # TODO 3: beta = 1, the reverse KL(p_S || p_T) per vocabulary entry
        jsd = F.kl_div(teacher_log_probs, student_log_probs, reduction="none", log_target=True)  # (B, T, V) reverse KL
        # END TODO 3
    else:
        # TODO 4: in between, the generalized JSD through the log of the mixture
        beta = torch.tensor(beta, dtype=student_log_probs.dtype, device=student_log_probs.device)  # ()
        log_terms = torch.stack([student_log_probs + torch.log1p(-beta), teacher_log_probs + torch.log(beta)])
        mixture_log_probs = torch.logsumexp(log_terms, dim=0)  # (B, T, V) log(beta p_T + (1 - beta) p_S)
        kl_teacher = F.kl_div(mixture_log_probs, teacher_log_probs, reduction="none", log_target=True)  # KL(p_T||m)
        kl_student = F.kl_div(mixture_log_probs, student_log_probs, reduction="none", log_target=True)  # KL(p_S||m)
        jsd = beta * kl_teacher + (1 - beta) * kl_student  # (B, T, V)
        # END TODO 4

    # TODO 5: drop the positions labelled -100, then reduce
    if labels is not None:
        mask = labels != -100  # (B, T) the positions that count
        jsd = jsd[mask]  # (N, V) the N kept positions
    if reduction == "batchmean":
        count = mask.sum().clamp_min(1) if labels is not None else jsd.size(0)  # kept positions (>= 1), or B
        loss = jsd.sum() / count  # ()
    elif reduction == "sum":
        loss = jsd.sum()  # ()
    elif reduction == "mean":
        loss = jsd.mean()  # () over every kept entry, the vocabulary included
    elif reduction == "none":
        loss = jsd  # "none": (B, T, V), or (N, V)
    # END TODO 5
    return loss


def _check_logprobs(student_logprobs, teacher_logprobs, response_mask):
    """Raise ValueError unless the log-probs are finite (B, T) floats of one shape and the mask fits."""
    for name, logprobs in (("student_logprobs", student_logprobs), ("teacher_logprobs", teacher_logprobs)):
        if not isinstance(logprobs, torch.Tensor) or not logprobs.is_floating_point():
            raise ValueError(f"{name} must be a floating-point tensor")
        if logprobs.ndim != 2 or logprobs.numel() == 0:
            raise ValueError(f"{name} must be a non-empty (B, T) tensor, got shape {tuple(logprobs.shape)}")
        if not bool(logprobs.isfinite().all()):
            raise ValueError(f"{name} must be finite")
    if teacher_logprobs.shape != student_logprobs.shape:
        raise ValueError("student_logprobs and teacher_logprobs must have the same shape")
    if not isinstance(response_mask, torch.Tensor) or response_mask.dtype != torch.bool:
        raise ValueError("response_mask must be a bool tensor")
    if response_mask.shape != student_logprobs.shape:
        raise ValueError("response_mask must have the shape (B, T) of the log-probs")


def on_policy_distillation_advantages(student_logprobs, teacher_logprobs, response_mask):
    """Per-token advantages of on-policy distillation: the teacher's log-prob minus the student's.

    Args:
        student_logprobs: (B, T) finite float log pi_S(y_t) of the tokens the student sampled.
        teacher_logprobs: (B, T) finite float log pi_T(y_t) of the same tokens, same dtype.
        response_mask: (B, T) bool, True on response tokens.

    Returns:
        (B, T) advantages A_t = log pi_T(y_t) - log pi_S(y_t), detached (a constant, like a
        reward), exactly 0 where the mask is False. Used as the advantages of a policy-gradient
        loss -A_t * log pi_S(y_t), whose gradient is that of the sampled reverse KL.

    Raises:
        ValueError: on log-probs that are not finite non-empty (B, T) float tensors of one
            shape, or a mask that is not bool or not of their shape.
    """
    _check_logprobs(student_logprobs, teacher_logprobs, response_mask)

    # TODO 6: the teacher's verdict on each sampled token, a constant, 0 on padding
    advantages = (teacher_logprobs - student_logprobs).detach()  # (B, T) log pi_T - log pi_S, no gradient
    advantages = advantages.masked_fill(~response_mask, 0.0)  # (B, T) exactly 0 on padding
    # END TODO 6
    return advantages
