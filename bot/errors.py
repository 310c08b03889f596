"""The errors a user can cause, in one tree.

    KernelReviewError            anything the user can fix; the CLI prints it without a traceback
    ├── PolicyError              the TOML policy is missing, malformed or refused (file:line:col)
    ├── DiffError                a diff that cannot be read, or a git revision that does not exist
    ├── GitError                 a git command failed (message names the command and its stderr)
    ├── FixtureError             the bundled fixture repository could not be built
    ├── LimitError               a request exceeds the policy's limits (says the cost and the limit)
    ├── CommandError             a ``/bench`` comment that cannot be parsed or is not allowed
    ├── ResultsError             a results JSON that fails its schema or its size cap
    ├── CompilerError            a kernel toolchain (Triton, nvcc) is missing or unsupported
    ├── ToolchainError           a side's own toolchain environment could not be made
    ├── UsageError               a command-line value out of range, or a file that cannot be written
    └── ForgeError               the forge's API refused or failed after bounded retries
        ├── ForgeRequestError    one API call that failed for good (``bot.forge.client``)
        └── GitHubError          GitHub's: the API, the event or the Actions environment

Each error carries a message that says what is wrong and a ``hint`` that says what to do.
"""

from __future__ import annotations


class KernelReviewError(Exception):
    """Base for every error a user can cause. ``exit_code`` is what the CLI exits with."""

    exit_code = 2

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        if self.hint:
            return f"{self.message}\n  hint: {self.hint}"
        return self.message


class PolicyError(KernelReviewError):
    pass


class DiffError(KernelReviewError):
    pass


class GitError(KernelReviewError):
    pass


class FixtureError(KernelReviewError):
    pass


class LimitError(KernelReviewError):
    pass


class CommandError(KernelReviewError):
    pass


class ResultsError(KernelReviewError):
    pass


class CompilerError(KernelReviewError):
    pass


class ToolchainError(KernelReviewError):
    pass


class UsageError(KernelReviewError):
    pass


class ForgeError(KernelReviewError):
    exit_code = 3


class GitHubError(ForgeError):
    pass


# What the measuring commands (``bench``, ``first-call``) exit with, for a CI gate. Errors above
# exit 2 (3 for the forge), an internal error 1.
EXIT_OK = 0  # everything was measured and nothing is worse
EXIT_WORSE = 4  # slower than the tolerance (bench), over the first-call budget (first-call)
EXIT_NOTHING_MEASURED = 5  # not one case could be measured: the first error of each kind is shown
EXIT_SOME_FAILED = 6  # measured, nothing worse, but some cases failed (crashed, wrong, errors)
# stopped from outside (SIGINT, SIGTERM) before its end: what it finished is written, the rest
# marked not measured (bench)
EXIT_STOPPED = 7
