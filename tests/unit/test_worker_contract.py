"""The worker contract (``checks/worker/contract.py``): every command and every answer through
its line and back, the GPU's included (kernel timing, telemetry, autotuner picks, ceilings),
answers recorded on the H200 read through it, what it refuses and how it says so, and the
worker code's answers (GPU paths too, read from their source) against its fields."""

from __future__ import annotations

import ast
import dataclasses
import json
import math
import sys
from typing import Any

import pytest

from checks.sweep.models import Ceilings, EnvFingerprint
from checks.sweep.protocol import Block as ProtocolBlock
from checks.worker import contract as c
from tests.paths import DATA, ROOT

WORKER = ROOT / "checks" / "worker"
LAUNCHES = "../bench_entries/launches"  # the worker loads it from its sibling folder
RECORDED = json.loads((DATA / "worker_traffic" / "h200.json").read_text())

PICK = c.Pick(
    function="matmul_kernel",
    config={"BLOCK_M": 128, "BLOCK_N": 256, "num_warps": 8, "num_stages": 3, "SPLIT": True},
    offered="3f1c0a9e77d2b615",
    source="a0b1c2d3e4f50617",
)
PINNED = dataclasses.replace(PICK, pinned=True)
# every mark set, each a little later than the one before
MARKS = c.Marks(**{f.name: 10.0 + i / 10 for i, f in enumerate(dataclasses.fields(c.Marks))})
# a reading recorded on the H200 that names a throttle reason
TELEMETRY = c.from_json(c.Telemetry, RECORDED["blocks"][-1]["block"]["telemetry"])
assert TELEMETRY.throttle_names

# one of each command, with every field set that the bot sets anywhere
REQUESTS: list[c.Request[Any]] = [
    c.Hello(),
    c.Env(),
    c.Prepare(("mod:bench", "mod:other"), (4096, 512), "bfloat16", seed=7, estimate=False,
              pins=(PICK, PINNED), max_copies=64, max_copy_bytes=2**32, copies=12),
    c.Prepare(("mod:bench",), (1000,), "float32"),
    c.Estimate(),
    c.Check(("mod:bench",), (3, 700), "float16", 1_000_003, pins=(PINNED,), launches="profiler"),
    c.Configure("graph", 5.0, preroll=True, est_us=2.07, like=c.Like(graph_calls=2048),
                time_replays=False),
    c.Configure("kernels-noflush", 5.0, like=c.Like(calls_per_block=4096)),
    c.Configure("eager", 2.5, est_us=190.7, like=c.Like(1, 2048, 3)),
    c.Replays(replays=40),
    c.Replays(block_ms=5.0),
    c.Block(),
    c.Finish(recheck=True, alone=True, lock_wait_s=60.0),
    c.Finish(),
    c.Warmup(min_s=0.25, max_s=10.0, clock_fraction=0.9, unless_up=True),
    c.MeasureCeilings(),
    c.Quit(),
]  # fmt: skip

