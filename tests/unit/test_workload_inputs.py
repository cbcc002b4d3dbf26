"""bench/workloads/NAME/{README,inputs}: what the harness reads of a workload."""

import pytest

from corral.bench import workloads
from corral.errors import CorralError


def test_every_workload_folder_has_its_three_inputs():
    assert list(workloads.WORKLOADS) == list(workloads.NAMES)
    for w in workloads.WORKLOADS.values():
        assert w.train_args and w.measure_args and w.cache_args, w.name
        assert w.description and "\n" not in w.description


def test_an_inputs_file_is_read_and_checked(tmp_path):
    folder = tmp_path / "toy"
    folder.mkdir()
    (folder / "README").write_text("A toy:\nlinked lists.\n")
    (folder / "inputs").write_text("# comment\ntrain 1 2\nmeasure 10 2 < data.txt\ncache 5 2\n")
    w = workloads.load("toy", tmp_path)
    assert (w.description, w.train_args, w.cache_args) == ("A toy: linked lists.", ("1", "2"), ("5", "2"))
    assert w.measure_args == ("10", "2", "<", "data.txt")      # a redirection, as invocation reads it
    (folder / "inputs").write_text("train 1\nmeasure 2\n")
    with pytest.raises(CorralError, match="no cache input"):
        workloads.load("toy", tmp_path)
    (folder / "inputs").write_text("train 1\ntrain 2\nmeasure 2\ncache 1\n")
    with pytest.raises(CorralError, match="'train' is not one of train, measure, cache or comes twice"):
        workloads.load("toy", tmp_path)
    with pytest.raises(CorralError, match="workload gone: cannot read"):
        workloads.load("gone", tmp_path)
