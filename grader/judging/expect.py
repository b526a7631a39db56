"""What checks use to compare a learner's module with the reference, with messages that teach.

A check receives `expect`, bound to the module under test and the reference:

    out = expect.matches_reference("compute_group_advantages", rewards, group_ids)
    expect.gradients_match_reference("compute_grpo_loss", args, wrt=("log_probs_new",))
    expect.raises_value_error("NaN reward", "compute_group_advantages", bad_rewards, group_ids)

Every call runs on fresh copies of the inputs (and fails if the learner changed them in place);
every failure is a `CheckFailed` whose message names the call, what was expected, what came
back, the largest difference and where.
"""

import ast
import functools
import inspect
import math
import re
import textwrap
from types import MappingProxyType

import torch

from grader.content.i18n import say
from grader.run.judge import MissingName, Refused

TOLERANCE = MappingProxyType({torch.float64: (1e-7, 1e-9), torch.float32: (1e-5, 1e-6), torch.bfloat16: (1.6e-2, 1e-3)})
IN_FULL = 12  # tensors of at most this many values are printed in full
WINDOW = 3  # values shown on each side of the largest difference of a tensor not printed in full (7 at most)
DIGITS = 4  # significant digits of a value shown, more where the expected and the got value agree on those
ORDINALS = ("first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth", "tenth")


class CheckFailed(AssertionError):
    """A check's expectation does not hold; the message is for the learner."""


class MissingFunction(CheckFailed):
    """The module under test lacks a function the checks call."""


class NoFunction(MissingFunction):
    """The module under test has no function `name`: worded when shown, in the message language
    then (grader.judging.outcomes words it again in every language without running the check)."""

    def __init__(self, name: str):
        super().__init__(name)
        self.name = name

    def __str__(self) -> str:
        return _no_function(self.name)


def fmt(value) -> str:
    """Short, stable text for a value: small tensors in full (4 significant digits), big ones by shape."""
    if isinstance(value, torch.Tensor):
        if value.numel() <= IN_FULL:
            return _fmt_nested(value.detach().cpu().tolist())
        return shape_only(value)
    if isinstance(value, torch.nn.Module):
        return f"<{type(value).__name__}>"
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, tuple | list):
        inner = ", ".join(fmt(item) for item in value)
        return f"({inner})" if isinstance(value, tuple) else f"[{inner}]"
    return repr(value)


def shape_only(tensor: torch.Tensor) -> str:
    """'<float32 tensor of shape (4, 7)>': a tensor too big to print, by dtype and shape."""
    dtype, shape = str(tensor.dtype).removeprefix("torch."), tuple(tensor.shape)
    return say(f"<{dtype} tensor of shape {shape}>", f"<{dtype} 张量，形状 {shape}>")


def _fmt_nested(value) -> str:
    if isinstance(value, list):
        return "[" + ", ".join(_fmt_nested(item) for item in value) + "]"
    if isinstance(value, float):
        return f"{value:.4g}"
    return repr(value)


def describe_call(reference_fn, name: str, args: tuple, kwargs: dict) -> str:
    """`name(arg=value, ...)` with the reference's parameter names."""
    try:
        bound = inspect.signature(reference_fn).bind(*args, **kwargs)
        parts = [f"{key}={fmt(value)}" for key, value in bound.arguments.items()]
    except TypeError:
        parts = [fmt(arg) for arg in args] + [f"{key}={fmt(value)}" for key, value in kwargs.items()]
    return f"{name}({', '.join(parts)})"


def fresh(value):
    """A leaf copy of a tensor (keeping requires_grad); other values as they are."""
    if isinstance(value, torch.Tensor):
        return value.detach().clone().requires_grad_(value.requires_grad)
    return value


def _same_values(a: torch.Tensor, b: torch.Tensor) -> bool:
    return a.shape == b.shape and bool(((a == b) | (a.isnan() & b.isnan())).all())