# one or more answers to each command, every field of each filled somewhere
REPLIES: list[tuple[c.Request[Any], Any]] = [
    (c.Hello(), c.HelloReply(version=c.VERSION, pid=4242, python="3.12.3", side="head",
                             root="/w/head", gc_frozen=81234, **c.as_json(MARKS))),
    (c.Env(), c.EnvReply(RECORDED["env"])),
    (c.Prepare(("m:b",), (4,), "f"), c.PrepareReply(
        entry="perf_report:bench/b.py:bench", est_us=None, host_us=None, bytes_moved=49152,
        flops=0, copies=64, footprint_bytes=49152, prepare_s=0.0069, configs_picked=(PICK,),
        compile_s=0.0031)),
    (c.Prepare(("m:b",), (4,), "f"), c.PrepareReply(
        entry="m:b", est_us=3.1, host_us=8.2, bytes_moved=0, flops=2000, copies=4,
        footprint_bytes=12000, prepare_s=0.02, configs_picked=())),
    (c.Estimate(), c.EstimateReply(est_us=2.07, host_us=24.5)),
    (c.Check(("m:b",), (4,), "f", 1), c.CheckReply(
        has_reference=True, atol=1e-2, rtol=1e-3, configs_picked=(PICK, PINNED), correct=False,
        message="1 elements differ", bad_elements=1, max_abs_err=math.inf,
        digest=(c.Digest(shape=(2, 2), dtype="float32", nan=1, inf=0, idx=(0, 3),
                         samples=(math.nan, 1.5), parts=((0, 2, 1.0, 1.0), (2, 4, -math.inf, 2.0))),),
        steps_s={"wait_key": 0.01, "first_call": 1.2, "first_call_compile": 0.9}, marks=MARKS,
        launched=c.Launched(kernels=(c.Launch("_fwd_kernel", True, 2, atomics=True),
                                     c.Launch("toyops::softmax_kernel", False, 1)),
                            profiler=True, note="the profiler's record could not be read",
                            allocations=2))),
    (c.Check(("m:b",), (4,), "f", 1), c.CheckReply(
        has_reference=False, atol=None, rtol=None, configs_picked=(), correct=False,
        message="2 outputs, reference has 1", digest=(), steps_s={})),
    (c.Configure("graph", 5.0), c.ConfigureReply(mode="graph", est_us=1.1, graph_calls=2048,
                                                  preroll_calls=64)),
    (c.Configure("graph", 5.0), c.ConfigureReply(mode="graph", est_us=1.1, graph_calls=2048,
        preroll_calls=0, replays=3, calls_per_block=6144, graph_call_us=0.41)),
    (c.Configure("eager", 5.0), c.ConfigureReply(mode="eager", est_us=190.7, calls_per_block=26,
        flush_us=11.2, cover_us=0.0, host_us=24.5)),
    (c.Configure("kernels", 5.0), c.ConfigureReply(mode="kernels", est_us=5.2,
        calls_per_block=1000, flush_us=11.2, cover_us=0.0, host_us=26.6)),
    (c.Configure("cpu", 5.0), c.ConfigureReply(mode="cpu", est_us=3.0, calls_per_block=1666)),
    (c.Replays(replays=3), c.ReplaysReply(replays=3, calls_per_block=6144)),
    (c.Replays(block_ms=5.0), c.ReplaysReply(replays=3, calls_per_block=6144, graph_call_us=0.4)),
    (c.Block(), c.BlockReply(value_us=1.13, calls=2048, wall_ms=2.62, gpu_ms=2.32,
                             telemetry=TELEMETRY)),
    (c.Block(), c.BlockReply(value_us=3.0, calls=1666, wall_ms=5.1)),
    (c.Finish(), c.FinishReply(rechecked=True, correct=True, message="", lock_not_taken_s=60.0,
                               steps_s={"lock_wait": 60.0, "calls": 0.01})),
    (c.Warmup(), c.WarmupReply(seconds=0.31, reached=True, sm_clock_mhz=1980.0, skipped=True)),
    (c.Warmup(), c.WarmupReply(seconds=0.0, reached=True)),
    (c.MeasureCeilings(), c.CeilingsReply(RECORDED["ceilings"])),
    (c.Quit(), c.QuitReply()),
]  # fmt: skip


def _set_fields(message: Any) -> set[tuple[str, str]]:
    """(class, field) of every field that holds a value other than None in ``message`` and the
    messages inside it."""
    out: set[tuple[str, str]] = set()
    if dataclasses.is_dataclass(message) and not isinstance(message, type):
        for f in dataclasses.fields(message):
            value = getattr(message, f.name)
            if value is not None:
                out.add((type(message).__name__, f.name))
            out |= _set_fields(value)
    elif isinstance(message, (list, tuple)):
        for value in message:
            out |= _set_fields(value)
    return out


def _all_fields(cls: type) -> set[tuple[str, str]]:
    out = set()
    for f in dataclasses.fields(cls):
        out.add((cls.__name__, f.name))
    return out


def _same(a: Any, b: Any) -> bool:
    """Equal, with NaN equal to NaN (a digest's sample of a NaN output)."""
    return json.dumps(c.as_json(a), sort_keys=True) == json.dumps(c.as_json(b), sort_keys=True)


