"""A whole GRPO run in miniature: a tiny GPT-2 learns to answer `<bos>` with one target token.

The vocabulary is the letters a..i plus `<bos>` (ids 0..9, `<bos>` = 9). The prompt is `<bos>`
alone; an answer is one sampled token, and its reward is 1 if it is the target ("a", id 0), else 0.
Each iteration:

    tokens, old_logp = G answers sampled from the old policy, and their log-probs    (G,), (G,)
    rewards          = 1[token == target]                                            (G,)
    A                = (r - mean(r)) / (std(r) + eps)      unbiased std, eps added   (G,)
    inner_steps times:
        new_logp = log pi(token | <bos>),  ref_logp = log pi_ref(token | <bos>)      (G,)
        rho      = exp(new_logp - old_logp)
        s        = min(rho * A, clip(rho, 1 - clip_range, 1 + clip_range) * A)
        kl       = exp(ref_logp - new_logp) - (ref_logp - new_logp) - 1              k3 of KL(pi || pi_ref)
        loss     = -mean(s - beta * kl);  one Adam step on the policy
    old <- policy                                                                    copy the weights

Conventions:
- The z-score uses the *sample* std (torch's default, divide by G - 1) with eps *added*
  (default 1e-4, TRL's value); the group_advantages kata uses the population std with eps as a
  floor. A group needs at least two answers; an all-equal group gets advantage 0.
- old_logp is recorded without a graph: it is data about the sampler, not a function of weights.
- The reference policy is frozen: its log-probs carry no gradient, and only the policy's
  parameters are in the optimizer. The old policy is a separate copy, refreshed after each
  iteration's inner steps, never aliased to the policy.
- The model has no dropout, so new_logp equals old_logp on the first inner step (ratio 1).
- Randomness comes only from explicit seeds: `build_policy(vocab_size, seed)` and the
  torch.Generator passed to `sample_group`; no module-level model, optimizer or RNG state.

The model is built from a GPT2Config (1 layer, 2 heads, width 16); nothing is downloaded.
"""

import copy
import math

import torch
from transformers import GPT2Config, GPT2LMHeadModel

VOCAB = tuple("abcdefghi") + ("<bos>",)  # token ids 0..9


def _check_vocab_size(vocab_size):
    """Raise ValueError unless vocab_size is an integer >= 2."""
    if int(vocab_size) != vocab_size or vocab_size < 2:
        raise ValueError("vocab_size must be an integer >= 2")


def build_policy(vocab_size, seed):
    """A freshly initialised tiny GPT-2 (no dropout), the same weights for the same seed.

    Args:
        vocab_size: number of token ids (>= 2).
        seed: integer seed of the weight initialisation; the global RNG is left as it was.

    Returns:
        a GPT2LMHeadModel with 1 layer, 2 heads, width 16 and context length 4.
    """
    _check_vocab_size(vocab_size)
    config = GPT2Config(
        vocab_size=int(vocab_size),
        n_positions=4,
        n_embd=16,
        n_layer=1,
        n_head=2,
        resid_pdrop=0.0,
        embd_pdrop=0.0,
        attn_pdrop=0.0,
        bos_token_id=int(vocab_size) - 1,
        eos_token_id=int(vocab_size) - 1,
    )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return GPT2LMHeadModel(config)


def frozen_copy(policy):
    """A deep copy of `policy` whose parameters require no gradient (for the reference and old policies)."""
    return copy.deepcopy(policy).requires_grad_(False)


def next_token_log_probs(policy, bos_id):
    """Log-probabilities of the token that follows the prompt `<bos>`.

    Returns:
        (V,) log pi(. | <bos>); it has a graph when gradients are enabled and the policy's
        parameters require them.
    """
    prompt = torch.tensor([[bos_id]])  # (1, 1)
    logits = policy(prompt).logits[0, -1]  # (V,)
    return torch.log_softmax(logits, dim=-1)  # (V,)


def target_rewards(tokens, target_id):
    """(G,) float rewards: 1.0 where the sampled token is the target, else 0.0."""
    return (tokens == target_id).float()


def target_probability(policy, bos_id, target_id):
    """P(target | <bos>) under `policy`, as a Python float."""
    with torch.no_grad():
        return next_token_log_probs(policy, bos_id)[target_id].exp().item()


def _check_sampling(policy, bos_id, group_size):
    """Raise ValueError unless group_size is an integer >= 1 and bos_id a token id of the policy."""
    vocab_size = policy.config.vocab_size
    if int(group_size) != group_size or group_size < 1:
        raise ValueError("group_size must be an integer >= 1")
    if int(bos_id) != bos_id or not 0 <= bos_id < vocab_size:
        raise ValueError(f"bos_id must be a token id in [0, {vocab_size})")