class Expect:
    """Comparisons of the module under test (`learner`, a contestant) against `reference` (a module here)."""

    def __init__(self, learner, reference):
        self.learner = learner
        self.reference = reference

    def call(self, name: str, *args, **kwargs):
        """The learner's `name(*args, **kwargs)` as data; fail if it changes a tensor argument in place."""
        try:
            result, after = self.learner.call_and_inputs(name, *args, **kwargs)
        except MissingName:
            raise NoFunction(name) from None
        except Refused as refusal:
            raise CheckFailed(f"{self.describe(name, args, kwargs)}\n  {refusal}") from None
        tensors = [value for value in [*args, *kwargs.values()] if isinstance(value, torch.Tensor)]
        labels = [
            label
            for label, value in zip(self._labels(name, args, kwargs), [*args, *kwargs.values()])
            if isinstance(value, torch.Tensor)
        ]
        for label, before, now in zip(labels, tensors, after):
            if not (isinstance(now, torch.Tensor) and now.dtype == before.dtype and _same_values(before.detach(), now)):
                raise CheckFailed(
                    say(
                        f"{name} changed its input `{label}` in place.\n"
                        f"  before: {fmt(before)}\n  after:  {fmt(now)}\n"
                        "An input must come back as it was: an in-place operation on it (such as -= or .sub_())"
                        " writes into the caller's tensor.",
                        f"{name} 原地修改了输入 `{label}`。\n"
                        f"  修改前：{fmt(before)}\n  修改后：{fmt(now)}\n"
                        "输入必须保持原样：对它做原地运算（如 `-=` 或 `.sub_()`）会写进调用者的张量。",
                    )
                )
        return result

    def reference_call(self, name: str, *args, **kwargs):
        return getattr(self.reference, name)(*[fresh(a) for a in args], **{k: fresh(v) for k, v in kwargs.items()})

    def matches_reference(self, name: str, *args, **kwargs):
        """The learner's output equals the reference's in type, shape, dtype and value; returns it."""
        expected = self.reference_call(name, *args, **kwargs)
        got = self.call(name, *args, **kwargs)
        self.same(got, expected, self.describe(name, args, kwargs), names=returned_names(getattr(self.reference, name)))
        return got

    def shaped_like_reference(self, name: str, *args, **kwargs):
        """The learner's output has the reference's structure, shapes and dtypes (values not compared)."""
        expected = self.reference_call(name, *args, **kwargs)
        got = self.call(name, *args, **kwargs)
        names = returned_names(getattr(self.reference, name))
        self.same(got, expected, self.describe(name, args, kwargs), values=False, names=names)
        return got

    def gradients_match_reference(self, name: str, *args, wrt: tuple[str, ...], pick=(), cotangent=None, **kwargs):
        """Backpropagate the picked output; each input in `wrt` gets the reference's gradient.

        `pick` is the index path of the output to backpropagate (0: the first returned value);
        with a `cotangent`, sum(output * cotangent) is. An input the reference sends no gradient
        to must get none (or only zeros) from the learner.
        """
        call = self.describe(name, args, kwargs)
        _, expected = self._reference_gradients(name, args, kwargs, wrt, pick, cotangent)
        _, got = self.gradients(name, *args, wrt=wrt, pick=pick, cotangent=cotangent, **kwargs)
        for label in wrt:
            want, have = expected[label], got[label]
            if want is None:
                if have is not None and bool((have != 0).any()):
                    largest, at = f"{have.abs().max().item():.4g}", list(_where(have.abs()))
                    raise CheckFailed(
                        f"{call}\n  "
                        + say(
                            f"no gradient should reach `{label}`, but one did: largest |grad| {largest} at {at}",
                            f"梯度不应传到 `{label}`，但传到了：最大的 |grad| 为 {largest}，位于 {at}",
                        )
                    )
                continue
            if have is None:
                raise CheckFailed(
                    f"{call}\n  "
                    + say(
                        f"no gradient reached `{label}`; the reference sends one: {fmt(want)}",
                        f"没有梯度传到 `{label}`；参考答案会传来梯度：{fmt(want)}",
                    )
                )
            self.same(
                have,
                want,
                f"{call}\n  " + say(f"gradient of the loss with respect to `{label}`", f"损失对 `{label}` 的梯度"),
            )

    def gradients(
        self, name: str, *args, wrt: tuple[str, ...], pick=(), cotangent=None, **kwargs
    ) -> tuple[float, dict]:
        """The learner's picked scalar output and the gradient each input in `wrt` receives (or None)."""
        labels, positional, keywords = self._leaves(name, args, kwargs, wrt)
        try:
            answer = self.learner.backward(name, positional, keywords, _path(pick), cotangent)
        except MissingName:
            raise NoFunction(name) from None
        except Refused as refusal:
            raise CheckFailed(f"{self.describe(name, args, kwargs)}\n  {refusal}") from None
        output, grads = answer["output"], answer["grads"]
        if not isinstance(output, torch.Tensor) or output.ndim != 0 or grads is None:
            raise CheckFailed(
                f"{self.describe(name, args, kwargs)}\n  "
                + say(
                    f"returned {_kind(output)} where a scalar loss tensor was expected",
                    f"返回了{_kind(output)}，而这里应返回标量损失张量",
                )
            )
        received = dict(zip(labels, grads))
        return output.item(), {label: received.get(label) for label in wrt}

    def raises_value_error(self, why: str, name: str, *args, **kwargs) -> None:
        """The learner rejects a bad input with ValueError (the input contract)."""
        rejects_with_value_error(why, self.describe(name, args, kwargs), lambda: self.call(name, *args, **kwargs))

    def same(self, got, expected, what: str, values: bool = True, names: tuple[str, ...] = ()) -> None:
        """`got` has the structure, shapes, dtypes and (within tolerance, unless not `values`) values of `expected`.

        Tuples and lists are compared item by item, dicts key by key, tensors by shape, dtype and
        value, floats within the float64 tolerance (NaN equals NaN), anything else with ==.
        `names` name a returned tuple's items in the messages ("the first returned value, `loss`").
        """
        if isinstance(expected, tuple | list):
            kind = "tuple" if isinstance(expected, tuple) else "list"
            if not isinstance(got, tuple | list) or len(got) != len(expected):
                raise CheckFailed(
                    f"{what}\n  "
                    + say(
                        f"returned {_kind(got)}; expected a {kind} of {len(expected)} values",
                        f"返回了{_kind(got)}；应返回含 {len(expected)} 个值的 {kind}",
                    )
                )
            for index, (have, want) in enumerate(zip(got, expected)):
                self.same(have, want, f"{what}\n  {_item(kind, index, names)}{say(':', '：')}", values)
            return
        if isinstance(expected, dict):
            if not isinstance(got, dict):
                raise CheckFailed(
                    f"{what}\n  "
                    + say(
                        f"returned {_kind(got)}; expected a dict with keys {sorted(expected)}",
                        f"返回了{_kind(got)}；应返回键为 {sorted(expected)} 的 dict",
                    )
                )
            if set(got) != set(expected):
                missing, extra = sorted(set(expected) - set(got)), sorted(set(got) - set(expected))
                raise CheckFailed(
                    f"{what}\n  "
                    + say(f"keys: missing {missing}, unexpected {extra}", f"键：缺少 {missing}，多出 {extra}")
                )
            for key, want in expected.items():
                self.same(got[key], want, f"{what}  [{key!r}]", values)
            return
        if isinstance(expected, torch.Tensor):
            self._same_tensor(got, expected, what, values)
            return
        if isinstance(expected, float) and isinstance(got, int | float) and not isinstance(got, bool):
            rtol, atol = TOLERANCE[torch.float64]
            both_nan = math.isnan(expected) and math.isnan(got)
            if not values or both_nan or abs(got - expected) <= atol + rtol * abs(expected):
                return
        elif not values or (got == expected and type(got) is type(expected)):
            return
        raise CheckFailed(f"{what}\n{_expected_got(expected, got)}")

    def _same_tensor(self, got, expected: torch.Tensor, what: str, values: bool = True) -> None:
        if not isinstance(got, torch.Tensor):
            shape = tuple(expected.shape)
            raise CheckFailed(
                f"{what}\n  "
                + say(
                    f"returned {_kind(got)}; expected a torch.Tensor of shape {shape}",
                    f"返回了{_kind(got)}；应返回形状为 {shape} 的 torch.Tensor",
                )
            )
        if got.shape != expected.shape:
            want, have = tuple(expected.shape), tuple(got.shape)
            raise CheckFailed(
                f"{what}\n  " + say(f"shape: expected {want}, got {have}", f"形状：应为 {want}，实际为 {have}")
            )
        if got.dtype != expected.dtype:
            raise CheckFailed(
                f"{what}\n  "
                + say(
                    f"dtype: expected {expected.dtype}, got {got.dtype}",
                    f"dtype：应为 {expected.dtype}，实际为 {got.dtype}",
                )
            )
        if not values:
            return
        rtol, atol = TOLERANCE.get(expected.dtype, (1e-5, 1e-6))
        difference = compared(got, expected, rtol, atol)
        if difference:
            raise CheckFailed(f"{what}\n{difference}")

    def describe(self, name: str, args: tuple, kwargs: dict) -> str:
        return describe_call(getattr(self.reference, name), name, args, kwargs)

    def _labels(self, name: str, args: tuple, kwargs: dict) -> list[str]:
        params = list(inspect.signature(getattr(self.reference, name)).parameters)
        unnamed = [say(f"argument {i}", f"第 {i + 1} 个参数") for i in range(len(args))]
        return [params[i] if i < len(params) else unnamed[i] for i in range(len(args))] + list(kwargs)

    def _leaves(self, name: str, args: tuple, kwargs: dict, wrt: tuple[str, ...]):
        """(labels of the tensor arguments that require grad, positional, keyword): fresh leaves."""
        labels = self._labels(name, args, kwargs)
        leaves = {label: fresh(value) for label, value in zip(labels, [*args, *kwargs.values()])}
        for label in wrt:
            leaves[label].requires_grad_(True)
        grad_labels = [
            label for label in labels if isinstance(leaves[label], torch.Tensor) and leaves[label].requires_grad
        ]
        return grad_labels, [leaves[label] for label in labels[: len(args)]], {key: leaves[key] for key in kwargs}

    def _reference_gradients(self, name, args, kwargs, wrt, pick, cotangent) -> tuple[float, dict]:
        """The reference's picked output and gradients; a recording (grader.judging.recorded) keeps or
        answers them where the reference stands in for one."""
        compute = lambda: self._live_gradients(name, args, kwargs, wrt, pick, cotangent)
        remembered = getattr(self.reference, "remembered", None)
        if remembered is None:
            return compute()
        return remembered("gradients", name, (args, kwargs, list(wrt), _path(pick), cotangent), compute)

    def _live_gradients(self, name, args, kwargs, wrt, pick, cotangent) -> tuple[float, dict]:
        labels, positional, keywords = self._leaves(name, args, kwargs, wrt)
        output = getattr(self.reference, name)(*positional, **keywords)
        for step in _path(pick):
            output = output[step]
        if cotangent is not None:
            output = (output * cotangent.to(output.dtype)).sum()
        if output.requires_grad:
            output.backward()
        leaves = dict(zip(self._labels(name, args, kwargs), [*positional, *keywords.values()]))
        return output.item(), {label: leaves[label].grad for label in wrt}


