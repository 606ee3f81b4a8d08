"""The command line's bounds on log output: :class:`LogRateLimit` on a clock the test moves, and
:class:`LogLineCut` on what a client can make a line quote."""

from __future__ import annotations

import logging

import pytest

from skilldeck.cli._output import LogLineCut, LogRateLimit, bound_log_output


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def record(
    name: str = "mcp.server", level: int = logging.WARNING, msg: str = "Invalid Host header: %s"
) -> logging.LogRecord:
    return logging.LogRecord(name, level, __file__, 1, msg, ("evil.example",), None)


def test_a_burst_passes_then_one_per_interval_saying_how_many_were_dropped() -> None:
    clock = Clock()
    limit = LogRateLimit(burst=3, every=2.0, clock=clock)
    assert [limit.filter(record()) for _ in range(5)] == [True, True, True, False, False]
    clock.now = 1.9  # not a whole token back yet
    assert not limit.filter(record())
    clock.now = 2.0
    passed = record()
    assert limit.filter(passed)
    assert passed.getMessage() == "Invalid Host header: evil.example (3 more like this were dropped: over 3 at once)"
    assert not limit.filter(record())
    clock.now = 100.0  # a quiet spell refills the burst, no more
    assert [limit.filter(record()) for _ in range(4)] == [True, True, True, False]


def test_each_logger_and_level_has_its_own_budget() -> None:
    limit = LogRateLimit(burst=1, every=60.0, clock=Clock())
    assert limit.filter(record("a"))
    assert not limit.filter(record("a"))
    assert limit.filter(record("b"))
    assert limit.filter(record("a", logging.ERROR))
    plain = record("c")
    assert limit.filter(plain)
    assert plain.getMessage() == "Invalid Host header: evil.example"  # nothing was dropped: the message is as logged


def test_the_kinds_tracked_are_bounded_least_recently_seen_forgotten_first() -> None:
    limit = LogRateLimit(burst=1, every=60.0, max_kinds=2, clock=Clock())
    assert limit.filter(record("a"))
    assert limit.filter(record("b"))
    assert not limit.filter(record("a"))  # "a" is the most recently seen now
    assert limit.filter(record("c"))  # a third kind: "b" is forgotten, not "a"
    assert not limit.filter(record("a"))
    assert limit.filter(record("b"))  # forgotten, so it starts with a full burst again


@pytest.mark.parametrize("bad", [{"burst": 0}, {"every": 0.0}, {"max_kinds": 0}])
def test_nonsense_limits_are_refused(bad: dict[str, float]) -> None:
    with pytest.raises(ValueError, match="at least 1"):
        LogRateLimit(**bad)  # type: ignore[arg-type]


def test_every_handler_gets_one_filter_of_its_own() -> None:
    logger = logging.getLogger("skilldeck-test-bound-log-output")
    handlers = [logging.StreamHandler(), logging.StreamHandler()]
    # bound_log_output() reaches every handler there is, pytest's own (caplog's) too: each gets its filters
    # back afterwards, or a later test in this process would see its log records cut and escaped.
    loggers = [
        logging.getLogger(),
        *(lg for lg in logging.Logger.manager.loggerDict.values() if isinstance(lg, logging.Logger)),
    ]
    before = {handler: list(handler.filters) for lg in loggers for handler in lg.handlers}
    for handler in handlers:
        logger.addHandler(handler)
    try:
        assert bound_log_output() >= 2
        assert bound_log_output() == 0  # once only
        filters = [[f for f in h.filters if isinstance(f, LogRateLimit)] for h in handlers]
        assert [len(f) for f in filters] == [1, 1]
        assert filters[0][0] is not filters[1][0]
        assert [[type(f) for f in h.filters] for h in handlers] == [[LogRateLimit, LogLineCut]] * 2
    finally:
        for handler in handlers:
            logger.removeHandler(handler)
            handler.filters.clear()
        for handler, filters in before.items():
            handler.filters[:] = filters


