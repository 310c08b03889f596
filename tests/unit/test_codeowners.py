"""The CODEOWNERS matcher against the examples of GitHub's own documentation, "About code
owners":
https://docs.github.com/en/repositories/managing-your-repositorys-settings-and-features/customizing-your-repository/about-code-owners

Each test quotes the comment of the doc's example file that says what the rule owns."""

from __future__ import annotations

import pytest

from bot import repo_conditions as rc

# The example file of the page, its comments shortened to the sentence each test quotes.
DOC_EXAMPLE = """\
# This is a comment.
# Each line is a file pattern followed by one or more owners.
*       @global-owner1 @global-owner2
*.js    @js-owner #This is an inline comment.
*.go docs@example.com
*.txt @octo-org/octocats
/build/logs/ @doctocat
docs/*  docs@example.com
apps/ @octocat
/docs/ @doctocat
/scripts/ @doctocat @octocat
**/logs @octocat
/apps/ @octocat
/apps/github
"""


def owner(path: str, text: str = DOC_EXAMPLE) -> tuple[str, ...]:
    (fact,) = rc.find_owners([path], {"CODEOWNERS": text}.get)
    return fact.owners


def matches(pattern: str, path: str) -> bool:
    return bool(rc._codeowners_regex(pattern).match(path))


def test_the_star_owns_everything_unless_a_later_match_takes_precedence():
    # "These owners will be the default owners for everything in the repo. Unless a later
    # match takes precedence, @global-owner1 and @global-owner2 will be requested"
    assert owner("README.md") == ("@global-owner1", "@global-owner2")
    assert owner("src/deep/kernel.cu") == ("@global-owner1", "@global-owner2")
    # "Order is important; the last matching pattern takes the most precedence. When someone
    # opens a pull request that only modifies JS files, only @js-owner ... will be requested"
    assert owner("web/app.js") == ("@js-owner",)
    assert owner("main.go") == ("docs@example.com",)
    assert owner("notes/a.txt") == ("@octo-org/octocats",)


# (the doc's sentence, the pattern, paths it owns, paths it does not)
PATTERNS = [
    (
        "@doctocat owns any files in the build/logs directory at the root of the repository "
        "and any of its subdirectories.",
        "/build/logs/",
        ["build/logs/a.log", "build/logs/deep/er/a.log"],
        ["src/build/logs/a.log"],
    ),
    (
        "The `docs/*` pattern will match files like `docs/getting-started.md` but not further "
        "nested files like `docs/build-app/troubleshooting.md`.",
        "docs/*",
        ["docs/getting-started.md"],
        ["docs/build-app/troubleshooting.md"],
    ),
    (
        "@octocat owns any file in an apps directory anywhere in your repository.",
        "apps/",
        ["apps/web/index.html", "services/apps/worker.py"],
        ["apps.py"],
    ),
    (
        "@doctocat owns any file in the `/docs` directory in the root of your repository and "
        "any of its subdirectories.",
        "/docs/",
        ["docs/getting-started.md", "docs/build-app/troubleshooting.md"],
        ["src/docs/x.md"],
    ),
    (
        "@octocat owns any file in a `/logs` directory such as `/build/logs`, `/scripts/logs`, "
        "and `/deeply/nested/logs`.",
        "**/logs",
        ["build/logs/a.log", "scripts/logs/b.log", "deeply/nested/logs/c.log"],
        ["deeply/nested/logsbook.txt"],
    ),
]


@pytest.mark.parametrize("sentence, pattern, owns, not_owns", PATTERNS)
def test_each_pattern_owns_what_the_doc_says(
    sentence: str, pattern: str, owns: list[str], not_owns: list[str]
):
    for path in owns:
        assert matches(pattern, path), (sentence, path)
    for path in not_owns:
        assert not matches(pattern, path), (sentence, path)


def test_a_nested_file_under_docs_star_keeps_an_earlier_owner():
    text = "* @everyone\ndocs/*  docs@example.com\n"
    assert owner("docs/getting-started.md", text) == ("docs@example.com",)
    assert owner("docs/build-app/troubleshooting.md", text) == ("@everyone",)
    # in the doc's whole file, the later `/docs/` rule owns both
    assert owner("docs/build-app/troubleshooting.md") == ("@doctocat",)


def test_several_owners_of_one_directory():
    # "any change inside the `/scripts` directory will require approval from @doctocat or
    # @octocat."
    assert owner("scripts/setup.sh") == ("@doctocat", "@octocat")


def test_an_empty_owner_list_leaves_a_subdirectory_unowned():
    # "@octocat owns any file in the `/apps` directory in the root of your repository except
    # for the `/apps/github` subdirectory, as its owners are left empty."
    assert owner("apps/web/index.html") == ("@octocat",)
    assert owner("apps/github/ci.yml") == ()
    # "... except for the `/apps/github` subdirectory, as this subdirectory has its own owner
    # @doctocat"
    assert owner("apps/github/ci.yml", "/apps/ @octocat\n/apps/github @doctocat\n") == (
        "@doctocat",
    )


@pytest.mark.parametrize(
    "pattern, path",
    [
        # "Using `[ ]` to define a character range" does not work in CODEOWNERS: literal
        ("kernel[12].cu", "kernel[12].cu"),
        ("*.cu", "a/b/c.cu"),
        ("docs/**/*.md", "docs/a/b/c.md"),
    ],
)
def test_literal_brackets_and_wildcards(pattern: str, path: str):
    assert matches(pattern, path)
    assert not matches("kernel[12].cu", "kernel1.cu")
