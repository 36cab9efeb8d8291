"""Tests of gpu_peers.py that need no GPU: arguments, source loading, references and checks,
the dry run. Run with `python3 -m pytest bench/peers` (NumPy and pytest needed)."""

import json
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import gpu_peers as gp  # noqa: E402


def args(*extra):
    return gp.Config(gp.build_parser().parse_args(list(extra)))


def test_defaults_cover_the_suite():
    cfg = args()
    assert cfg.sizes == [1 << 20, 1 << 22, 1 << 24]
    assert cfg.blocksum_sizes == [1 << 24]
    assert cfg.logistic == [(1 << 18, 256), (1 << 18, 1024), (1 << 24, 1024)]
    assert cfg.runs >= gp.MIN_RUNS and args("--quick").runs >= gp.MIN_RUNS
    names = gp.planned_names(cfg)
    for want in ["peer_torch_saxpy_16777216", "peer_cupy_logistic_16777216_1024",
                 "peer_cupy_launch_latency", "peer_triton_compile_blocksum",
                 "peer_cudac_blocksum_16777216", "peer_torch_launch_latency"]:
        assert want in names
    assert "peer_torch_compile_saxpy" not in names
    assert len(names) == len(set(names))


def test_blocks_come_from_the_command_line_or_the_default():
    cfg = args("--blocks", "1048576=77,262144=5")
    assert cfg.blocks_for(1 << 20) == 77
    assert cfg.blocks_for(1 << 18) == 5
    assert cfg.blocks_for(1 << 24) == gp.default_blocks(1 << 24) == (1 << 24) // 1024
    assert gp.default_blocks(1) == 1


@pytest.mark.parametrize("flag,value", [
    ("--sizes", "0"), ("--sizes", "abc"), ("--sizes", str(1 << 32)),
    ("--logistic", "5"), ("--logistic", "10x0"), ("--blocks", "10=0"), ("--blocks", "10"),
    ("--frameworks", "jax"), ("--runs", "10"), ("--warmup", "0"),
])
def test_bad_arguments_are_errors_that_say_what_is_wrong(flag, value):
    with pytest.raises(gp.PeerError) as e:
        args(flag, value)
    assert flag in str(e.value)
    assert gp.main([flag, value, "--dry-run"]) == 2


def test_filter_selects_names():
    cfg = args("--filter", "logistic,latency", "--frameworks", "cupy")
    names = gp.planned_names(cfg)
    assert names == ["peer_cupy_logistic_262144_256", "peer_cupy_logistic_262144_1024",
                     "peer_cupy_logistic_16777216_1024", "peer_cupy_launch_latency",
                     "peer_cupy_launch100_latency", "peer_cupy_compile_logistic"]


def test_a_filter_ending_in_a_dollar_matches_name_ends():
    cfg = args("--filter", "logistic_262144_256$", "--frameworks", "cupy")
    assert gp.planned_names(cfg) == ["peer_cupy_logistic_262144_256"]


def test_torch_plans_its_captured_graph_of_the_launch_chain():
    names = gp.planned_names(args("--filter", "launch100", "--frameworks", "torch,cupy"))
    assert names == ["peer_torch_launch100_latency", "peer_torch_graph_launch100_latency",
                     "peer_cupy_launch100_latency"]


def test_hand_written_sources_load_with_their_symbols():
    sources = gp.load_sources(gp.HERE / "cuda")
    assert set(sources) == set(gp.KERNELS)
    for kernel, src in sources.items():
        assert src.symbol == kernel
        assert f'extern "C" __global__ void {kernel}(' in src.text
        assert src.options == ()


def test_symbols_are_found_in_generated_looking_sources(tmp_path):
    (tmp_path / "saxpy.cu").write_text(
        'typedef unsigned int u32;\n'
        'extern "C" __global__ void __launch_bounds__(256) nacre_saxpy_grid_stride(float a, float* x, float* y, u32 n) {}\n')
    (tmp_path / "vecadd.cu").write_text(
        'extern "C" __global__ void one() {}\nextern "C" __global__ void two() {}\n')
    src = gp.load_sources(tmp_path, kernels=("saxpy",))
    assert src["saxpy"].symbol == "nacre_saxpy_grid_stride"
    with pytest.raises(gp.PeerError, match="exactly one"):
        gp.load_sources(tmp_path, kernels=("vecadd",))
    with pytest.raises(gp.PeerError, match="missing"):
        gp.load_sources(tmp_path, kernels=("logistic",))
    assert gp.load_sources(tmp_path, kernels=("saxpy", "logistic"), required=False).keys() == {"saxpy"}