def sample_group(policy, bos_id, group_size, generator):
    """Sample `group_size` answers to `<bos>` from `policy` (the old policy) and record their log-probs.

    Args:
        policy: the sampling policy; it is only run forward, without a graph.
        bos_id: token id of the prompt.
        group_size: number of answers G (>= 1), drawn independently (with replacement).
        generator: the torch.Generator every random draw comes from.

    Returns:
        (tokens, old_logp): (G,) int64 token ids and (G,) float log-probs of those tokens under
        `policy`, with no graph (requires_grad False).

    Raises:
        ValueError: for a group_size below 1 or a bos_id outside the vocabulary.
    """
    _check_sampling(policy, bos_id, group_size)

    # TODO 1: sample the group from the old policy and keep the log-prob of each answer
    with torch.no_grad():  # the sampler's numbers are data: no graph
        log_probs = next_token_log_probs(policy, bos_id)  # (V,)
    probs = log_probs.exp()  # (V,)
    tokens = torch.multinomial(probs, int(group_size), replacement=True, generator=generator)  # (G,)
    old_logp = log_probs[tokens]  # (G,)
    # END TODO 1
    return tokens, old_logp


def _check_rewards(rewards, eps):
    """Raise ValueError unless rewards are 1-D, float, finite, at least two, and eps > 0; return eps."""
    if rewards.ndim != 1 or rewards.numel() < 2 or not rewards.is_floating_point():
        raise ValueError("rewards must be a 1-D float tensor with at least two entries")
    if not torch.isfinite(rewards).all():
        raise ValueError("rewards must be finite")
    eps = float(eps)
    if not math.isfinite(eps) or eps <= 0:
        raise ValueError("eps must be a positive finite number")
    return eps


def zscore_advantages(rewards, eps=1e-4):
    """Advantages of one group: its rewards standardised with the sample std, eps added.

    A_i = (r_i - mean(r)) / (std(r) + eps), std with Bessel's correction (divide by G - 1).

    Args:
        rewards: (G,) finite float rewards of one group, G >= 2.
        eps: positive finite number added to the std.

    Returns:
        (G,) advantages, dtype of `rewards`; 0 everywhere when all rewards are equal.

    Raises:
        ValueError: for fewer than two rewards, non-finite rewards, or a bad eps.
    """
    eps = _check_rewards(rewards, eps)

    # TODO 2: z-score the group's rewards (sample std, eps added)
    centered = rewards - rewards.mean()  # (G,)
    advantages = centered / (rewards.std() + eps)  # (G,), std divides by G - 1
    # END TODO 2
    return advantages


def _check_step(policy, tokens, old_logp, advantages, clip_range, beta):
    """Raise ValueError for inputs outside grpo_step_loss's contract; return clip_range and beta as floats."""
    vocab_size = policy.config.vocab_size
    if tokens.ndim != 1 or tokens.numel() == 0 or tokens.dtype != torch.int64:
        raise ValueError("tokens must be a non-empty 1-D int64 tensor")
    if old_logp.shape != tokens.shape or advantages.shape != tokens.shape:
        raise ValueError("old_logp and advantages must have one entry per token")
    if int(tokens.min()) < 0 or int(tokens.max()) >= vocab_size:
        raise ValueError(f"tokens must be ids in [0, {vocab_size})")
    if not (torch.isfinite(old_logp).all() and torch.isfinite(advantages).all()):
        raise ValueError("old_logp and advantages must be finite")
    clip_range, beta = float(clip_range), float(beta)
    if not all(math.isfinite(value) and value >= 0 for value in (clip_range, beta)):
        raise ValueError("clip_range and beta must be non-negative finite numbers")
    return clip_range, beta