def returned_names(fn) -> tuple[str, ...]:
    """The names of the values `fn` returns, from its `return a, b` statements (when they all agree),
    else from its docstring's `Returns: (a, b): ...`; () when neither says. "" for an unnamed one.
    A recorded function (grader.judging.recorded) carries them as `returned_names`."""
    recorded = getattr(fn, "returned_names", None)
    return recorded if isinstance(recorded, tuple) else _returned_names(fn)


@functools.cache
def _returned_names(fn) -> tuple[str, ...]:
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    except (OSError, TypeError, SyntaxError):
        tree = ast.Module(body=[], type_ignores=[])
    returns = {
        tuple(item.id if isinstance(item, ast.Name) else "" for item in node.value.elts)
        for node in ast.walk(tree)
        if isinstance(node, ast.Return) and isinstance(node.value, ast.Tuple)
    }
    if len(returns) == 1:
        return returns.pop()
    documented = re.search(r"Returns:\s*\(([\w\s,]+)\)", inspect.getdoc(fn) or "")
    return tuple(name.strip() for name in documented.group(1).split(",")) if documented else ()


def _item(kind: str, index: int, names: tuple[str, ...]) -> str:
    """'the first returned value, `loss`' (a tuple), 'the second item' (a list)."""
    noun = "returned value" if kind == "tuple" else "item"
    what = f"the {ORDINALS[index]} {noun}" if index < len(ORDINALS) else f"{noun} number {index + 1}"
    name = names[index] if index < len(names) else ""
    what_zh = f"第 {index + 1} 个" + ("返回值" if kind == "tuple" else "元素")
    return say(f"{what}, `{name}`", f"{what_zh} `{name}`") if name else say(what, what_zh)


