"""The command line stays small: the flags of every command, counted from its parser.

Advanced settings go behind one ``--engine-option KEY=VALUE`` (``checks/engine_options.py``) or
into the policy; a new flag must take one's place here."""

from __future__ import annotations

import argparse

from bot.cli import build_parser

# each command's flags at most (--help not counted); 67 in all before the engine options
MOST = {
    "": 2,  # --version, --debug
    "demo": 5,
    "init": 6,
    "policy check": 1,
    "analyze": 6,
    "review": 11,
    "bench": 9,
    "compiler-report": 6,
    "first-call": 6,
    "doctor": 2,
}


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
    assert sum(len(flags) for flags in found.values()) <= sum(MOST.values()) == 54


def test_the_measuring_commands_take_their_advanced_settings_as_engine_options() -> None:
    found: dict[str, list[str]] = {}
    _flags(build_parser(), "", found)
    for name in ("bench", "compiler-report", "first-call"):
        assert "--engine-option" in found[name]
    retired = {"--gpus", "--block-ms", "--no-crossover", "--no-precompile", "--no-zygote",
               "--no-first-call-alone", "--no-early-warm", "--no-poll", "--work-dir",
               "--keep-work-dir", "--jobs", "--cache-dir", "--time-distribution", "--plan"}  # fmt: skip
    assert not retired & {flag for flags in found.values() for flag in flags}
    # a review prints the comment (its markdown with --out -), not a second form of the verdict
    assert "--json" not in found["demo"] and "--json" not in found["review"]