@pytest.mark.parametrize("request_", REQUESTS, ids=lambda r: type(r).__name__)
def test_every_command_comes_back_from_its_line_as_it_was_sent(request_: c.Request[Any]) -> None:
    line = c.encode_request(request_)
    assert line.endswith(b"\n") and b"\n" not in line[:-1]  # one line on the pipe
    assert json.loads(line)["op"] == request_.OP
    assert c.decode_request(line) == request_


@pytest.mark.parametrize("pair", REPLIES, ids=lambda p: type(p[1]).__name__)
def test_every_answer_comes_back_from_its_line_as_it_was_sent(pair: tuple[Any, Any]) -> None:
    request_, reply = pair
    line = c.encode_reply(reply)
    assert json.loads(line)["ok"] is True
    back = c.decode_reply(request_, line)
    assert type(back) is type(reply) and _same(back, reply)


def test_the_samples_cover_every_command_and_every_field_of_every_message() -> None:
    """A command or field added to the contract without a sample here fails this test."""
    assert {type(r) for r in REQUESTS} == set(c.REQUESTS.values())
    assert {type(r) for _, r in REPLIES} == {cls.REPLY for cls in c.REQUESTS.values()}
    seen = set().union(*(_set_fields(m) for m in [*REQUESTS, *(r for _, r in REPLIES)]))
    messages = [*c.REQUESTS.values(), *(cls.REPLY for cls in c.REQUESTS.values())]
    nested = [c.Pick, c.Marks, c.Telemetry, c.Digest, c.Like, c.Launch, c.Launched]
    wanted = set().union(*(_all_fields(m) for m in [*messages, *nested]))
    assert wanted == seen


def test_a_failure_comes_back_as_one() -> None:
    failure = c.Failure("cuda_error", "CUDA error: an illegal memory access", "RuntimeError", "tb")
    back = c.decode_reply(c.Block(), c.encode_reply(failure))
    assert back == failure and json.loads(c.encode_reply(failure))["ok"] is False


def test_non_finite_floats_travel_as_their_names_and_come_back_as_floats() -> None:
    line = c.encode_reply(c.EstimateReply(est_us=math.inf, host_us=math.nan))
    assert json.loads(line) == {"ok": True, "est_us": "inf", "host_us": "nan"}
    back = c.decode_reply(c.Estimate(), line)
    assert back.est_us == math.inf and math.isnan(back.host_us or 0.0)


def test_a_field_left_at_none_is_left_out_of_the_line() -> None:
    assert json.loads(c.encode_request(c.Check(("m:b",), (4,), "float32", 3))) == {
        "op": "check", "entries": ["m:b"], "shape": [4], "dtype": "float32", "seed": 3
    }  # fmt: skip
    assert "pinned" not in json.loads(c.encode_reply(c.EstimateReply(1.0)))
    assert "pinned" not in c.as_json(PICK) and c.as_json(PINNED)["pinned"] is True


# ------------------------------------------------------------------------ recorded on the H200


def test_the_env_and_ceilings_answers_recorded_on_the_h200_fit_the_contract() -> None:
    """Their fields are the results file's records' (``WorkerClient.env_info``, ``ceilings``)."""
    got = c.decode_reply(c.Env(), json.dumps({"ok": True, "env": RECORDED["env"]}))
    assert isinstance(got, c.EnvReply)
    env = EnvFingerprint.model_validate(got.env)
    assert env.device_name == "NVIDIA H200" and env.arch == "sm_90"
    assert env.max_sm_clock_mhz == 1980.0 and env.hip_version is None
    measured = c.decode_reply(
        c.MeasureCeilings(), json.dumps({"ok": True, "ceilings": RECORDED["ceilings"]})
    )
    assert isinstance(measured, c.CeilingsReply)
    assert Ceilings.model_validate(measured.ceilings).matmul_dtype == "bfloat16"


@pytest.mark.parametrize("recorded", RECORDED["blocks"], ids=lambda b: f"{b['kernel']}-{b['mode']}")
def test_blocks_recorded_on_the_h200_read_as_the_protocol_read_them(
    recorded: dict[str, Any],
) -> None:
    line = json.dumps({"ok": True, **recorded["block"]})
    block = c.decode_reply(c.Block(), line)
    assert isinstance(block, c.BlockReply) and block.telemetry is not None
    # the bot's conversion (``WorkerClient.block``) gives back the block the sweep recorded
    as_protocol = ProtocolBlock(
        value_us=block.value_us,
        calls=block.calls,
        wall_ms=block.wall_ms,
        gpu_ms=block.gpu_ms,
        telemetry=vars(block.telemetry),
    )
    assert as_protocol.model_dump(mode="json") == recorded["block"]


