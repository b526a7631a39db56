"""Concepts of post-training: Bradley-Terry and DPO, GRPO against PPO and RLVR, group
advantages, and the KL penalty with its k3 estimator.

This kata is a quiz written as a Python file. Each question has a key; answer it by setting
ANSWERS[key] inside its TODO:

- a multiple-choice question takes the letter of one option, as a string: "a", "b", "c" or "d";
- a numeric question takes a number; a Python expression is fine, e.g.
  `1 / (1 + math.exp(-0.5))`. It is graded within a tolerance (about two or three decimals).

The questions and their options are listed under each TODO: uncomment a question's line and
replace its `...` with your answer (`...` and None count as not answered yet).
`kata check concepts` grades the
answers and explains each wrong one; `kata quiz concepts` asks the same questions one by one in
the terminal. Conventions:

- Bradley-Terry: P(a preferred over b) = sigmoid(r_a - r_b).
- Group advantages: A_i = (r_i - mean_g) / max(std_g, eps), with the population std.
- k3 estimator of KL(pi_theta || pi_ref): exp(delta) - delta - 1, delta = log pi_ref - log pi_theta.
"""

import math

ANSWERS = {}

# TODO 1: preferences: Bradley-Terry and DPO
ANSWERS["bt_probability"] = 1 / (1 + math.exp(-(3.0 - 1.0)))  # sigmoid(r_a - r_b) = 0.881
ANSWERS["bt_shift"] = "c"  # a shared offset cancels in r_a - r_b
ANSWERS["dpo_removes"] = "b"  # no reward model, no sampling loop; pi_ref stays
ANSWERS["dpo_implicit_reward"] = "d"  # beta * log(pi_theta / pi_ref)
ANSWERS["dpo_beta"] = "a"  # beta weighs the KL to pi_ref: larger beta, less deviation
# END TODO 1

# TODO 2: GRPO, PPO and RLVR
ANSWERS["grpo_removes"] = "c"  # the critic; rewards still come from an RM or a verifier
ANSWERS["grpo_baseline"] = "b"  # the mean reward of the same prompt's group
ANSWERS["grpo_vs_rlvr"] = "d"  # an update rule versus a reward source
# END TODO 2

# TODO 3: group advantages
ANSWERS["group_advantage"] = (1 - 0.25) / math.sqrt((0.75**2 + 3 * 0.25**2) / 4)  # sqrt(3) = 1.732
ANSWERS["equal_rewards"] = "a"  # zero advantages: no signal
# END TODO 3

# TODO 4: the KL penalty and k3
ANSWERS["kl_reference"] = "a"  # the fixed reference, not the old policy
ANSWERS["k3_guarantees"] = "d"  # non-negative, unbiased, 0 where the policies agree
ANSWERS["k3_value"] = math.exp(-1.5 - (-1.0)) - (-1.5 - (-1.0)) - 1  # delta = -0.5: 0.107
ANSWERS["k3_small"] = "b"  # exp(d) - d - 1 = d^2 / 2 + O(d^3): its value, not its variance
ANSWERS["k3_gradient"] = "b"  # E_pi[(1 - pi_ref / pi) grad log pi] = grad KL(pi_ref || pi)
# END TODO 4