def _expected_got(expected, got) -> str:
    """The two lines '  expected: ...' and '  got:      ...'."""
    return say(f"  expected: {fmt(expected)}\n  got:      {fmt(got)}", f"  应为：{fmt(expected)}\n  实际：{fmt(got)}")


def _no_function(name: str) -> str:
    return say(
        f"your file has no function `{name}`: the checks call it by that name",
        f"你的文件中没有函数 `{name}`：检查按这个名字调用它",
    )


def _window(want: torch.Tensor, have: torch.Tensor, index: tuple[int, ...]) -> str:
    """Lines of the expected and got values around `index` along the last dimension, '>' at it."""
    if not index:
        return ""
    *outer, position = index
    at = [(*outer, i) for i in range(max(0, position - WINDOW), min(want.shape[-1], position + WINDOW + 1))]
    width = max(len(str(list(where))) for where in at) + 2
    rows = [(where, *pair(want[where].item(), have[where].item())) for where in at]
    column = max([12, *(len(text) for _, *texts in rows for text in texts)])
    header = say(
        f"  {'index':>{width}}  {'expected':>{column}}  {'got':>{column}}   (> the largest difference)",
        f"  {'位置':>{width - 2}}  {'应为':>{column - 2}}  {'实际':>{column - 2}}   （> 处差异最大）",
    )
    lines = [header]
    for where, want_text, have_text in rows:
        mark = ">" if where == index else " "
        lines.append(f"  {mark}{str(list(where)):>{width - 1}}  {want_text:>{column}}  {have_text:>{column}}")
    return "\n".join(lines) + "\n"