def test_the_manifest_names_symbols_and_options(tmp_path):
    (tmp_path / "k.cu").write_text(
        'extern "C" __global__ void one(unsigned int *c) {}\n'
        'extern "C" __global__ void two(uint32_t *counter, uint32_t *status) {}\n')
    (tmp_path / "kernels.json").write_text(json.dumps({
        "nvrtc_options": ["--gpu-architecture=sm_90", "-arch", "sm_90", "--std=c++17", "-lineinfo"],
        "kernels": {"tiny": {"file": "k.cu", "symbol": "two"}},
    }))
    src = gp.load_sources(tmp_path, kernels=("tiny",))["tiny"]
    assert src.symbol == "two"
    assert src.status
    assert src.options == ("--std=c++17", "-lineinfo")
    (tmp_path / "kernels.json").write_text(json.dumps({"kernels": {"tiny": {"file": "k.cu", "symbol": "three"}}}))
    with pytest.raises(gp.PeerError, match="three"):
        gp.load_sources(tmp_path, kernels=("tiny",))
    (tmp_path / "kernels.json").write_text("{not json")
    with pytest.raises(gp.PeerError, match="JSON"):
        gp.load_sources(tmp_path, kernels=("tiny",))


def test_the_status_word_is_recognised_and_wrong_signatures_are_errors(tmp_path):
    assert not gp.takes_status("saxpy", "float a, float *x, float *y, uint32_t n", "s.cu")
    assert gp.takes_status("saxpy", "float v0, float *v1, float *v2, uint32_t v3, uint32_t *status", "s.cu")
    assert gp.takes_status("tiny", "unsigned int* c, unsigned int *s", "t.cu")
    with pytest.raises(gp.PeerError, match="should take 3 parameters"):
        gp.takes_status("logistic", "float *v, uint32_t n", "l.cu")
    with pytest.raises(gp.PeerError, match="trailing"):
        gp.takes_status("logistic", "float *v, uint32_t n, uint32_t i, float *extra", "l.cu")
    (tmp_path / "logistic.cu").write_text(
        'extern "C" __global__ void nacre_logistic(float *v0, uint32_t v1, uint32_t v2, uint32_t *status) {\n}\n')
    assert gp.load_sources(tmp_path, kernels=("logistic",))["logistic"].status


def test_unique_sources_differ_per_nonce():
    src = gp.Source("tiny", "x", "tiny", Path("t.cu"))
    assert src.unique(1) != src.unique(2)
    assert src.unique(1).startswith("x\n")


def inputs_of(kernel, n, iters=None, seed=3):
    bench = gp.Bench(kernel, n, iters)
    return bench, gp.make_inputs(bench, np.random.default_rng(seed))


def test_saxpy_and_vecadd_checks_accept_float32_results_and_reject_wrong_ones():
    bench, inp = inputs_of("saxpy", 10_000)
    y = (np.float32(gp.ALPHA) * inp["x"] + inp["y"]).astype(np.float32)
    assert gp.check(bench, inp, y)[0]
    fused = (np.float64(gp.ALPHA) * inp["x"] + inp["y"]).astype(np.float32)  # one rounding (FMA)
    assert gp.check(bench, inp, fused)[0]
    bad = y.copy()
    bad[1234] += 1e-3
    ok, err, tol = gp.check(bench, inp, bad)
    assert not ok and err > tol
    assert not gp.check(bench, inp, y[:-1])[0]
    nan = y.copy()
    nan[5] = np.nan
    assert not gp.check(bench, inp, nan)[0]

    bench, inp = inputs_of("vecadd", 4096)
    c = (inp["a"] + inp["b"]).astype(np.float32)
    assert gp.check(bench, inp, c)[0]
    assert not gp.check(bench, inp, inp["a"])[0]


def tree_sums(x):
    """The kernel's order: per block of 256, add element t + s to t for s = 128 .. 1."""
    n = gp.block_count(x.size) * gp.BLOCK
    s = np.zeros(n, dtype=np.float32)
    s[: x.size] = x
    s = s.reshape(-1, gp.BLOCK)
    half = gp.BLOCK // 2
    while half:
        s[:, :half] = s[:, :half] + s[:, half:2 * half]
        half //= 2
    return s[:, 0].copy()


