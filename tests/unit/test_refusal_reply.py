"""Someone below the policy's bar for ``/bench`` gets one reply per pull request, then only
reactions: the bot finds its earlier reply by the marker it wrote, never by the reply's words."""

from __future__ import annotations

from bot.forge.types import CommentInfo, PullInfo
from bot.jobs.approval import refusal_comment, told_before
from tests.memory_forge import MemoryForge
from tests.unit.test_accept import POLICY

PR = 7


def _forge(*bodies: tuple[str, str]) -> MemoryForge:
    """A pull request whose comments are ``(author type, body)``."""
    forge = MemoryForge()
    pull = PullInfo(
        number=PR,
        state="open",
        author="stranger",
        base_ref="main",
        base_sha="a" * 40,
        base_repo=forge.repo,
        head_ref="change",
        head_sha="b" * 40,
        head_repo=forge.repo,
    )
    forge.add_pull(pull, diff="")
    forge.comments[PR] = [
        CommentInfo(
            id=i, author=forge.login if kind == "Bot" else "someone", author_type=kind, body=b
        )
        for i, (kind, b) in enumerate(bodies, start=1)
    ]
    return forge


def test_the_refusal_reply_is_found_again_by_its_marker() -> None:
    said = refusal_comment("stranger", "needs write permission", accepting=False)
    assert said.startswith("@stranger `/bench` was not run: needs write permission")
    assert told_before(_forge(("Bot", said)), PR, "stranger", POLICY)
    # another actor's reply, or the same words by a person, are not it
    assert not told_before(_forge(("Bot", said)), PR, "other", POLICY)
    assert not told_before(_forge(("User", said)), PR, "stranger", POLICY)
    accept = refusal_comment("stranger", "needs write permission", accepting=True)
    assert accept.startswith("@stranger `/bench accept` was not recorded")
    assert told_before(_forge(("Bot", accept)), PR, "stranger", POLICY)


def test_the_reply_is_known_by_its_marker_whatever_its_words() -> None:
    said = refusal_comment("stranger", "needs write permission", accepting=False)
    reworded = "Sorry @stranger, only maintainers may run benchmarks." + said[said.index("\n") :]
    assert told_before(_forge(("Bot", reworded)), PR, "stranger", POLICY)
    # the words alone, the marker gone: not the bot's refusal reply
    words = said[: said.index("\n")]
    assert not told_before(_forge(("Bot", words)), PR, "stranger", POLICY)


def test_a_member_with_the_permission_is_answered_every_time() -> None:
    forge = _forge(("Bot", refusal_comment("maintainer", "no such kernel", accepting=False)))
    forge.permissions["maintainer"] = "write"
    assert not told_before(forge, PR, "maintainer", POLICY)
