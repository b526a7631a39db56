"""The lora reference agrees with peft's own LoRA layer (peft.tuners.lora.Linear): `nox -s conformance`.

A tiny model with two linear layers is wrapped by `get_peft_model(model, LoraConfig(r, lora_alpha,
lora_dropout, use_rslora, target_modules=["proj"]))`; the reference's LoRALinear wraps a copy of the
same `proj`. Both get the same seeded A and B (B nonzero), then compared: the forward (layer and
whole model), merge (`merge_adapter()`, and `merge_and_unload()`'s plain weights) and unmerge
(`unmerge_adapter()`), to 1e-6 in float32 and 1e-12 in float64, with and without rsLoRA; the
seeded dropout in train mode; the initialisation from one torch.manual_seed; merge twice and
unmerge of a layer not merged (both: a warning and no change). Two misconception variants, run
the same way, disagree: the comparison can fail.
"""

import copy
import types
import warnings

import pytest
import torch
import torch.nn as nn

try:
    import peft
    from peft import LoraConfig, get_peft_model
except ImportError as error:  # peft is in the labs and conformance extras
    pytest.skip(
        f"the lora conformance tests need peft ({error}): pip install -e '.[conformance]'", allow_module_level=True
    )

from grader.content.catalogue import get_kata  # noqa: E402
from reference.lora import LoRALinear  # noqa: E402

TOL = {torch.float32: 1e-6, torch.float64: 1e-12}
IN, OUT = 12, 7


class Tiny(nn.Module):
    """Two linear layers; peft adapts `proj` only."""

    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(IN, OUT)
        self.head = nn.Linear(OUT, 3)

    def forward(self, x):
        return self.head(torch.tanh(self.proj(x)))


def both(
    seed: int, r: int, alpha: float, dropout: float = 0.0, use_rslora: bool = False, dtype=torch.float32, cls=None
):
    """(peft's model, its LoRA layer, our model with `proj` wrapped by `cls`) on the same seeded weights and A, B."""
    torch.manual_seed(seed)
    model = Tiny()
    ours = copy.deepcopy(model)
    config = LoraConfig(r=r, lora_alpha=alpha, lora_dropout=dropout, use_rslora=use_rslora, target_modules=["proj"])
    theirs = get_peft_model(model, config)
    ours.proj = (cls or LoRALinear)(ours.proj, r, alpha, dropout, use_rslora)
    generator = torch.Generator().manual_seed(seed + 1)
    A, B = torch.randn(r, IN, generator=generator), torch.randn(OUT, r, generator=generator)
    layer = theirs.base_model.model.proj
    with torch.no_grad():
        for a, b in ((layer.lora_A["default"], layer.lora_B["default"]), (ours.proj.lora_A, ours.proj.lora_B)):
            a.weight.copy_(A)
            b.weight.copy_(B)
    return theirs.to(dtype), layer, ours.to(dtype)


def close(mine, theirs, dtype):
    torch.testing.assert_close(mine, theirs, rtol=TOL[dtype], atol=TOL[dtype])


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["float32", "float64"])
@pytest.mark.parametrize("use_rslora", [False, True], ids=["lora", "rslora"])
@pytest.mark.parametrize(("r", "alpha"), [(4, 8.0), (8, 4.0), (1, 1.0)])
def test_forward_merge_and_unmerge_match_peft(dtype, use_rslora, r, alpha):
    theirs, layer, ours = both(0, r, alpha, use_rslora=use_rslora, dtype=dtype)
    assert ours.proj.scaling == layer.scaling["default"]
    x = torch.randn(5, 3, IN, generator=torch.Generator().manual_seed(2), dtype=dtype)
    with torch.no_grad():
        close(ours.proj(x), layer(x), dtype)
        close(ours(x), theirs(x), dtype)
        theirs.merge_adapter()
        ours.proj.merge()
        close(ours.proj.base.weight, layer.base_layer.weight, dtype)
        close(ours(x), theirs(x), dtype)
        theirs.unmerge_adapter()
        ours.proj.unmerge()
        close(ours.proj.base.weight, layer.base_layer.weight, dtype)
        close(ours(x), theirs(x), dtype)
        ours.proj.merge()
        plain = theirs.merge_and_unload()
        close(ours.proj.base.weight, plain.proj.weight, dtype)
        close(ours(x), plain(x), dtype)


