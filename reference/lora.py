"""LoRA: a frozen linear layer plus a trainable low-rank update (Hu et al. 2021), as peft's LoRA Linear.

For a frozen base layer with weight W (d_out, d_in) and bias b, a rank r and a scale alpha:

    A       = lora_A.weight                      (r, d_in)     Kaiming-uniform, a = sqrt(5): U(-1/sqrt(d_in), 1/sqrt(d_in))
    B       = lora_B.weight                      (d_out, r)    zeros: at initialisation the layer is exactly the base
    scaling = alpha / r                                      rsLoRA (Kalajdzievski 2023): alpha / sqrt(r)
    forward(x) = x W^T + b + (dropout(x) A^T B^T) * scaling  (..., d_in) -> (..., d_out)

    merge():   W <- W + (B A) * scaling          (d_out, r) @ (r, d_in) -> (d_out, d_in); forward is then the base alone
    unmerge(): W <- W - (B A) * scaling          the base weight back (to rounding)

Conventions (peft 0.21's `LoraConfig(r, lora_alpha, lora_dropout, use_rslora)` and lora.Linear):
- The base layer is the module given, frozen in place: requires_grad False on its weight and bias.
  Only lora_A.weight and lora_B.weight train: r * (d_in + d_out) numbers instead of d_out * d_in.
- lora_A and lora_B are nn.Linear layers without bias, created in torch's default dtype and device
  (peft then casts them to the base's; here, move the whole module with `.to(...)`).
- Dropout acts on the input of the LoRA path only; the base sees x itself. dropout = 0 is the identity.
- merge() twice warns and does nothing, and so does unmerge() of a layer that is not merged, as in
  peft. While merged, forward() must not add the update again, and dropout no longer applies.

Shapes: x (..., d_in), forward(x) (..., d_out).
"""

import math
import warnings

import torch
import torch.nn as nn


def _check_arguments(base, r, alpha, dropout):
    """Raise ValueError unless base is an nn.Linear, r a positive int, alpha a number and dropout in [0, 1)."""
    if not isinstance(base, nn.Linear):
        raise ValueError("base must be an nn.Linear")
    if isinstance(r, bool) or not isinstance(r, int) or r < 1:
        raise ValueError("r must be a positive int")
    if isinstance(alpha, bool) or not isinstance(alpha, int | float) or not math.isfinite(alpha):
        raise ValueError("alpha must be a finite number")
    if isinstance(dropout, bool) or not isinstance(dropout, int | float) or not 0 <= dropout < 1:
        raise ValueError("dropout must be a number in [0, 1)")


class LoRALinear(nn.Module):
    """A frozen nn.Linear plus the trainable low-rank update B A, scaled: peft's LoRA on one layer."""

    def __init__(self, base, r, alpha, dropout=0.0, use_rslora=False):
        """Wrap `base` and add the adapter.

        Args:
            base: the nn.Linear(d_in, d_out) to adapt. It is frozen in place: its weight and bias get
                requires_grad False.
            r: the rank of the update, a positive int.
            alpha: the scale of the update, a finite number (peft's lora_alpha).
            dropout: the probability of dropout on the input of the LoRA path, in [0, 1).
            use_rslora: scale by alpha / sqrt(r) (rank-stabilised LoRA) instead of alpha / r.

        Raises:
            ValueError: if base is not an nn.Linear, r is not a positive int, alpha not a finite
                number, or dropout outside [0, 1).
        """
        _check_arguments(base, r, alpha, dropout)
        super().__init__()
        self.r = r
        self.alpha = alpha
        self.use_rslora = use_rslora
        self.lora_dropout = nn.Dropout(p=dropout) if dropout > 0 else nn.Identity()
        self.merged = False  # whether the update is inside base.weight (merge / unmerge)
        # TODO 1: keep the base layer and freeze it; add lora_A (Kaiming-uniform) and lora_B (zeros)
        self.base = base
        self.base.requires_grad_(False)
        self.lora_A = nn.Linear(base.in_features, r, bias=False)  # weight (r, d_in)
        self.lora_B = nn.Linear(r, base.out_features, bias=False)  # weight (d_out, r)
        nn.init.kaiming_uniform_(self.lora_A.weight, a=math.sqrt(5))  # U(-1/sqrt(d_in), 1/sqrt(d_in)), as peft
        nn.init.zeros_(self.lora_B.weight)  # B A = 0: the layer starts as the base
        # END TODO 1

        # TODO 2: the scale of the update: alpha / r, or alpha / sqrt(r) with rsLoRA
        self.scaling = alpha / math.sqrt(r) if use_rslora else alpha / r
        # END TODO 2

    def forward(self, x):
        """The base layer's output plus the scaled low-rank update of the (dropped-out) input.

        Args:
            x: (..., d_in) input, in the dtype of the layers.

        Returns:
            (..., d_out): base(x) + lora_B(lora_A(dropout(x))) * scaling, or base(x) alone while
            merged (the update is then inside base.weight).
        """
        # TODO 3: the base's output, plus the scaled update of the dropped-out input unless merged
        result = self.base(x)  # (..., d_out)
        if not self.merged:  # merged: the update is already inside base.weight
            update = self.lora_B(self.lora_A(self.lora_dropout(x)))  # (..., d_in) -> (..., r) -> (..., d_out)
            result = result + update * self.scaling  # (..., d_out)
        # END TODO 3
        return result

    def merge(self):
        """Add the update (B A) * scaling into base.weight, for inference without the extra matmuls.

        A second merge() warns and changes nothing (as peft).
        """
        if self.merged:
            warnings.warn("LoRALinear.merge(): already merged, nothing to do", stacklevel=2)
            return
        with torch.no_grad():  # a change of the weights, not a step of a graph
            # TODO 4: add the update (B A) * scaling into the base weight, in place
            delta = self.lora_B.weight @ self.lora_A.weight * self.scaling  # (d_out, r) @ (r, d_in) -> (d_out, d_in)
            self.base.weight += delta  # (d_out, d_in)
            # END TODO 4
        self.merged = True

    def unmerge(self):
        """Subtract the update (B A) * scaling from base.weight again, to train or swap the adapter.

        unmerge() of a layer that is not merged warns and changes nothing (as peft).
        """
        if not self.merged:
            warnings.warn("LoRALinear.unmerge(): not merged, nothing to do", stacklevel=2)
            return
        with torch.no_grad():  # a change of the weights, not a step of a graph
            # TODO 5: subtract the same update (B A) * scaling from the base weight, in place
            delta = self.lora_B.weight @ self.lora_A.weight * self.scaling  # (d_out, r) @ (r, d_in) -> (d_out, d_in)
            self.base.weight -= delta  # (d_out, d_in)
            # END TODO 5
        self.merged = False