@pytest.mark.parametrize("recorded", RECORDED["sides"], ids=lambda s: s["kernel"])
def test_a_sides_prepare_and_estimate_recorded_on_the_h200_fit_the_contract(
    recorded: dict[str, Any],
) -> None:
    side = recorded["side"]
    prepare_fields = {f.name for f in dataclasses.fields(c.PrepareReply)}
    prepared = {k: v for k, v in side.items() if k in prepare_fields}
    # the sweep keeps a pick as its label; the worker sends the pick (``Pick``)
    prepared["configs_picked"] = []
    line = json.dumps({"ok": True, **prepared, "est_us": None, "host_us": None})
    got = c.decode_reply(c.Prepare(("m:b",), (4,), "f"), line)
    assert isinstance(got, c.PrepareReply) and got.entry == side["entry"]
    estimate = c.decode_reply(
        c.Estimate(), json.dumps({"ok": True, "est_us": side["est_us"], "host_us": side["host_us"]})
    )
    assert isinstance(estimate, c.EstimateReply) and estimate.est_us == side["est_us"]


# ------------------------------------------------------------------------------ refusals


@pytest.mark.parametrize(
    ("line", "says"),
    [
        (b'{"op": "launch"}', "unknown command 'launch'; the contract knows hello, env,"),
        (b'{"entries": []}', "unknown command None"),
        (b"[1, 2]", "a command must be an object"),
        (b"{not json", "not JSON"),
        (b'{"op": "check", "entries": ["m:b"], "shape": [4], "dtype": "f"}', "check: seed is missing"),
        (b'{"op": "check", "entries": ["m:b"], "shape": [4], "dtype": "f", "seed": true}',
         "check.seed: expected int, got True"),
        (b'{"op": "prepare", "entries": "m:b", "shape": [4], "dtype": "f"}',
         "prepare.entries: expected a list"),
        (b'{"op": "block", "fast": true}', "block: no field fast in the contract"),
        (b'{"op": "configure", "mode": "turbo", "block_ms": 5}', "'kernels-noflush'], got 'turbo'"),
        (b'{"op": "replays"}', "replays: replays needs its replays or the block_ms"),
        (b'{"op": "finish", "lock_wait_s": "soon"}',
         "finish.lock_wait_s: expected a number, got 'soon'"),
    ],
)  # fmt: skip
def test_a_command_outside_the_contract_is_refused_with_what_is_wrong(
    line: bytes, says: str
) -> None:
    with pytest.raises(c.ContractError) as info:
        c.decode_request(line)
    assert says in str(info.value)


@pytest.mark.parametrize(
    ("request_", "answer", "says"),
    [
        (c.Block(), {"ok": True, "value_us": 1.0, "calls": 1}, "block answer: wall_ms is missing"),
        (c.Block(), {"value_us": 1.0}, "an answer must be an object with ok"),
        (c.Block(), {"ok": True, "value_us": 1.0, "calls": 1, "wall_ms": 1, "cycles": 3},
         "no field cycles"),
        (c.Block(), {"ok": True, "value_us": 1.0, "calls": 1, "wall_ms": 1,
                     "telemetry": {"sm_clock_mhz": 1}}, "block answer.telemetry: mem_clock_mhz is"),
        (c.Check(("m:b",), (4,), "f", 1), {"ok": True, "has_reference": True, "atol": None,
         "rtol": None, "configs_picked": [{"function": "k"}], "correct": True, "message": "",
         "digest": [], "steps_s": {}}, "check answer.configs_picked[0]: config is missing"),
        (c.Hello(), {"ok": False, "kind": "error"}, "hello failure: error is missing"),
    ],
)  # fmt: skip
def test_an_answer_outside_the_contract_is_refused_with_what_is_wrong(
    request_: c.Request[Any], answer: dict[str, Any], says: str
) -> None:
    with pytest.raises(c.ContractError, match=says.replace("[", r"\[").replace("]", r"\]")):
        c.decode_reply(request_, json.dumps(answer))