def test_seeded_dropout_in_train_mode_matches_peft():
    theirs, _, ours = both(3, 4, 8.0, dropout=0.3)
    x = torch.randn(6, IN, generator=torch.Generator().manual_seed(4))
    torch.manual_seed(5)
    mine = ours(x)
    torch.manual_seed(5)
    close(mine, theirs(x), torch.float32)
    assert not torch.allclose(mine, ours.eval()(x))  # the dropout did drop something


def test_initialisation_from_one_seed_matches_peft():
    """After the same torch.manual_seed: the same A, B = 0, the base frozen, the same trainable parameters."""
    config = LoraConfig(r=8, lora_alpha=16, target_modules=["proj"])
    torch.manual_seed(6)
    model = Tiny()
    ours_base = copy.deepcopy(model.proj)
    state = torch.random.get_rng_state()
    layer = get_peft_model(model, config).base_model.model.proj
    torch.random.set_rng_state(state)
    ours = LoRALinear(ours_base, 8, 16)
    torch.testing.assert_close(ours.lora_A.weight, layer.lora_A["default"].weight, rtol=0, atol=0)
    assert not ours.lora_B.weight.any() and not layer.lora_B["default"].weight.any()
    assert [name for name, p in ours.named_parameters() if p.requires_grad] == ["lora_A.weight", "lora_B.weight"]
    assert not any(p.requires_grad for p in layer.base_layer.parameters())


def test_merge_twice_and_unmerge_unmerged_warn_and_change_nothing_as_in_peft():
    _, layer, ours = both(7, 4, 8.0)
    for target in (layer, ours.proj):
        weight = target.get_base_layer().weight if target is layer else target.base.weight
        before = weight.detach().clone()
        with pytest.warns(UserWarning):
            target.unmerge()
        assert torch.equal(weight, before)
        target.merge()
        merged = weight.detach().clone()
        with pytest.warns(UserWarning):
            target.merge()
        assert torch.equal(weight, merged)
    close(ours.proj.base.weight, layer.base_layer.weight, torch.float32)


def variant_class(misconception: str) -> type:
    """LoRALinear as the misconception's variant of the reference defines it (run in a fresh module)."""
    module = types.ModuleType(f"lora_{misconception}")
    exec(compile(get_kata("lora").variant(misconception), module.__name__, "exec"), module.__dict__)
    return module.LoRALinear


def test_misconception_variants_disagree_with_peft():
    """The comparison is sharp enough: scaling alpha * r changes the forward, a transposed update the merge."""
    x = torch.randn(4, IN, generator=torch.Generator().manual_seed(8), dtype=torch.float64)
    theirs, _, ours = both(9, 4, 8.0, dtype=torch.float64, cls=variant_class("scaling_alpha_times_r"))
    with torch.no_grad():
        assert (ours(x) - theirs(x)).abs().max() > 1e-3
    square = IN  # the transposed update fits only a square layer
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.manual_seed(10)
        base = nn.Linear(square, square).double()
        layer = get_peft_model(nn.Sequential(copy.deepcopy(base)), LoraConfig(r=3, lora_alpha=6, target_modules=["0"]))
    peft_layer = layer.base_model.model[0]
    variant = variant_class("merge_transposed")(base, 3, 6)
    generator = torch.Generator().manual_seed(11)
    A, B = torch.randn(3, square, generator=generator), torch.randn(square, 3, generator=generator)
    with torch.no_grad():
        for a, b in ((peft_layer.lora_A["default"], peft_layer.lora_B["default"]), (variant.lora_A, variant.lora_B)):
            a.weight.copy_(A)
            b.weight.copy_(B)
        peft_layer.merge()
        variant.merge()
    assert (variant.base.weight - peft_layer.base_layer.weight).abs().max() > 1e-3


def test_peft_is_the_pinned_version():
    """pyproject's conformance extra pins the peft these comparisons were made against."""
    assert peft.__version__ == "0.21.2", f"peft {peft.__version__}: the conformance extra pins 0.21.2"