def pair(want: float, have: float) -> tuple[str, str]:
    """An expected and a got value as text: DIGITS significant digits, or as many as it takes to
    show the first digit where they differ (0.5 and 0.50001: 0.5 and 0.50001, not 0.5 and 0.5)."""
    for digits in range(DIGITS, 18):
        want_text, have_text = f"{want:.{digits}g}", f"{have:.{digits}g}"
        if want_text != have_text:
            return want_text, have_text
    return f"{want:.{DIGITS}g}", f"{have:.{DIGITS}g}"


def compared(got: torch.Tensor, want: torch.Tensor, rtol: float = 0.0, atol: float = 0.0) -> str:
    """How `got` differs from `want` (same shape) beyond atol + rtol * |want|, as the messages show it,
    or "" where it does not: both tensors in full up to IN_FULL values, else by shape with the values
    around the largest difference beneath (WINDOW on each side), then where the largest difference
    (or a NaN where none belongs) lies. Also for a check that compares tensors itself."""
    got_values, want_values = got.detach().double(), want.detach().double()
    nan_mismatch = got_values.isnan() != want_values.isnan()
    error = (got_values - want_values).abs().nan_to_num(nan=0.0, posinf=float("inf"))
    error = torch.where(nan_mismatch, torch.full_like(error, float("inf")), error)
    too_far = error > atol + rtol * want_values.abs().nan_to_num(nan=0.0)
    if not bool(too_far.any()):
        return ""
    worst = torch.where(too_far, error, torch.zeros_like(error))
    index = _where(nan_mismatch.double() if bool(nan_mismatch.any()) else worst)  # a NaN mismatch first
    at = worst[index] if worst.ndim else worst
    position, (want_text, have_text) = list(index), pair(want_values[index].item(), got_values[index].item())
    if bool(nan_mismatch.any()) and math.isnan(got_values[index].item()):
        detail = say(
            f"NaN at {position}, where {want_text} was expected", f"在 {position} 处得到 NaN，应为 {want_text}"
        )
    elif bool(nan_mismatch.any()):
        detail = say(
            f"{have_text} at {position}, where NaN was expected", f"在 {position} 处应为 NaN，实际为 {have_text}"
        )
    else:
        largest = f"{at.item():.{DIGITS}g}"
        detail = say(
            f"largest difference {largest} at {position} (expected {want_text}, got {have_text})",
            f"最大差异 {largest}，位于 {position}（应为 {want_text}，实际为 {have_text}）",
        )
    window = _window(want_values, got_values, index) if want.numel() > IN_FULL else ""  # 7 values at most
    return f"{_expected_got(want, got)}\n{window}  {detail}"


