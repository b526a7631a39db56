"""Verifiable rewards: read a final answer out of generated text, score it, combine reward columns.

RLVR replaces the learned reward model by a program. For a GSM8K-style answer:

    predicted = extract_answer(text)            tag <answer>..</answer>, else "#### N", else last number
    reward    = min(1.0 * [|predicted - gold| <= 1e-4] + 0.2 * [exactly one well-formed tag], 1.2)

For the verifier "integer-answer-v1" of the grpo_mechanism lab (gpu_labs/grpo_mechanism.py):

    parsed      = last integer (-?[0-9]+) of the stripped response, or None ("unjudgeable")
    correctness = 1.0 if parsed == expected else 0.0
    format_pass = 1.0 if the whole stripped response is one integer else 0.0
    total       = 1.0 * correctness + 0.1 * format_pass

Several reward functions give a table of scores; a function may abstain with None (TRL's rule):

    table[n, f] = scores[f][n], None -> NaN                     (N, F)
    combined[n] = nansum_f(weights[f] * table[n, f])            (N,)
    combined[n] = NaN when every entry of row n is NaN          nothing could score it

Conventions (pinned here, argued in the lesson):
- The answer tag is authoritative. When text holds one or more complete tags, the *last* tag is
  the answer and its last number is the value; a tag without a number (empty, words only) gives
  None and the text elsewhere is never searched. Falling through would grade numbers the model
  did not put forward as its answer (a restated question, a list of guesses).
- "#### N" (the GSM8K gold format) comes second, its last occurrence; then the last number.
- A number is an optional minus, digits with optional thousands commas ("1,234"), and optional
  decimals: "1,234.5" -> 1234.5, "-7" -> -7.0. "$", "%" and units around it are ignored.
- Correct means |predicted - gold| <= 1e-4 (absolute); gold None means nothing can be correct.
- The format bonus needs exactly one "<answer>" and one "</answer>" around a single number.
- integer-answer-v1 keeps the lab's integer rule as it is: "4.0" parses as 0, "1,234" as 234.
- The combined reward is float32 (TRL's dtype). An all-None row stays NaN, as in TRL 1.16 (which
  warns, sets the row back to NaN after its nansum, leaves it out of the group's mean and std,
  and gives it advantage 0); here the caller must decide what to do with it.
"""

import math
import re

import torch

ANSWER_TAG = r"<answer>(.*?)</answer>"  # the content of each complete tag (use re.DOTALL)
NUMBER = r"-?(?:[0-9]{1,3}(?:,[0-9]{3})+|[0-9]+)(?:\.[0-9]+)?"  # -7, 0.25, 1,234.5 (no groups)
CORRECT_BONUS = 1.0
FORMAT_BONUS = 0.2
REWARD_CLIP = 1.2
ANSWER_TOLERANCE = 1e-4

VERIFIER_ID = "integer-answer-v1"
CORRECTNESS_WEIGHT = 1.0
FORMAT_WEIGHT = 0.1


def extract_answer(text):
    """The final numeric answer of a response, or None.

    Priority: the last complete <answer>...</answer> tag (its last number; None when it holds
    none), then the last "#### N", then the last number anywhere in the text.

    Args:
        text: the generated response.

    Returns:
        float, or None when the rule that applies finds no number.
    """

    # TODO 1: the tag decides, then a "#### N" line, then the last number in the text
    def numbers(part):
        return [float(token.replace(",", "")) for token in re.findall(NUMBER, part)]

    tags = re.findall(ANSWER_TAG, text, flags=re.DOTALL)
    if tags:
        inside = numbers(tags[-1])  # the last tag is the final answer
        return inside[-1] if inside else None  # an empty tag answers nothing: no fallback
    marked = re.findall(r"####\s*(" + NUMBER + ")", text)
    if marked:
        return numbers(marked[-1])[0]
    found = numbers(text)
    return found[-1] if found else None
    # END TODO 1