def cut(value: str, limit: int = 40) -> str:
    entry = record(msg="Invalid Host header: %s")
    entry.args = (value,)
    assert LogLineCut(limit).filter(entry)
    return entry.getMessage()


def test_a_message_up_to_the_limit_is_left_whole_one_past_it_is_cut_saying_how_long_it_was() -> None:
    prefix = "Invalid Host header: "
    whole = "h" * (40 - len(prefix))
    assert cut(whole) == prefix + whole  # exactly 40 characters
    longer = cut(whole + "h")  # 41
    assert longer == f"{prefix}{whole}\u2026 (41 characters)", longer
    assert len(cut("h" * 20_000)) < 40 + 30  # the fuzzer's 20,000-character Host header


def test_control_characters_are_escaped_so_a_client_cannot_forge_a_line_or_restyle_the_terminal() -> None:
    forged = cut("evil\nINFO:     forged line\x1b[31m", limit=200)
    assert "\n" not in forged, forged
    assert "\x1b" not in forged, forged
    assert forged == "Invalid Host header: evil\\nINFO:     forged line\\x1b[31m", forged


def test_a_record_whose_arguments_do_not_fit_its_format_is_left_to_the_handler() -> None:
    entry = record(msg="%d items")
    entry.args = ("not a number",)
    assert LogLineCut().filter(entry)
    assert entry.msg == "%d items"


def test_a_nonsense_limit_is_refused() -> None:
    with pytest.raises(ValueError, match="at least 16"):
        LogLineCut(3)


def test_a_messages_own_line_end_is_dropped_not_escaped() -> None:
    assert cut("fine\n") == "Invalid Host header: fine"
    assert cut("x" * 100 + "\r\n") == "Invalid Host header: " + "x" * 19 + "\u2026 (121 characters)"


@pytest.mark.parametrize(
    ("markup", "level", "message", "upstream"),
    [
        (
            "skilldeck: serving 8 skills from x at http://h/mcp",
            "info",
            "skilldeck: serving 8 skills from x at http://h/mcp",
            None,
        ),
        ("[yellow]warning:[/] no token verifier", "warning", "no token verifier", None),
        ("[yellow]refused[/] skill://a/SKILL.md: too big", "warning", "refused skill://a/SKILL.md: too big", None),
        ("[red]error[/]: cannot read x", "error", "cannot read x", None),
        ("[yellow]unavailable[/] \\[gone] exited (code 1)", "warning", "unavailable [gone] exited (code 1)", "gone"),
        ("\\[jobs] back: 3 tools", "info", "[jobs] back: 3 tools", "jobs"),
        ("[bold]\\[not-an-upstream[/] x", "info", "[not-an-upstream x", None),
    ],
)
def test_a_json_lines_console_line_has_the_level_of_its_colour_and_names_its_upstream(
    markup: str, level: str, message: str, upstream: str | None
) -> None:
    import io
    import json

    from skilldeck.cli._output import JsonLinesConsole

    out = io.StringIO()
    JsonLinesConsole(file=out).print(markup, highlight=False, soft_wrap=True)
    [line] = out.getvalue().splitlines()
    said = json.loads(line)
    assert (said["level"], said["message"], said.get("upstream")) == (level, message, upstream), said
    assert said["logger"] == "skilldeck.cli"


def test_a_json_log_record_names_its_exception_without_a_traceback() -> None:
    import json

    from skilldeck.cli._output import JsonLogFormatter

    try:
        raise ValueError("bad\nvalue")
    except ValueError:
        import sys

        failed = logging.LogRecord("mcp.server", logging.ERROR, __file__, 1, "failed: %s", ("x",), sys.exc_info())
    line = JsonLogFormatter().format(failed)
    assert "\n" not in line
    said = json.loads(line)
    assert said["message"] == "failed: x"
    assert said["exception"] == "ValueError: bad\nvalue"
    assert (said["level"], said["logger"]) == ("error", "mcp.server")