def values_text(values: torch.Tensor, at: tuple[int, ...] | None = None) -> str:
    """A tensor's values for a message: in full up to IN_FULL values, else by shape and the WINDOW
    values on each side of `at` (default: the first non-finite one, else the first) along the last axis."""
    values = values.detach()
    if values.numel() <= IN_FULL:
        return fmt(values)
    flat = values.double()
    if at is None:
        bad = ~flat.isfinite()
        at = _where(bad.double()) if bool(bad.any()) else tuple(0 for _ in flat.shape)
    *outer, position = at
    shown = [(*outer, i) for i in range(max(0, position - WINDOW), min(flat.shape[-1], position + WINDOW + 1))]
    cells = ", ".join(f"{list(where)}: {flat[where].item():.{DIGITS}g}" for where in shown)
    return f"{shape_only(values)} {{{cells}}}"


def _path(pick) -> tuple:
    """An output's index path: () for the output itself, 0 for the first returned value."""
    return (pick,) if isinstance(pick, int) else tuple(pick)


def assert_no_gradient(grads: dict, label: str, where: str) -> None:
    """`label` received no gradient (None or all zeros) in `grads` (Expect.gradients' second value)."""
    gradient = grads[label]
    if gradient is not None and bool((gradient != 0).any()):
        largest = gradient.abs().max().item()
        raise AssertionError(
            say(
                f"{where}: no gradient should reach `{label}`, but one did: largest |grad| {largest:.4g}",
                f"{where}：梯度不应到达 `{label}`，但到达了：最大 |grad| 为 {largest:.4g}",
            )
        )


def rejects_with_value_error(why: str, call: str, run) -> None:
    """`run()` must raise ValueError; `call` describes it in the failure (also usable for methods)."""
    try:
        result = run()
    except ValueError:
        return
    except NotImplementedError:
        raise
    except Exception as error:
        raised = f"{type(error).__name__}: {error}"
        raise CheckFailed(
            f"{call}\n  "
            + say(
                f"should raise ValueError ({why}), but raised {raised}",
                f"应抛出 ValueError（{why}），却抛出了 {raised}",
            )
        ) from None
    raise CheckFailed(
        f"{call}\n  "
        + say(
            f"should raise ValueError ({why}), but returned {fmt(result)}",
            f"应抛出 ValueError（{why}），却返回了 {fmt(result)}",
        )
    )


def _where(values: torch.Tensor) -> tuple[int, ...]:
    """Index of the largest entry. Plain arithmetic: torch.unravel_index imports sympy (2 s) on first use."""
    flat = int(values.reshape(-1).argmax())
    index = []
    for size in reversed(values.shape):
        flat, position = divmod(flat, size)
        index.append(position)
    return tuple(reversed(index))


def _kind(value) -> str:
    """'a tensor of shape (3,)', 'a tuple of 2 values', 'a float (0.5)'."""
    kind = type(value).__name__
    if isinstance(value, torch.Tensor):
        return say(f"a tensor of shape {tuple(value.shape)}", f"形状为 {tuple(value.shape)} 的张量")
    if isinstance(value, tuple | list):
        return say(f"a {kind} of {len(value)} values", f"含 {len(value)} 个值的 {kind}")
    return say(f"a {kind} ({fmt(value)})", f" {kind}（{fmt(value)}）")