def test_a_sender_cannot_put_a_wrong_type_on_the_line() -> None:
    with pytest.raises(c.ContractError, match=r"prepare\.shape\[1\]: expected int"):
        c.encode_request(c.Prepare(("m:b",), (4, "8"), "f"))  # type: ignore[arg-type]
    with pytest.raises(c.ContractError, match=r"BlockReply\.calls: expected int, got 2\.5"):
        c.encode_reply(c.BlockReply(value_us=1.0, calls=2.5, wall_ms=1.0))  # type: ignore[arg-type]


def test_the_versions_must_match_and_a_mismatch_says_what_to_do() -> None:
    assert c.version_problem(c.VERSION, "worker") == ""
    problem = c.version_problem(c.VERSION - 1, "worker")
    assert f"version {c.VERSION - 1}" in problem and "reinstall kernel-review" in problem
    assert json.loads(c.encode_request(c.Hello()))["version"] == c.VERSION


def test_a_value_of_a_subclass_travels_as_its_base() -> None:
    """torch's ``__version__`` is a ``str`` subclass, a numpy float a ``float`` one."""

    class Version(str):
        pass

    pick = c.from_json(c.Pick, {**c.as_json(PICK), "source": Version("a0b1")})
    assert type(pick.source) is str and pick.source == "a0b1"
    with pytest.raises(c.ContractError, match=r"Digest\.nan: expected int, got 1\.0"):
        c.from_json(c.Digest, {"shape": [1], "dtype": "f", "nan": 1.0, "inf": 0, "idx": [],
                               "samples": [], "parts": []})  # fmt: skip


def test_a_timing_mode_is_one_the_timers_know() -> None:
    assert c.as_mode("kernels-noflush") == "kernels-noflush"
    with pytest.raises(c.ContractError, match="no timing mode 'turbo'"):
        c.as_mode("turbo")


def test_a_graphs_configuration_takes_the_replays_set_after_it() -> None:
    captured = c.ConfigureReply(mode="graph", est_us=1.0, graph_calls=100, preroll_calls=4)
    timed = captured.with_replays(c.ReplaysReply(replays=7, calls_per_block=700, graph_call_us=0.5))
    assert (timed.replays, timed.calls_per_block, timed.graph_call_us) == (7, 700, 0.5)
    taken = timed.with_replays(c.ReplaysReply(replays=7, calls_per_block=700))
    assert taken.graph_call_us == 0.5  # the leader's timing stays where the taker's has none
    assert timed.like() == c.Like(calls_per_block=700, graph_calls=100, replays=7)


# ------------------------------------------------------------------------------ the zygote


def test_fork_requests_and_answers_come_back_from_their_messages() -> None:
    worker = c.ForkWorker(("--root", "/w", "--device", "cuda"), {"HOME": "/h"}, "/w", "/l/w.log")
    job = c.ForkJob("checks.sweep.precompile_job", "/j/job.json", {"HOME": "/h"}, "/p",
                    "/j/output.log", ("/p", "/site"), 10)  # fmt: skip
    for request_ in (worker, job):
        assert c.decode_fork(c.encode_fork(request_)) == request_
    forked = c.Forked(77, c.Marks(main_at=1.0, imported_at=3.0, program_at=3.1), "written")
    refused = c.ForkRefused("ValueError: this request needs 2 descriptors, got 0")
    for answer in (forked, refused):
        assert c.decode_forked(c.encode_fork(answer)) == answer
    with pytest.raises(c.ContractError, match=r"fork job\.nice: expected int, got None"):
        c.decode_fork(json.dumps({**c.as_json(job), "nice": None}).encode())


# ------------------------------------------------------- the worker code against the contract


