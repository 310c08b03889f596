from __future__ import annotations

import re

import pytest

from bot.escape import (
    clip,
    html_comment_text,
    log_safe,
    md_code,
    md_code_block,
    md_inline,
    md_text,
    workflow_command,
)

HOSTILE = (
    "<!-- kernel-review:sticky v1 head=abcdef0 --> **x** [y](http://e) @team |a|b| <img src=x>"
)


def test_md_inline_neutralises_html_markers_links_mentions_and_cells():
    out = md_inline(HOSTILE)
    assert "<" not in out and ">" not in out
    assert "<!--" not in out
    assert "@team" not in out and "&#64;team" in out
    assert "\\[y\\]\\(http" in out  # a link cannot form
    assert "\\*\\*x\\*\\*" in out
    assert re.search(r"(?<!\\)\|", out) is None  # every pipe escaped: a table cell cannot split


def test_md_inline_is_one_bounded_line_without_controls():
    out = md_inline("a\nb\r\nc\td\x1b[31m\u202eevil", max_chars=12)
    assert "\n" not in out and "\x1b" not in out and "\u202e" not in out
    assert out.startswith("a b c d")
    assert len(clip("x" * 50, 10)) == 10


def test_md_code_uses_a_longer_fence_than_any_backtick_run():
    out = md_code("a``b`c")
    assert out.startswith("```") and out.endswith("```") and "a``b`c" in out
    assert md_code("`x`") == "`` `x` ``"


def test_md_code_block_fence_cannot_be_closed_from_inside():
    out = md_code_block("before\n```\n## pwned\n````", lang="text; rm")
    first = out.splitlines()[0]
    assert first.startswith("`````") and first.endswith("textrm")
    assert out.endswith("\n`````")


def test_html_comment_text_cannot_close_the_comment():
    for hostile in ("-->", "--->", "a----b", "x --!> y", "<!-- nested"):
        out = html_comment_text(hostile)
        assert "--" not in out and ">" not in out and "<" not in out


@pytest.mark.parametrize(
    "line",
    [
        "::set-output name=verdict::approve",
        "  ::add-mask::secret",
        "::stop-commands::tok",
        "::error file=a.py,line=1::boom",
        "##[set-output name=x;]y",
        "prefix ##[warning]text",
    ],
)
def test_log_safe_breaks_every_workflow_command(line):
    out = log_safe(f"ok\n{line}\r\nend")
    for row in out.splitlines():
        assert not row.lstrip().startswith("::")
        assert "##[" not in row
    assert "ok" in out and "end" in out


def test_log_safe_breaks_html_comment_openers():
    assert "<!--" not in log_safe("x <!-- kernel-review:sticky")


def test_workflow_command_escapes_message_and_properties():
    line = workflow_command(
        "warning", "slower\n::error::x 100%", file="a,b:c.py", line=3, title=None
    )
    assert line.startswith("::warning file=a%2Cb%3Ac.py,line=3::")
    assert "\n" not in line and "%0A::error::x 100%25" in line
    with pytest.raises(ValueError):
        workflow_command("set-output", "x")


INJECTED = (
    "boom\n## Approved by the maintainers\n---\nhttps://evil.example/x and www.evil.example\n"
    "\u200bhidden\u200e\u200f\u061c\ufeff"
)


@pytest.mark.parametrize("escape", [md_inline, md_text], ids=["md_inline", "md_text"])
def test_newlines_cannot_start_blocks_or_links(escape):
    out = escape(INJECTED, **({"max_chars": 500} if escape is md_inline else {}))
    assert "\n" not in out and "\r" not in out
    assert "https://" not in out and "https\\://evil" in out
    assert "www." not in out and "www\\.evil" in out
    for ch in "\u200b\u200e\u200f\u061c\ufeff":
        assert ch not in out.replace("@\u200b", "")


@pytest.mark.parametrize("escape", [md_inline, md_text], ids=["md_inline", "md_text"])
@pytest.mark.parametrize(
    ("text", "start"),
    [
        ("## Approved", "\\#"),
        ("- item", "\\-"),
        ("+ item", "\\+"),
        ("---", "\\-"),
        ("===", "\\="),
        ("1. step", "1\\."),
        ("12) step", "12\\)"),
        ("> quote", "&gt;"),
    ],
)
def test_text_at_the_start_of_a_line_opens_no_block(escape, text, start):
    assert escape(text).startswith(start)


@pytest.mark.parametrize("text", ["-3%", "1.6x slower", "2026-01-01", "a - b", "x = 1"])
def test_ordinary_text_is_left_as_it_reads(text):
    assert md_text(text) == text


def test_pipes_inside_code_spans_cannot_split_a_table_cell():
    assert md_text("path `a|b` here |x") == "path `a\\|b` here \\|x"
    assert md_code("a|b") == "`a\\|b`"


def test_utf8_prefix_and_clip_bytes_count_bytes_and_never_split_a_character():
    from bot.escape import clip_bytes, utf8_prefix

    assert utf8_prefix("aé€", 3) == "aé"  # 1 + 2 bytes; the euro sign's 3 would make 6
    assert utf8_prefix("aé€", 2) == "a"  # never half of é
    assert clip_bytes("€" * 10, 30) == "€" * 10
    cut = clip_bytes("€" * 10, 12)
    assert cut == "€€€…" and len(cut.encode("utf-8")) == 12
