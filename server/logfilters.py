"""Filters of the HTTP server's log: a message repeated by a flood said once a minute, and no
token in the access log's lines."""

from __future__ import annotations

import logging
import re
import time

__all__ = ["NoTokenInLinks", "OncePerMinute"]


class OncePerMinute(logging.Filter):
    """Lets a repeated log message through once a minute, with how often it came."""

    def __init__(self) -> None:
        super().__init__()
        self._last: dict[str, tuple[float, int]] = {}

    def filter(self, record: logging.LogRecord) -> bool:
        key = str(record.msg)
        said, count = self._last.get(key, (0.0, 0))
        now = time.monotonic()
        if now - said < 60:
            self._last[key] = (said, count + 1)
            return False
        if count:
            record.msg = f"{record.msg} (and {count} more like it in the last minute)"
        self._last[key] = (now, 0)
        return True


class NoTokenInLinks(logging.Filter):
    """Blanks the `token` query of the explorer's link in the access log (uvicorn logs each request's
    path with its query at INFO): a secret is never a log line's."""

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        if isinstance(args, tuple) and any(isinstance(arg, str) and "token=" in arg for arg in args):
            record.args = tuple(_TOKEN_QUERY.sub(r"\1token=(hidden)", arg) if isinstance(arg, str) else arg
                                for arg in args)
        return True


_TOKEN_QUERY = re.compile(r"([?&])token=[^&\s]*")