def has_well_formed_answer(text):
    """True when the text has exactly one <answer>...</answer> tag and it holds one number.

    Surrounding whitespace inside the tag is allowed ("<answer> 42 </answer>"); anything else in
    it ("42 apples", "$42", "") is not. A second tag, or a stray opening or closing marker, fails.

    Args:
        text: the generated response.

    Returns:
        bool.
    """
    # TODO 2: exactly one opening and one closing marker, around a single number
    if text.count("<answer>") != 1 or text.count("</answer>") != 1:
        return False
    match = re.search(ANSWER_TAG, text, flags=re.DOTALL)
    return match is not None and re.fullmatch(NUMBER, match.group(1).strip()) is not None
    # END TODO 2


def reward_gsm8k(text, gold):
    """Correctness (dominant) plus a small format bonus, clipped.

    Args:
        text: the generated response.
        gold: the reference answer (a number), or None when there is none.

    Returns:
        float in [0, 1.2]: 1.0 if extract_answer(text) is within 1e-4 of gold, plus 0.2 if
        has_well_formed_answer(text), at most 1.2.
    """
    # TODO 3: 1.0 for a correct answer (absolute tolerance), 0.2 for the format, clipped
    reward = 0.0
    predicted = extract_answer(text)
    if predicted is not None and gold is not None and abs(predicted - gold) <= ANSWER_TOLERANCE:
        reward += CORRECT_BONUS
    if has_well_formed_answer(text):
        reward += FORMAT_BONUS
    return min(reward, REWARD_CLIP)
    # END TODO 3


def verify_integer_response(response, expected_answer):
    """The grpo_mechanism lab's verifier "integer-answer-v1": one record per response.

    Args:
        response: the generated response.
        expected_answer: the correct integer.

    Returns:
        dict with verifier_id ("integer-answer-v1"), status ("ok", or "unjudgeable" when no
        integer was found), parsed_answer (the last integer, or None), correctness (1.0 / 0.0),
        format_pass (1.0 when the whole stripped response is one integer, else 0.0) and
        total_reward = 1.0 * correctness + 0.1 * format_pass.
    """
    # TODO 4: parse the last integer, judge it, check the format, build the record
    stripped = response.strip()
    integers = re.findall(r"-?[0-9]+", stripped)
    parsed_answer = int(integers[-1]) if integers else None
    correctness = 1.0 if parsed_answer is not None and parsed_answer == expected_answer else 0.0
    format_pass = 1.0 if re.fullmatch(r"-?[0-9]+", stripped) else 0.0
    return {
        "verifier_id": VERIFIER_ID,
        "status": "ok" if parsed_answer is not None else "unjudgeable",
        "parsed_answer": parsed_answer,
        "correctness": correctness,
        "format_pass": format_pass,
        "total_reward": CORRECTNESS_WEIGHT * correctness + FORMAT_WEIGHT * format_pass,
    }
    # END TODO 4


def _check_scores(scores, weights) -> None:
    """Raise ValueError unless there is a weight per reward function and they score as many responses."""
    if len(scores) == 0:
        raise ValueError("scores needs at least one reward function")
    if len(weights) != len(scores):
        raise ValueError(f"{len(weights)} weights for {len(scores)} reward functions")
    if len({len(column) for column in scores}) != 1:
        raise ValueError("every reward function must score the same number of responses")


def combine_rewards(scores, weights):
    """Weighted sum of several reward functions' scores, skipping the ones that abstained.

    Args:
        scores: F lists (one per reward function) of N scores (one per response), each a
            float or None (the function abstains on that response).
        weights: F weights (a list or a tensor), one per reward function.

    Returns:
        (N,) float32 tensor: sum over functions of weight * score, None counted as missing;
        NaN for a response that every function abstained on.

    Raises:
        ValueError: when there is no reward function, when weights and scores disagree in
            length, or when the functions score different numbers of responses.
    """
    _check_scores(scores, weights)

    # TODO 5: None -> NaN, weighted nansum per response, NaN where no function scored
    table = torch.tensor(
        [[math.nan if score is None else float(score) for score in column] for column in scores],
        dtype=torch.float32,
    ).T  # (N, F)
    weights = torch.as_tensor(weights, dtype=torch.float32)  # (F,)
    combined = (table * weights).nansum(dim=1)  # (N,)
    unscorable = table.isnan().all(dim=1)  # (N,)
    combined = torch.where(unscorable, torch.full_like(combined, math.nan), combined)  # (N,)
    # END TODO 5
    return combined
