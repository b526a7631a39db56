"""A reward model: a frozen backbone, a linear value head on the last real token, and the
Bradley-Terry preference loss.

For a batch of B sequences of T token ids (right-padded; attention_mask marks the real tokens):

    h          = backbone(input_ids)                      (B, T, H)   frozen: no gradient, no update
    last_b     = (number of real tokens in row b) - 1     index of row b's last real token
    r_b        = value_head(h[b, last_b])                 (B,)        value_head = nn.Linear(H, 1)

For pairs of rewards (chosen y_w, rejected y_l, same prompt):

    P(y_w preferred over y_l) = sigmoid(r_w - r_l)        Bradley-Terry
    L = mean_i [ -log sigmoid(r_w,i - r_l,i) ]            computed as -logsigmoid, stable for any margin

Conventions:
- Only the value head trains. Every backbone parameter has requires_grad False, and the backbone
  runs under torch.no_grad(), so it neither receives a gradient nor keeps activations for one.
  TRL and OpenRLHF fine-tune the whole model (or LoRA adapters) instead; the loss is the same.
- The sequence is read at its last real token: with right padding that is position
  (number of ones in the mask) - 1; attention_mask None means every position is real, so it is
  the last position. The backbone is called on the ids alone, as in the lesson; it must be causal
  (position t sees tokens 0..t) for the padding after the last real token to change nothing.
- The value head keeps nn.Linear's bias (the lesson's choice); HF's `score` head and OpenRLHF's
  `value_head` have none. The Bradley-Terry loss only sees differences, so the bias gets no
  gradient from it.
- The loss is the mean over pairs, not the sum, as in TRL's RewardTrainer (without its optional
  `margin` and `center_rewards_coefficient` terms).

Shapes: input_ids (B, T) integer, attention_mask (B, T) bool or 0/1, rewards (B,), loss ().
"""

import torch
import torch.nn as nn
import torch.nn.functional as F


def _check_backbone(backbone, hidden_dim):
    """Raise ValueError unless backbone is an nn.Module and hidden_dim a positive int."""
    if not isinstance(backbone, nn.Module):
        raise ValueError("backbone must be an nn.Module")
    if isinstance(hidden_dim, bool) or not isinstance(hidden_dim, int) or hidden_dim < 1:
        raise ValueError("hidden_dim must be a positive int")


def _check_ids(input_ids, attention_mask):
    """Raise ValueError for ids or a mask outside RewardModel.forward's contract; return the (B, T) bool mask."""
    if input_ids.ndim != 2 or input_ids.numel() == 0 or input_ids.is_floating_point():
        raise ValueError("input_ids must be a non-empty (B, T) integer tensor")
    if attention_mask is None:
        attention_mask = torch.ones_like(input_ids, dtype=torch.bool)
    if attention_mask.shape != input_ids.shape:
        raise ValueError("attention_mask must have the shape of input_ids")
    if not ((attention_mask == 0) | (attention_mask == 1)).all():
        raise ValueError("attention_mask must hold only 0/1 (or False/True)")
    mask = attention_mask.bool()  # (B, T)
    if not mask.any(dim=-1).all():
        raise ValueError("every row needs at least one real token")
    if (mask[:, 1:] & ~mask[:, :-1]).any():
        raise ValueError("attention_mask must be right-padded: in each row, ones then zeros")
    return mask


def _check_rewards(reward_chosen, reward_rejected):
    """Raise ValueError unless both are non-empty 1-D tensors of the same shape."""
    if reward_chosen.ndim != 1 or reward_chosen.numel() == 0 or reward_chosen.shape != reward_rejected.shape:
        raise ValueError("reward_chosen and reward_rejected must be non-empty 1-D tensors of the same shape")


class RewardModel(nn.Module):
    """A frozen sequence encoder with a trainable scalar head on each sequence's last real token."""

    def __init__(self, backbone, hidden_dim):
        """Wrap `backbone` and add the value head.

        Args:
            backbone: an nn.Module mapping input ids (B, T) to hidden states (B, T, hidden_dim).
                It is frozen in place: its parameters get requires_grad False.
            hidden_dim: H, the width of the backbone's hidden states, a positive int.

        Raises:
            ValueError: if backbone is not an nn.Module or hidden_dim is not a positive int.
        """
        _check_backbone(backbone, hidden_dim)
        super().__init__()
        self.hidden_dim = hidden_dim
        # TODO 1: keep the backbone, freeze every parameter of it, and add the trainable value head
        self.backbone = backbone
        self.backbone.requires_grad_(False)
        self.value_head = nn.Linear(hidden_dim, 1)  # (H,) -> (1,)
        # END TODO 1

    def forward(self, input_ids, attention_mask=None):
        """One reward per sequence, read at its last real token.

        Args:
            input_ids: (B, T) integer token ids, B >= 1 and T >= 1.
            attention_mask: (B, T) bool or 0/1 tensor, right padding: each row is some ones
                followed by zeros, with at least one one. None means every position is real.

        Returns:
            (B,) rewards, in the dtype of the value head's output.

        Raises:
            ValueError: for ids that are not a non-empty 2-D integer tensor, a mask of another
                shape, with values other than 0/1, padding that is not on the right, or a row
                without any real token; or hidden states that are not (B, T, hidden_dim).
        """
        mask = _check_ids(input_ids, attention_mask)  # (B, T) bool
        with torch.no_grad():  # the backbone is frozen: build no graph through it
            hidden_states = self.backbone(input_ids)  # (B, T, H)
        if hidden_states.shape != (*input_ids.shape, self.hidden_dim):
            raise ValueError("the backbone must return hidden states of shape (B, T, hidden_dim)")

        # TODO 2: the hidden state at each row's last real token, through the value head
        last_index = mask.sum(dim=-1) - 1  # (B,), right padding: real tokens sit at 0 .. length - 1
        rows = torch.arange(hidden_states.shape[0], device=hidden_states.device)  # (B,)
        last_hidden = hidden_states[rows, last_index]  # (B, H)
        rewards = self.value_head(last_hidden).squeeze(-1)  # (B, 1) -> (B,)
        # END TODO 2
        return rewards

    def compute_preference_loss(self, reward_chosen, reward_rejected):
        """Bradley-Terry loss of preferring each chosen sequence over its rejected partner.

        Args:
            reward_chosen: (B,) rewards of the preferred sequences.
            reward_rejected: (B,) rewards of the other sequence of each pair.

        Returns:
            () the mean over pairs of -log sigmoid(reward_chosen - reward_rejected).

        Raises:
            ValueError: unless both are non-empty 1-D tensors of the same shape.
        """
        _check_rewards(reward_chosen, reward_rejected)
        # TODO 3: the Bradley-Terry loss, -log sigmoid(chosen - rejected), averaged over pairs
        margin = reward_chosen - reward_rejected  # (B,)
        loss = -F.logsigmoid(margin).mean()  # (), stable: never log(0)
        # END TODO 3
        return loss
