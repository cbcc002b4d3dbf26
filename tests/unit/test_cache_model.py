"""The scaled cache model (corral/measure/cachegrind.py, `scaled`): caches
shrunk by a power of two so a small training heap is past them, as a real
run's heap is past a real cache."""

from corral.measure import cachegrind


def test_a_small_heap_gets_caches_it_overflows_by_about_the_ratio():
    model = cachegrind.scaled(600 << 10, 8)
    assert (model["D1"], model["LL"]) == ("4096,8,64", "131072,16,64")
    assert model["I1"] == cachegrind.CACHE["I1"]               # code is not the heap
    assert cachegrind.describe(model) == "D1 4 KiB, LL 128 KiB"
    model = cachegrind.scaled(3 << 20, 8)
    assert (model["D1"], model["LL"]) == ("16384,8,64", "524288,16,64")


def test_the_smallest_model_has_sets_enough_and_a_large_heap_none():
    tiny = cachegrind.scaled(10 << 10, 8)
    assert (tiny["D1"], tiny["LL"]) == ("2048,8,64", "65536,16,64")
    assert cachegrind.scaled(8 << 20, 8) is None               # already eight times the stated LL
    assert cachegrind.scaled(7 << 20, 8) is None               # a halving would leave it under the ratio's size


def test_the_command_carries_the_model():
    cmd = cachegrind.command(["./prog"], "out", cache=cachegrind.scaled(600 << 10, 8))
    assert "--D1=4096,8,64" in cmd and "--LL=131072,16,64" in cmd
    assert "--LL=1048576,16,64" in cachegrind.command(["./prog"], "out")
