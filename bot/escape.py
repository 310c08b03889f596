"""Escaping for text that a pull request controls: kernel names, shapes, messages, PR output.

Three destinations, three rules:

- Markdown/HTML in a comment or the job summary: nothing a user wrote may open a tag, a link,
  an HTML comment (which could forge the bot's hidden marker or hide the rest of the review),
  a table cell, a heading or a mention that pings someone.
- Fenced code in a comment: the fence must be longer than any run of backticks inside.
- Workflow logs: the runner executes lines such as ``::set-output name=x::y``,
  ``::add-mask::`` or ``##[command]``; anything printed that the bot did not write itself must
  not be able to issue one.

Pure functions, no I/O.
"""

from __future__ import annotations

import html
import re

# U+2060 WORD JOINER: invisible in a rendered log, but it breaks the ``::`` and ``##[``
# prefixes the runner looks for, and the ``<!--`` sequence.
_JOINER = "\u2060"

_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+!|~>])")
_HTML = {"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;"}
# Control characters, bidirectional overrides and marks, and the invisible characters that can
# hide text or split a word a reader would see whole (U+200B-U+200F, U+2060-U+2064, U+FEFF...).
_CONTROL = re.compile(
    r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\u061c\u180e\u200b-\u200f\u202a-\u202e"
    r"\u2060-\u2064\u2066-\u2069\ufeff]"
)
_TEXT_SPECIAL = re.compile(r"([\\*_\[\]|~])")  # in text that keeps its `code` spans
# What starts a block when it opens a line: a heading, a list item, a rule or setext underline.
_BLOCK_START = re.compile(r"#{1,6}(?:\s|$)|[-+*](?:\s|$)|[-=_*](?:[ \t]*[-=_*])*[ \t]*$")
_ORDERED_START = re.compile(r"\d{1,9}(?=[.)](?:\s|$))")
_WWW = re.compile(r"(?i)\b(www)\.")
_COMMAND_LINE = re.compile(r"^(\s*):(:?)", re.MULTILINE)


def strip_controls(text: str) -> str:
    """Drop control characters and bidirectional overrides (they can disguise text)."""
    return _CONTROL.sub("", text)


def _inert_links(s: str) -> str:
    """Markdown-escaped text that GitHub cannot autolink (``https://``, ``www.``)."""
    return _WWW.sub(r"\1\\.", s.replace("://", "\\://"))


def _inert_start(s: str) -> str:
    """Markdown-escaped text that cannot open a block (``#``, ``-``, ``+``, ``=``, ``1.``, a
    rule) when it starts a line."""
    m = _ORDERED_START.match(s)
    if m:
        return s[: m.end()] + "\\" + s[m.end() :]
    return "\\" + s if _BLOCK_START.match(s) else s


def md_text(text: object) -> str:
    """User text for a line of the review comment, keeping its backtick spans as code.

    One line (line breaks become spaces), no raw HTML or comment markers, no links or autolinks,
    no mentions, no table cell split (``|`` escaped inside code spans too), and nothing that
    starts a block. Inside code spans only HTML and ``|`` are touched, since markdown is not
    interpreted there.
    """
    parts = strip_controls(str(text)).replace("\r", "").replace("\n", " ").split("`")
    if len(parts) % 2 == 0:  # an unmatched backtick: treat it as a plain character
        parts[-2:] = [parts[-2] + "'" + parts[-1]]
    out = []
    for i, part in enumerate(parts):
        part = html.escape(part, quote=False)  # <, >, & -> entities
        if i % 2 == 0:
            part = _inert_links(_TEXT_SPECIAL.sub(r"\\\1", part))
            part = _inert_start(part) if i == 0 else part
        else:
            part = part.replace("|", "\\|")
        out.append(part.replace("@", "@\u200b"))
    return "`".join(out)


def clip(text: str, max_chars: int) -> str:
    """At most ``max_chars`` characters, ending in an ellipsis when cut."""
    if max_chars < 1:
        return ""
    if len(text) <= max_chars:
        return text
    return text[: max_chars - 1] + "…"