def test_block_sum_check_accepts_the_tree_order_and_rejects_a_wrong_sum():
    bench, inp = inputs_of("blocksum", 256 * 100 + 17)
    sums = tree_sums(inp["x"])
    assert sums.size == 101
    assert gp.check(bench, inp, sums)[0]
    plain = np.add.reduceat(np.pad(inp["x"], (0, 256 - 17)), np.arange(0, 101 * 256, 256)).astype(np.float32)
    assert gp.check(bench, inp, plain)[0]
    bad = sums.copy()
    bad[7] += 0.01
    assert not gp.check(bench, inp, bad)[0]


def test_logistic_reference_is_the_kernels_float32_order():
    v0 = np.array([0.1, 0.5, 0.9], dtype=np.float32)
    want = []
    for x in v0:
        for _ in range(100):
            x = np.float32(np.float32(3.9) * x) * np.float32(np.float32(1.0) - x)
        want.append(x)
    assert np.array_equal(gp.logistic_reference(v0, 100), np.array(want, dtype=np.float32))
    # The map is chaotic: float64 arithmetic ends somewhere else after 100 steps.
    x64 = v0.astype(np.float64)
    for _ in range(100):
        x64 = 3.9 * x64 * (1 - x64)
    assert np.abs(x64 - gp.logistic_reference(v0, 100)).max() > 1e-3


def test_logistic_check_uses_the_sample_and_rejects_another_order():
    bench, inp = inputs_of("logistic", 100_000, 64)
    idx = gp.logistic_sample(bench.n)
    assert idx[0] == 0 and idx[-1] == bench.n - 1 and len(idx) <= gp.LOGISTIC_CHECKED
    good = gp.logistic_reference(inp["v"][idx], 64)
    assert gp.check(bench, inp, good)[0]
    x = inp["v"][idx].copy()
    for _ in range(64):  # another rounding order: 3.9 * (x * (1 - x))
        x = np.float32(3.9) * (x * (np.float32(1.0) - x))
    assert not gp.check(bench, inp, x)[0]
    small = gp.Bench("logistic", 10, 3)
    assert len(gp.logistic_sample(small.n)) == 10


def test_summary_is_median_mad_min():
    s = gp.summarize([5.0, 1.0, 3.0, 100.0, 4.0])
    assert (s["median"], s["mad"], s["min"], s["runs"]) == (4.0, 1.0, 1.0, 5)


def test_failed_checks_are_reported_and_not_recorded(capsys):
    run = gp.Run(args())
    run.record_check("peer_x_saxpy_1", False, 0.5, 1e-6)
    run.record_check("peer_x_saxpy_2", True, 0.0, 1e-6)
    assert run.checks["peer_x_saxpy_1"]["ok"] is False
    assert any("CHECK FAILED peer_x_saxpy_1" in n for n in run.notes)
    assert "CHECK FAILED" in capsys.readouterr().err
    doc = gp.document(run, {})
    assert doc["failed_checks"] == ["peer_x_saxpy_1"]
    assert doc["results"] == {}


def test_nvrtc_options_drop_only_the_architecture():
    assert gp.nvrtc_options(["-arch=sm_90", "-default-device", "--gpu-architecture", "compute_90", "-G"]) == (
        "-default-device", "-G")


def test_dry_run_writes_the_plan(tmp_path):
    out = tmp_path / "peers.json"
    assert gp.main(["--dry-run", "--source-dir", str(gp.HERE / "cuda"), "--json", str(out)]) == 0
    doc = json.loads(out.read_text())
    assert doc["unit"] == "ns" and doc["results"] == {}
    assert doc["plan"]["cupy_symbols"]["logistic"] == "logistic"
    assert "peer_cupy_launch_latency" in doc["plan"]["names"]
    assert doc["config"]["grid_stride_blocks"]["16777216"] == gp.default_blocks(1 << 24)


def test_a_run_without_gpu_frameworks_writes_notes(tmp_path, monkeypatch):
    # Hide the frameworks even where they are installed.
    for name in ("torch", "cupy", "triton"):
        monkeypatch.setitem(sys.modules, name, None)
    out = tmp_path / "peers.json"
    assert gp.main(["--quick", "--json", str(out)]) == 0
    doc = json.loads(out.read_text())
    assert doc["results"] == {}
    assert any("torch unavailable" in n for n in doc["notes"])
    assert any("cupy unavailable" in n for n in doc["notes"])