def _keys_returned(module: str, function: str) -> set[str]:
    """The string keys of the dict literals ``function`` of ``checks/worker/<module>.py``
    returns or builds (GPU paths included: read from the source, not run)."""
    tree = ast.parse((WORKER / f"{module}.py").read_text())
    keys: set[str] = set()
    found = False
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == function:
            found = True
            for sub in ast.walk(node):
                if isinstance(sub, ast.Dict):
                    keys |= {k.value for k in sub.keys if isinstance(k, ast.Constant)}
                stored = isinstance(sub, ast.Subscript) and isinstance(sub.ctx, ast.Store)
                if stored and isinstance(sub.slice, ast.Constant):  # out["key"] = ...
                    keys.add(str(sub.slice.value))
    assert found, f"{module}.{function} is gone: update this test"
    return keys


def _names(cls: type) -> set[str]:
    """A contract message's fields, or a results record's (what the worker's answer is read
    into: ``EnvFingerprint``, ``Ceilings``)."""
    if dataclasses.is_dataclass(cls):
        return {f.name for f in dataclasses.fields(cls)}
    return set(cls.model_fields)


@pytest.mark.parametrize(
    ("module", "function", "cls"),
    [
        ("timing", "_setup", c.ConfigureReply),  # CpuTimer's
        ("timing", "_configure_graph", c.ConfigureReply),
        ("timing", "_configure_eager", c.ConfigureReply),
        ("timing", "_configure_kernels", c.ConfigureReply),
        ("timing", "set_replays", c.ReplaysReply),
        ("timing", "_kernels_block", c.BlockReply),
        ("timing", "_graph_block", c.BlockReply),
        ("timing", "_eager_block", c.BlockReply),
        ("telemetry", "read", c.Telemetry),
        ("env_fingerprint", "collect", EnvFingerprint),
        ("ceilings", "measure", Ceilings),
        ("ceilings", "_measure_cpu", Ceilings),
        ("correctness", "digest", c.Digest),
        ("autotune_picks", "describe", c.Pick),
        ("autotune_picks", "run", c.Pick),
        (LAUNCHES, "summarize", c.Launch),
        (LAUNCHES, "recording", c.Launched),
    ],
)
def test_what_the_worker_code_answers_has_only_the_contracts_fields(
    module: str, function: str, cls: type
) -> None:
    assert _keys_returned(module, function) - _names(cls) == set()


def test_the_worker_code_fills_every_field_the_contract_requires() -> None:
    def required(cls: type) -> set[str]:
        return {
            f.name
            for f in dataclasses.fields(cls)
            if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
        }

    for function in ("_kernels_block", "_graph_block", "_eager_block"):
        assert required(c.BlockReply) <= _keys_returned("timing", function)
    assert _names(c.Telemetry) == _keys_returned("telemetry", "read")
    record_only = {"device_uuid", "cached"}  # the results file's, not the worker's
    assert set(Ceilings.model_fields) - record_only == _keys_returned("ceilings", "_measure_cpu")
    assert _names(c.Digest) == _keys_returned("correctness", "digest")
    assert _names(c.Launch) == _keys_returned(LAUNCHES, "summarize")
    assert required(c.Launched) <= _keys_returned(LAUNCHES, "recording")
    env_required = {n for n, f in EnvFingerprint.model_fields.items() if f.is_required()}
    assert env_required <= _keys_returned("env_fingerprint", "collect")


def test_the_contract_imports_only_the_standard_library() -> None:
    """The worker loads it by path, in an interpreter that may have nothing else."""
    tree = ast.parse((WORKER / "contract.py").read_text())
    imported = {
        (n.module if isinstance(n, ast.ImportFrom) else a.name).split(".")[0]
        for n in ast.walk(tree)
        if isinstance(n, (ast.Import, ast.ImportFrom))
        for a in n.names
    }
    assert imported - {"__future__"} <= set(sys.stdlib_module_names), imported


def test_no_command_is_named_by_its_string_outside_the_contract() -> None:
    """The bot and the worker name commands by the contract's classes only."""
    ops = {f'"{name}"' for name in c.REQUESTS}
    for path in [WORKER / "main.py", ROOT / "checks/sweep/workers.py",
                 ROOT / "checks/sweep/pair_runner.py", WORKER / "timing.py"]:  # fmt: skip
        text = path.read_text()
        calls = [op for op in ops if f"call({op}" in text or f"op == {op}" in text]
        assert not calls, (path, calls)
    assert '"block"' not in (WORKER / "timing.py").read_text()