def utf8_prefix(text: str, max_bytes: int) -> str:
    """The longest prefix of ``text`` of at most ``max_bytes`` UTF-8 bytes (never half a
    character): for the limits GitHub counts in bytes."""
    return text.encode("utf-8")[: max(0, max_bytes)].decode("utf-8", errors="ignore")


def clip_bytes(text: str, max_bytes: int) -> str:
    """At most ``max_bytes`` UTF-8 bytes, ending in an ellipsis (3 bytes) when cut."""
    if len(text.encode("utf-8")) <= max_bytes:
        return text
    return utf8_prefix(text, max_bytes - 3) + "…" if max_bytes >= 3 else ""


def md_inline(text: object, *, max_chars: int = 200) -> str:
    """User text made safe to place inside a markdown paragraph or a table cell.

    One line, bounded, with markdown punctuation backslash-escaped, HTML special characters as
    entities (so ``<!--``, ``<details>`` and ``<img>`` render as text), ``@`` as an entity (no
    pings), and ``|`` escaped so a table cell cannot be split.
    """
    s = strip_controls(str(text))
    s = " ".join(s.split())  # newlines and tabs to single spaces
    s = clip(s, max_chars)
    s = "".join(_HTML.get(ch, ch) for ch in s)
    s = _inert_start(_inert_links(_MD_SPECIAL.sub(r"\\\1", s)))
    # after the entity pass, so the "&" of "&#64;" is not escaped again
    return s.replace("@", "&#64;")


def md_code(text: object, *, max_chars: int = 80) -> str:
    """User text as inline code: one line, bounded, delimited by enough backticks; ``|`` is
    escaped, since GitHub splits a table cell at it even inside code."""
    s = clip(" ".join(strip_controls(str(text)).split()), max_chars).replace("|", "\\|")
    longest = max((len(m) for m in re.findall(r"`+", s)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if s.startswith("`") or s.endswith("`") or not s else ""
    return f"{fence}{pad}{s}{pad}{fence}"


def md_code_block(text: object, *, lang: str = "", max_chars: int = 20_000) -> str:
    """User text as a fenced block; the fence is longer than any backtick run inside."""
    s = clip(strip_controls(str(text)), max_chars)
    longest = max((len(m) for m in re.findall(r"`{3,}", s)), default=0)
    fence = "`" * max(3, longest + 1)
    lang = re.sub(r"[^A-Za-z0-9_+-]", "", lang)
    return f"{fence}{lang}\n{s}\n{fence}"


def html_comment_text(text: object) -> str:
    """Text that can sit inside ``<!-- ... -->`` without closing or nesting it."""
    s = strip_controls(str(text)).replace("\n", " ").replace(">", "&gt;").replace("<", "&lt;")
    while "--" in s:
        s = s.replace("--", "- -")
    return s


def log_safe(text: object) -> str:
    """Text that can be printed to a workflow log without issuing a workflow command.

    Every line that would start with ``::`` (after any indentation) gets a word joiner between
    the colons; every ``##[`` and ``<!--`` is broken the same way. What a reader sees is
    unchanged.
    """
    s = strip_controls(str(text)).replace("\r\n", "\n").replace("\r", "\n")
    s = _COMMAND_LINE.sub(lambda m: f"{m.group(1)}:{_JOINER}{m.group(2)}", s)
    s = s.replace("##[", f"##{_JOINER}[")
    return s.replace("<!--", f"<!{_JOINER}--")


def _escape_data(value: str) -> str:
    return value.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(value: str) -> str:
    return _escape_data(value).replace(":", "%3A").replace(",", "%2C")


def workflow_command(command: str, message: str, **properties: object) -> str:
    """One workflow command line, e.g. ``::warning file=a.py,line=3::slower at 4096x4096``.

    ``command`` is chosen by the bot (``warning``, ``error``, ``notice``), never by a user.
    The message and properties are escaped the way the runner decodes them, so a message
    cannot end the line early or add properties.
    """
    if command not in {"warning", "error", "notice", "debug"}:
        raise ValueError(f"not an annotation command: {command!r}")
    props = ",".join(
        f"{key}={_escape_property(strip_controls(str(value)))}"
        for key, value in properties.items()
        if value is not None
    )
    head = f"::{command} {props}" if props else f"::{command}"
    return f"{head}::{_escape_data(strip_controls(message))}"
