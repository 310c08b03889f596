"""The command line stays small: the flags of every command, counted from its parser.

Advanced settings go behind one ``--engine-option KEY=VALUE`` (``checks/engine_options.py``) or
into the policy; a new flag must take one's place here."""

from __future__ import annotations

import argparse

import pytest

from bot.cli import RETIRED, build_parser, main

# each command's flags at most (--help not counted); 67 in all before the engine options, 54
# before the everyday commands were brought to 25
MOST = {
    "": 1,  # --version
    "demo": 4,
    "init": 3,
    "policy check": 1,
    "analyze": 6,
    "review": 9,
    "job": 0,  # MODE, a job of the GitHub workflow
    "bench": 7,
    "compiler-report": 6,
    "first-call": 6,
    "doctor": 2,
}
EVERYDAY = ("", "demo", "init", "policy check", "review", "bench")


def _flags(parser: argparse.ArgumentParser, name: str, out: dict[str, list[str]]) -> None:
    out[name] = [
        a.option_strings[-1]
        for a in parser._actions
        if a.option_strings and not isinstance(a, argparse._HelpAction)
    ]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub, subparser in action.choices.items():
                _flags(subparser, f"{name} {sub}".strip(), out)


def test_each_command_keeps_its_flags_few() -> None:
    found: dict[str, list[str]] = {}
    _flags(build_parser(), "", found)
    over = {name: flags for name, flags in found.items() if len(flags) > MOST.get(name, 0)}
    assert not over, over
    assert sum(len(flags) for flags in found.values()) <= sum(MOST.values()) == 45
    assert sum(len(found[name]) for name in EVERYDAY) <= sum(MOST[name] for name in EVERYDAY) == 25


def test_the_measuring_commands_take_their_advanced_settings_as_engine_options() -> None:
    found: dict[str, list[str]] = {}
    _flags(build_parser(), "", found)
    for name in ("bench", "compiler-report", "first-call"):
        assert "--engine-option" in found[name]
    retired = {"--gpus", "--block-ms", "--no-crossover", "--no-precompile", "--no-zygote",
               "--no-first-call-alone", "--no-early-warm", "--no-poll", "--work-dir",
               "--keep-work-dir", "--jobs", "--cache-dir", "--time-distribution", "--plan",
               "--max-rounds", "--no-added-shapes"}  # fmt: skip
    assert not retired & {flag for flags in found.values() for flag in flags}
    # a review prints the comment (its markdown with --out -), not a second form of the verdict
    assert "--json" not in found["demo"] and "--json" not in found["review"]


def test_a_retired_flag_is_no_flag_of_its_command_and_each_command_is_one_there_is() -> None:
    found: dict[str, list[str]] = {}
    _flags(build_parser(), "", found)
    for command, flags in RETIRED.items():
        assert command in found, command
        assert not set(flags) & set(found[command]), command


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["bench", "--max-rounds", "8"], "--max-rounds is no longer a flag of kernel-review bench; "
         "instead: --engine-option max_rounds=N"),
        (["bench", "--no-added-shapes"], "instead: --engine-option added_shapes=off"),
        (["bench", "--gpus=0,1"], "--gpus is no longer a flag of kernel-review bench"),
        (["review", "--base", "main", "--measure", "--device", "cpu"],
         "--device is no longer a flag of kernel-review review; instead: the device is "
         "--measure's value: --measure cpu"),
        (["review", "--mode", "plan"], "a job of the GitHub workflow is `kernel-review job MODE`"),
        (["demo", "--keep", "DIR"], "`python -m kernels_fixture.build_repo DIR`"),
        (["init", "--force"], "instead: --out PATH writes the policy to PATH, replacing a file"),
        (["init", "--max-kernels", "12"], "instead: --only PATH (repeatable)"),
        (["--debug", "demo"], "--debug is no longer a flag of kernel-review; instead: none is"),
        (["demo", "--debug"], "--debug is no longer a flag of kernel-review;"),
    ],
)  # fmt: skip
def test_a_retired_flag_is_refused_with_what_replaces_it(
    argv: list[str], said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    assert said in " ".join(capsys.readouterr().err.split())


def test_an_unknown_word_is_still_argparses_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["bench", "--no-such-flag", "extra"])
    assert exc.value.code == 2
    assert "unrecognized arguments: --no-such-flag extra" in capsys.readouterr().err


def test_an_internal_error_keeps_its_traceback_without_a_flag(
    tmp_path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """No --debug: the traceback is in a file under the cache folder, which the message names,
    and on stderr where that is not a terminal (a CI job's log)."""
    from bot.cli import internal_error

    monkeypatch.setenv("KERNEL_REVIEW_CACHE", str(tmp_path))

    def broken() -> None:
        raise RuntimeError("the bug\n::add-mask::x")

    try:
        broken()
    except RuntimeError as exc:
        kept = internal_error(exc)
    assert kept is not None and kept.parent == tmp_path / "errors"
    text = kept.read_text(encoding="utf-8")
    assert text.startswith("Traceback") and "in broken" in text
    err = capsys.readouterr().err
    assert "internal error: RuntimeError: the bug" in err
    assert f"report it with its traceback ({kept})" in err and "in broken" in err
    # a log reads no workflow command in it
    assert not any(line.lstrip().startswith("::") for line in err.splitlines())
