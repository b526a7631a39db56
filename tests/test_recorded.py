"""grader.judging.recorded: what a student pack answers in the reference's place.

A recording keeps each call a check makes into the reference, in order; a replay answers the k-th
call with the k-th output once its inputs are the recorded ones within the checks' tolerances, and
refuses (NotRecorded, a failed check) anything else: other inputs, another order, another function,
a value the wire format cannot carry.
"""

import inspect
import types

import pytest
import torch

from grader.judging.expect import returned_names
from grader.judging.recorded import Book, NotRecorded, Recorder, Replay, drawn


def centred(values, scale=1.0):
    """Returns: (shifted, mean): the values less their mean, times `scale`; the mean."""
    mean = values.mean()
    shifted = (values - mean) * scale
    return shifted, mean


def handle(values):
    return object()  # no wire value: a check needing it stays the instructor's


REFERENCE = types.SimpleNamespace(centred=centred, handle=handle, WIDTH=4)
INPUTS = torch.tensor([1.0, 2.0, 4.0], dtype=torch.float64)


def recorded(*calls) -> Book:
    """A book of one check, "c", that made `calls` ((args, kwargs) to `centred`), saved and loaded again."""
    book = Book()
    view = Recorder(REFERENCE, book).for_check("c")
    for args, kwargs in calls:
        view.centred(*args, **kwargs)
    return book


def replayed(book: Book, tmp_path, check: str = "c"):
    path = tmp_path / "book.bin"
    book.save(path)
    return Replay(Book.load(path)).for_check(check)


def test_a_replay_answers_the_recorded_calls_in_order(tmp_path):
    book = recorded(((INPUTS,), {}), ((INPUTS * 2,), {"scale": 3.0}))
    view = replayed(book, tmp_path)
    shifted, mean = view.centred(INPUTS)
    assert torch.equal(shifted, centred(INPUTS)[0]) and mean.item() == pytest.approx(7 / 3)
    assert torch.equal(view.centred(INPUTS * 2, scale=3.0)[0], centred(INPUTS * 2, 3.0)[0])
    with pytest.raises(NotRecorded):
        view.centred(INPUTS)  # a third call: nothing left to answer it


def test_inputs_within_the_tolerance_are_answered_and_others_refused(tmp_path):
    book = recorded(((INPUTS,), {}))
    nudged = INPUTS * (1 + 1e-9)  # another CPU's last bits
    assert torch.equal(replayed(book, tmp_path).centred(nudged)[0], centred(INPUTS)[0])
    for other in (INPUTS + 1e-3, INPUTS.float(), INPUTS[:2]):
        with pytest.raises(NotRecorded, match="did not record"):
            replayed(book, tmp_path).centred(other)
    with pytest.raises(NotRecorded):
        replayed(book, tmp_path).centred(INPUTS, scale=2.0)


def test_a_replay_refuses_what_was_not_recorded(tmp_path):
    book = Book()
    view = Recorder(REFERENCE, book).for_check("c")
    assert view.WIDTH == 4  # a constant is the module's own
    view.handle(INPUTS)  # answered by the reference itself while recording
    view.centred(INPUTS)
    assert book.checks["c"][0] == {"kind": "call", "name": "handle", "unrecordable": True}
    replay = replayed(book, tmp_path)
    with pytest.raises(NotRecorded):
        replay.handle(INPUTS)  # its output was never kept
    with pytest.raises(NotRecorded):
        replayed(book, tmp_path).centred(INPUTS)  # out of order: the first call was handle
    with pytest.raises(NotRecorded):
        getattr(replayed(book, tmp_path), "other")  # noqa: B009  (no such function was recorded)
    with pytest.raises(NotRecorded):
        replayed(book, tmp_path, "another check").centred(INPUTS)


def test_a_replayed_function_looks_like_the_reference(tmp_path):
    view = replayed(recorded(((INPUTS,), {})), tmp_path)
    parameters = inspect.signature(view.centred).parameters
    assert list(parameters) == ["values", "scale"]
    assert parameters["values"].default is inspect.Parameter.empty
    assert parameters["scale"].default is not inspect.Parameter.empty  # binding by name works as with the reference
    assert returned_names(view.centred) == returned_names(centred) == ("shifted", "mean")


def test_drawn_names_the_checks_whose_inputs_differ():
    public = recorded(((INPUTS,), {}))
    public.checks["same"] = list(public.checks["c"])
    coursed = recorded(((INPUTS + 1,), {}))
    coursed.checks["same"] = list(public.checks["c"])
    assert drawn(public, coursed) == {"c"}
    coursed.checks["same"] = []  # fewer calls under the course: drawn too
    assert drawn(public, coursed) == {"c", "same"}