def grpo_step_loss(policy, ref_policy, bos_id, tokens, old_logp, advantages, clip_range=0.2, beta=0.04):
    """Clipped GRPO surrogate with a k3 penalty towards the frozen reference, for one group.

    Args:
        policy: the policy being trained; the loss's gradient reaches its parameters.
        ref_policy: the frozen reference policy; no gradient reaches it.
        bos_id: token id of the prompt.
        tokens: (G,) int64 sampled token ids.
        old_logp: (G,) log-probs of `tokens` under the policy that sampled them (data).
        advantages: (G,) advantages of the group (constants).
        clip_range: epsilon of the ratio clip, a non-negative finite number.
        beta: weight of the k3 penalty, a non-negative finite number.

    Returns:
        the scalar loss -mean(min(rho * A, clip(rho) * A) - beta * k3).

    Raises:
        ValueError: for mismatched shapes, token ids outside the vocabulary, non-finite
            log-probs or advantages, or a bad clip_range or beta.
    """
    clip_range, beta = _check_step(policy, tokens, old_logp, advantages, clip_range, beta)

    # TODO 3: the clipped surrogate and the k3 penalty towards the frozen reference
    new_logp = next_token_log_probs(policy, bos_id)[tokens]  # (G,), with a graph
    with torch.no_grad():  # the reference is an anchor, not a parameter
        ref_logp = next_token_log_probs(ref_policy, bos_id)[tokens]  # (G,)
    ratio = torch.exp(new_logp - old_logp.detach())  # (G,)
    clipped_ratio = ratio.clamp(1.0 - clip_range, 1.0 + clip_range)  # (G,)
    surrogate = torch.minimum(ratio * advantages.detach(), clipped_ratio * advantages.detach())  # (G,)
    log_ratio_ref = ref_logp - new_logp  # (G,)
    kl = torch.exp(log_ratio_ref) - log_ratio_ref - 1.0  # (G,), k3 >= 0
    loss = -(surrogate - beta * kl).mean()  # ()
    # END TODO 3
    return loss


def _check_modules(old_policy, policy):
    """Raise ValueError unless both are torch modules."""
    if not (isinstance(old_policy, torch.nn.Module) and isinstance(policy, torch.nn.Module)):
        raise ValueError("old_policy and policy must be torch modules")


def sync_old_policy(old_policy, policy):
    """Copy the policy's current weights into `old_policy`, in place; the two stay independent.

    After the call, `old_policy` computes what `policy` computes now; later updates of `policy`
    do not reach it. `policy` is not changed. Returns None.
    """
    _check_modules(old_policy, policy)
    # TODO 4: refresh the old policy with a copy of the policy's weights
    old_policy.load_state_dict(policy.state_dict())
    # END TODO 4


def _check_run(iterations, inner_steps, group_size, target_id, vocab_size):
    """Raise ValueError for a run train() cannot do."""
    if int(iterations) != iterations or iterations < 1 or int(inner_steps) != inner_steps or inner_steps < 1:
        raise ValueError("iterations and inner_steps must be integers >= 1")
    if int(group_size) != group_size or group_size < 2:
        raise ValueError("group_size must be an integer >= 2: a group of one has no spread")
    if int(target_id) != target_id or not 0 <= target_id < vocab_size:
        raise ValueError(f"target_id must be a token id in [0, {vocab_size})")


def train(
    seed,
    iterations=40,
    group_size=32,
    lr=3e-3,
    inner_steps=2,
    clip_range=0.2,
    beta=0.04,
    eps=1e-4,
    vocab_size=10,
    bos_id=9,
    target_id=0,
    stop_at=None,
):
    """Run GRPO on the one-token task and return what happened.

    Runs `iterations` iterations, or stops early after the first one that brings P(target)
    to `stop_at` or above (None: never stop early).

    Returns:
        a dict: "p_target", the list of P(target | <bos>) before training and after each
        iteration (iterations + 1 floats); "informative", for each iteration the fraction of its
        groups whose rewards are not all equal (one group per iteration here: 0.0 or 1.0).

    Raises:
        ValueError: for iterations or inner_steps below 1, group_size below 2, or a target_id
            outside the vocabulary.
    """
    _check_run(iterations, inner_steps, group_size, target_id, vocab_size)
    policy = build_policy(vocab_size, seed)
    ref_policy, old_policy = frozen_copy(policy), frozen_copy(policy)
    optimizer = torch.optim.Adam(policy.parameters(), lr=lr)
    generator = torch.Generator().manual_seed(seed)
    history = {"p_target": [target_probability(policy, bos_id, target_id)], "informative": []}
    for _ in range(iterations):
        tokens, old_logp = sample_group(old_policy, bos_id, group_size, generator)  # (G,), (G,)
        rewards = target_rewards(tokens, target_id)  # (G,)
        history["informative"].append(float(bool((rewards != rewards[0]).any())))
        advantages = zscore_advantages(rewards, eps)  # (G,)
        for _ in range(inner_steps):
            loss = grpo_step_loss(policy, ref_policy, bos_id, tokens, old_logp, advantages, clip_range, beta)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        sync_old_policy(old_policy, policy)
        history["p_target"].append(target_probability(policy, bos_id, target_id))
        if stop_at is not None and history["p_target"][-1] >= stop_at:
            break
    return history
